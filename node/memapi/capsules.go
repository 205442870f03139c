package memapi

import "time"

// Capsule statuses.
const (
	CapsuleActive  = "active"
	CapsuleExpired = "expired"
	CapsuleRevoked = "revoked"
)

// CapsuleRequest creates a capsule. Items are chosen by IDs or by Query
// (full-text when Query.Query is set, otherwise the newest memories
// matching its filter; at most Query.Limit, default 10, max 100), not
// both.
type CapsuleRequest struct {
	SubjectType string       `json:"subject_type"`
	SubjectID   string       `json:"subject_id"`
	Project     string       `json:"project,omitempty"`
	Scope       string       `json:"scope,omitempty"`
	Audience    []string     `json:"audience"` // agent principals, e.g. agent://bob
	IDs         []string     `json:"ids,omitempty"`
	Query       *SearchQuery `json:"query,omitempty"`
	TTLDays     int          `json:"ttl_days,omitempty"` // default 7, max 90
	Risks       []string     `json:"risks,omitempty"`
}

// CapsuleCreated answers a create.
type CapsuleCreated struct {
	CapsuleID string    `json:"capsule_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Audience  []string  `json:"audience"`
	ItemCount int       `json:"item_count"`
}

// Capsule is one capsule as a caller sees it. Namespace is the inbox the
// caller reads it from (an audience member's; the first audience member's
// for the creator). Items are filled by CapsuleGet and the context bundle,
// and only while the capsule is active.
type Capsule struct {
	ID          string    `json:"capsule_id"`
	Namespace   string    `json:"namespace"`
	SubjectType string    `json:"subject_type"`
	SubjectID   string    `json:"subject_id"`
	Project     string    `json:"project,omitempty"`
	Scope       string    `json:"scope,omitempty"`
	Author      string    `json:"author"`
	Audience    []string  `json:"audience"`
	Risks       []string  `json:"risks"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	Status      string    `json:"status"` // active, expired, revoked
	ItemCount   int       `json:"item_count"`
	Items       []Memory  `json:"items,omitempty"`
}

// CapsuleQuery lists the capsules available to the caller: as audience
// (active only) and as creator (any status not yet collected).
type CapsuleQuery struct {
	SubjectType string `json:"subject_type,omitempty"`
	SubjectID   string `json:"subject_id,omitempty"`
}

// CapsuleList is the answer to a list.
type CapsuleList struct {
	Capsules []Capsule `json:"capsules"`
}

// BundleRequest asks for a context bundle.
type BundleRequest struct {
	SessionID   string `json:"session_id,omitempty"`
	Channel     string `json:"channel,omitempty"`
	SubjectType string `json:"subject_type,omitempty"`
	SubjectID   string `json:"subject_id,omitempty"`
	Project     string `json:"project,omitempty"`
	Namespace   string `json:"namespace,omitempty"`  // "" = everything the caller may read
	MaxTokens   int    `json:"max_tokens,omitempty"` // default 2000, max 100000
	// IncludeCapsules defaults to true.
	IncludeCapsules *bool `json:"include_capsules,omitempty"`
}

// BundleBudget is how the tokens were spent.
type BundleBudget struct {
	Decisions  int `json:"decisions"`
	Capsules   int `json:"capsules"`
	Recent     int `json:"recent"`
	FromOthers int `json:"from_others"`
	Total      int `json:"total"`
	MaxTokens  int `json:"max_tokens"`
}

// BundleResult is the bundle text and what went into it.
type BundleResult struct {
	Text      string    `json:"text"`
	Decisions []Memory  `json:"decisions"`
	Capsules  []Capsule `json:"capsules"`
	Recent    []Memory  `json:"recent"`
	// FromOthers is what other agents wrote into the caller's inbox.
	FromOthers []Memory     `json:"from_others"`
	Budget     BundleBudget `json:"budget"`
	Truncated  bool         `json:"truncated"` // some eligible content did not fit
}
