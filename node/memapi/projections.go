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
// namespace, how many memories the view shows on this node (delivered),
// and when the newest change this node holds of the view was written
// into it, by the creator's node's clock (absent while the view holds
// nothing; a retraction carries no time and does not move it).
type ProjectionInfo struct {
	projection.Spec
	View         string     `json:"view"`
	Memories     int        `json:"memories"`
	LastDelivery *time.Time `json:"last_delivery,omitempty"`
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
}
