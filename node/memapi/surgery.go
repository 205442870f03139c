package memapi

import "time"

// Edit operations.
const (
	OpRetract    = "retract"
	OpBlock      = "block"
	OpQuarantine = "quarantine"
	OpAmend      = "amend"
	OpAttenuate  = "attenuate"
)

// Edit statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
)

// EditOps lists the operations in precedence order.
var EditOps = []string{OpRetract, OpBlock, OpQuarantine, OpAmend, OpAttenuate}

// EditPatch is what an edit changes; which fields apply depends on the op.
type EditPatch struct {
	Text            *string  `json:"text,omitempty"`             // amend: the new content
	Importance      *float64 `json:"importance,omitempty"`       // amend, attenuate: absolute, 0..1
	ImportanceDelta *float64 `json:"importance_delta,omitempty"` // attenuate: added, result clamped to 0..1
	Channel         string   `json:"channel,omitempty"`          // block: the channel hidden from
}

// EditRequest proposes an edit of one memory.
type EditRequest struct {
	TargetID string    `json:"target_id"`
	Op       string    `json:"op"`
	Reason   string    `json:"reason"`
	Patch    EditPatch `json:"patch"`
}

// EditResult is the edit recorded and its status.
type EditResult struct {
	EditID string `json:"edit_id"`
	Status string `json:"status"`
}

// Edit is one audit entry.
type Edit struct {
	EditID        string     `json:"edit_id"`
	TargetID      string     `json:"target_id"`
	Namespace     string     `json:"namespace"`
	Op            string     `json:"op"`
	Reason        string     `json:"reason"`
	Proposer      string     `json:"proposer"`
	Patch         EditPatch  `json:"patch"`
	Status        string     `json:"status"`
	NeedsApproval bool       `json:"needs_approval"`
	Approver      string     `json:"approver,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DecidedAt     *time.Time `json:"decided_at,omitempty"`
	Follows       string     `json:"follows,omitempty"` // the edit this one carried onto a copy (node/memory/copies.go)
}

// AuditQuery selects audit entries. ID "" means every memory.
type AuditQuery struct {
	ID        string `json:"id,omitempty"`        // a memory id: its history
	Status    string `json:"status,omitempty"`    // pending, approved or rejected
	Namespace string `json:"namespace,omitempty"` // restrict to one namespace (and below)
}

// Resummary is a derived memory whose sources include a retracted memory.
type Resummary struct {
	ID        string   `json:"id"`
	Namespace string   `json:"namespace"`
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Retracted []string `json:"retracted_sources"`
}

// AuditResult lists edits, oldest first, and the derived memories that
// need re-summarising.
type AuditResult struct {
	Edits          []Edit      `json:"edits"`
	NeedsResummary []Resummary `json:"needs_resummary,omitempty"`
}

// Approvals says which edit operations need an admin's approval, per
