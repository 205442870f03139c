package main

import (
	"context"
	"fmt"

	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memory"
)

// The stdio MCP server's link offers mem_share and mem_promote whenever the
// backend it currently uses does (both the in-process Service and the
// HTTP client do).
var _ mcptools.Sharer = (*link)(nil)

func (l *link) Share(ctx context.Context, req memory.ShareRequest) (memory.ShareResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memory.ShareResult, error) {
		sh, ok := b.(mcptools.Sharer)
		if !ok {
			return memory.ShareResult{}, fmt.Errorf("%w: this node does not offer sharing", memory.ErrInvalid)
		}
		return sh.Share(ctx, req)
	})
}

func (l *link) Promote(ctx context.Context, req memory.PromoteRequest) (memory.ShareResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memory.ShareResult, error) {
		sh, ok := b.(mcptools.Sharer)
		if !ok {
			return memory.ShareResult{}, fmt.Errorf("%w: this node does not offer sharing", memory.ErrInvalid)
		}
		return sh.Promote(ctx, req)
	})
}
