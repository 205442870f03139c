package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/mnemohq/mnemo/node/memapi"
)

// CreateCapsule creates a capsule for an audience of agents.
func (c *Client) CreateCapsule(ctx context.Context, req memapi.CapsuleRequest) (memapi.CapsuleCreated, error) {
	var out memapi.CapsuleCreated
	err := c.call(ctx, "POST", "/v1/capsules", nil, req, &out)
	return out, err
}

// Capsules lists the capsules available to the caller.
func (c *Client) Capsules(ctx context.Context, q memapi.CapsuleQuery) (memapi.CapsuleList, error) {
	v := url.Values{}
	if q.SubjectType != "" {
		v.Set("subject_type", q.SubjectType)
	}
	if q.SubjectID != "" {
		v.Set("subject_id", q.SubjectID)
	}
	var out memapi.CapsuleList
	err := c.call(ctx, "GET", "/v1/capsules", v, nil, &out)
	return out, err
}

// Capsule returns one capsule with its items.
func (c *Client) Capsule(ctx context.Context, id string) (memapi.Capsule, error) {
	var out memapi.Capsule
	err := c.call(ctx, "GET", "/v1/capsules/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// RevokeCapsule revokes a capsule (creator only).
func (c *Client) RevokeCapsule(ctx context.Context, id string) (memapi.Capsule, error) {
	var out memapi.Capsule
	err := c.call(ctx, "DELETE", "/v1/capsules/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// BuildContext assembles a context bundle.
func (c *Client) BuildContext(ctx context.Context, req memapi.BundleRequest) (memapi.BundleResult, error) {
	var out memapi.BundleResult
	err := c.call(ctx, "POST", "/v1/context/bundle", nil, req, &out)
	return out, err
}

// Duplicates lists near-duplicate pairs across readable namespaces.
func (c *Client) Duplicates(ctx context.Context, q memapi.DuplicateQuery) (memapi.DuplicatesResult, error) {
	v := url.Values{}
	if q.Namespace != "" {
		v.Set("namespace", q.Namespace)
	}
	if q.Threshold != 0 {
		v.Set("threshold", strconv.FormatFloat(q.Threshold, 'g', -1, 64))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out memapi.DuplicatesResult
	err := c.call(ctx, "GET", "/v1/duplicates", v, nil, &out)
	return out, err
}

// MergeDuplicates merges near-duplicates within a shared namespace.
func (c *Client) MergeDuplicates(ctx context.Context, req memapi.MergeRequest) (memapi.MergeResult, error) {
	var out memapi.MergeResult
	err := c.call(ctx, "POST", "/v1/duplicates/merge", nil, req, &out)
	return out, err
}
