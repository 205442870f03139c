package main

import (
	"context"
	"fmt"

	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
)

// The stdio MCP server's link offers mem_share and mem_promote whenever the
// backend it currently uses does (both the in-process Service and the
// HTTP client do).
var _ mcptools.Sharer = (*link)(nil)

func (l *link) Share(ctx context.Context, req memapi.ShareRequest) (memapi.ShareResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.ShareResult, error) {
		sh, ok := b.(mcptools.Sharer)
		if !ok {
			return memapi.ShareResult{}, fmt.Errorf("%w: this node does not offer sharing", memapi.ErrInvalid)
		}
		return sh.Share(ctx, req)
	})
}

func (l *link) Promote(ctx context.Context, req memapi.PromoteRequest) (memapi.ShareResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.ShareResult, error) {
		sh, ok := b.(mcptools.Sharer)
		if !ok {
			return memapi.ShareResult{}, fmt.Errorf("%w: this node does not offer sharing", memapi.ErrInvalid)
		}
		return sh.Promote(ctx, req)
	})
}
