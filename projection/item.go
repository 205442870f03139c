package projection

import "time"

// Item is what a filter sees of a memory and what a view holds. It mirrors
// the fields of the node's memory.Memory that projections use; the node
// converts in both directions (this package may not import node/...).
type Item struct {
	ID          string
	Type        string
	Title       string
	Content     string
	Summary     string
	Tags        []string
	Importance  float64 // 0..1
	Confidence  float64 // 0..1
	LinkedFiles []string
	Scope       string
	SubjectType string
	SubjectID   string
	Project     string
	SessionID   string
	Channel     string
	Author      string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeletedAt   *time.Time // non-nil: soft-deleted (archived, compacted)
	// Quarantined: held back by a governed edit (the node's memory
	// surgery) until cleared. Like a soft-deleted memory, a quarantined one
	// matches no filter, so it leaves every view.
	Quarantined bool
	TopicKey    string
	Lineage     string
	ContentHash string
}

// Deleted reports whether the item is soft-deleted.
func (it Item) Deleted() bool { return it.DeletedAt != nil }
