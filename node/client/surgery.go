package client

import (
	"context"
	"net/url"

	"github.com/mnemohq/mnemo/node/memapi"
)

// ProposeEdit records an edit of a memory (POST /v1/edits).
func (c *Client) ProposeEdit(ctx context.Context, req memapi.EditRequest) (memapi.EditResult, error) {
	var out memapi.EditResult
	err := c.call(ctx, "POST", "/v1/edits", nil, req, &out)
	return out, err
}

// DecideEdit approves (or rejects) a pending edit; the caller needs admin.
func (c *Client) DecideEdit(ctx context.Context, editID string, approve bool) (memapi.Edit, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	var out memapi.Edit
	err := c.call(ctx, "POST", "/v1/edits/"+url.PathEscape(editID)+"/"+verb, nil, nil, &out)
	return out, err
}

// Audit lists edits (of one memory with q.ID) and the derived memories
// needing re-summary.
func (c *Client) Audit(ctx context.Context, q memapi.AuditQuery) (memapi.AuditResult, error) {
	v := url.Values{}
	for k, x := range map[string]string{"id": q.ID, "status": q.Status, "namespace": q.Namespace} {
		if x != "" {
			v.Set(k, x)
		}
	}
	var out memapi.AuditResult
	err := c.call(ctx, "GET", "/v1/audit", v, nil, &out)
	return out, err
}
