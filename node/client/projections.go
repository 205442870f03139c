package client

import (
	"context"
	"net/url"

	"github.com/mnemohq/mnemo/node/memory"
)

// CreateProjection creates a projection of a namespace for another agent.
func (c *Client) CreateProjection(ctx context.Context, req memory.ProjectionRequest) (memory.ProjectionInfo, error) {
	var out memory.ProjectionInfo
	err := c.call(ctx, "POST", "/v1/projections", nil, req, &out)
	return out, err
}

// Projections lists the projections the caller created or receives.
func (c *Client) Projections(ctx context.Context) ([]memory.ProjectionInfo, error) {
	var out struct {
		Projections []memory.ProjectionInfo `json:"projections"`
	}
	err := c.call(ctx, "GET", "/v1/projections", nil, nil, &out)
	return out.Projections, err
}

// DeleteProjection ends a projection (its creator only); its view empties.
func (c *Client) DeleteProjection(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/projections/"+url.PathEscape(id), nil, nil, nil)
}
