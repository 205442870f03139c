package client

import (
	"context"
	"net/url"

	"github.com/mnemohq/mnemo/node/memapi"
)

// CreateProjection creates a projection of a namespace for another agent.
func (c *Client) CreateProjection(ctx context.Context, req memapi.ProjectionRequest) (memapi.ProjectionInfo, error) {
	var out memapi.ProjectionInfo
	err := c.call(ctx, "POST", "/v1/projections", nil, req, &out)
	return out, err
}

// Projections lists the projections the caller created or receives.
func (c *Client) Projections(ctx context.Context) ([]memapi.ProjectionInfo, error) {
	var out struct {
		Projections []memapi.ProjectionInfo `json:"projections"`
	}
	err := c.call(ctx, "GET", "/v1/projections", nil, nil, &out)
	return out.Projections, err
}

// DeleteProjection ends a projection (its creator only); its view empties.
func (c *Client) DeleteProjection(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/projections/"+url.PathEscape(id), nil, nil, nil)
}
