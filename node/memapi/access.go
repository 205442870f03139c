package memapi

import "time"

// NamespaceInfo describes one namespace for GET /v1/namespaces.
type NamespaceInfo struct {
	Namespace   string   `json:"namespace"`
	Kind        string   `json:"kind"`                  // agent, team or project
	Root        string   `json:"root,omitempty"`        // owner or creator, who holds every permission
	RootSource  string   `json:"root_source,omitempty"` // owner or creator
	Permissions []string `json:"permissions"`           // the caller's, in canonical order
}

// GrantRequest grants or revokes permissions on a root namespace.
type GrantRequest struct {
	Namespace   string   `json:"namespace"`
	Principal   string   `json:"principal"`   // agent://NAME or NAME
	Permissions []string `json:"permissions"` // read, write, share, admin; "member" = read,write; "all"
}

// ACLRecord is a signed record as callers see it.
type ACLRecord struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"` // create, grant or revoke
	Namespace   string    `json:"namespace"`
	Signer      string    `json:"signer"`
	SignerNode  string    `json:"signer_node"`
	Principal   string    `json:"principal,omitempty"`
	Permissions []string  `json:"permissions,omitempty"`
	After       []string  `json:"after,omitempty"`
	At          time.Time `json:"at"`
}

// GrantResult is the record written and what the principal now holds.
type GrantResult struct {
	Record      ACLRecord `json:"record"`
	Permissions []string  `json:"permissions"` // the principal's effective permissions afterwards
}

// ACLEntry is one effective permission and where it comes from.
type ACLEntry struct {
	Principal  string     `json:"principal"`
	Permission string     `json:"permission"`
	Source     string     `json:"source"` // owner, creator or grant
	Signer     string     `json:"signer"`
	RecordID   string     `json:"record_id,omitempty"`
	At         *time.Time `json:"at,omitempty"`
}

// ACLRejection is a record in the namespace's set that does not count.
type ACLRejection struct {
	Record ACLRecord `json:"record"`
	Reason string    `json:"reason"`
}

// ACLView is GET /v1/grants: the effective permissions on a namespace.
// Defaults that hold without a record (every cluster principal reads a
// project) are described in Defaults, not listed. Rejected is shown to
// admins only.
type ACLView struct {
	Namespace string         `json:"namespace"`
	Root      string         `json:"root,omitempty"`
	Defaults  string         `json:"defaults"`
	Entries   []ACLEntry     `json:"entries"`
	Rejected  []ACLRejection `json:"rejected,omitempty"`
}

// Promotion modes.
const (
	PromoteCopy = "copy"
	PromoteMove = "move"
)

// ShareRequest copies memory ID into Namespace.
type ShareRequest struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
}

// PromoteRequest copies or moves memory ID into a team or project namespace.
type PromoteRequest struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Mode      string `json:"mode,omitempty"` // copy (default) or move
}

// ShareResult is the copy, and whether it already existed.
type ShareResult struct {
	Memory   Memory `json:"memory"`
	Existing bool   `json:"existing"`
	// Reference is what a move left in the source namespace.
	Reference *Memory `json:"reference,omitempty"`
}
