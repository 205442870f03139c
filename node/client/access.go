package client

import (
	"context"
	"net/url"

	"github.com/mnemohq/mnemo/node/memapi"
)

// SessionHeader is the header a session key travels in (httpapi.SessionHeader).
const SessionHeader = "X-Mnemo-Session"

// WithSession returns a copy of c that sends key as X-Mnemo-Session on
// every request: with the owner token, the node's principal rules map it
// to the principal the requests act for. A principal-bound token ignores it.
func (c *Client) WithSession(key string) *Client {
	cp := *c
	cp.session = key
	return &cp
}

// Namespaces lists the namespaces the caller holds any permission on.
func (c *Client) Namespaces(ctx context.Context) ([]memapi.NamespaceInfo, error) {
	var out struct {
		Namespaces []memapi.NamespaceInfo `json:"namespaces"`
	}
	err := c.call(ctx, "GET", "/v1/namespaces", nil, nil, &out)
	return out.Namespaces, err
}

// CreateNamespace creates a team or project namespace, the caller its admin.
func (c *Client) CreateNamespace(ctx context.Context, ns string) (memapi.NamespaceInfo, error) {
	var out memapi.NamespaceInfo
	err := c.call(ctx, "POST", "/v1/namespaces", nil, map[string]string{"namespace": ns}, &out)
	return out, err
}

// Grant grants permissions on a namespace.
func (c *Client) Grant(ctx context.Context, req memapi.GrantRequest) (memapi.GrantResult, error) {
	var out memapi.GrantResult
	err := c.call(ctx, "POST", "/v1/grants", nil, req, &out)
	return out, err
}

// Revoke revokes permissions on a namespace.
func (c *Client) Revoke(ctx context.Context, req memapi.GrantRequest) (memapi.GrantResult, error) {
	var out memapi.GrantResult
	err := c.call(ctx, "DELETE", "/v1/grants", nil, req, &out)
	return out, err
}

// ACL lists the effective permissions on a namespace and who signed them.
func (c *Client) ACL(ctx context.Context, ns string) (memapi.ACLView, error) {
	var out memapi.ACLView
	err := c.call(ctx, "GET", "/v1/grants", url.Values{"namespace": {ns}}, nil, &out)
	return out, err
}

// Share copies a memory into another namespace.
func (c *Client) Share(ctx context.Context, req memapi.ShareRequest) (memapi.ShareResult, error) {
	var out memapi.ShareResult
	err := c.call(ctx, "POST", "/v1/share", nil, req, &out)
	return out, err
}

// Promote copies or moves a memory into a team or project namespace.
func (c *Client) Promote(ctx context.Context, req memapi.PromoteRequest) (memapi.ShareResult, error) {
	var out memapi.ShareResult
	err := c.call(ctx, "POST", "/v1/promote", nil, req, &out)
	return out, err
}

// Retract removes a memory for good.
func (c *Client) Retract(ctx context.Context, id string) error {
	return c.call(ctx, "POST", "/v1/retract", nil, map[string]string{"id": id}, nil)
}

// IssueToken asks the node (owner token only) for a token bound to principal.
func (c *Client) IssueToken(ctx context.Context, principal string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	err := c.call(ctx, "POST", "/v1/tokens", nil, map[string]string{"principal": principal}, &out)
	return out.Token, err
}
