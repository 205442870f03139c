package memapi

import (
	"time"

	"github.com/mnemohq/mnemo/projection"
)

// ProjectionRequest is the body of POST /v1/projections. Source is a full
// address or a path relative to the caller's agent namespace; Target an
// agent principal ("agent://bob" or "bob"). Live defaults to true.
type ProjectionRequest struct {
	Source string            `json:"source"`
	Target string            `json:"target"`
	Filter projection.Filter `json:"filter"`
	Level  projection.Level  `json:"level"`
	Live   *bool             `json:"live,omitempty"`
}

// ProjectionInfo is a projection as callers see it: the spec, the view
// namespace, and how many memories the view shows on this node.
type ProjectionInfo struct {
	projection.Spec
	View      string     `json:"view"`
	Memories  int        `json:"memories"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}
