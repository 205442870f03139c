package mcptools

import (
	"context"

	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memapi"
)

// The HTTP client already has exactly the Backend methods, with errors
// that unwrap to the same sentinels as the Service's.
var _ Backend = (*client.Client)(nil)

// ClientBackend serves the tools from a node reached over its HTTP API
// (attach mode): every call is one API request, made as the principal the
// client's token stands for.
func ClientBackend(cl *client.Client) Backend { return cl }

// Backend is what the tools need from a node: the memory.Service methods
// with the caller already bound. ClientBackend implements it over HTTP;
// node/mcpservice implements it on a Service in this process, kept out of
// this package so the tools never link the store. Every method may be
// called concurrently from several MCP sessions and blocks until the node
// has answered or ctx is done. Errors keep their cause (memapi.ErrInvalid, memapi.ErrNotFound,
// acl.ErrDenied, …) so the tools can tell the model what to change.
type Backend interface {
	Save(ctx context.Context, req memapi.SaveRequest) (memapi.SaveResult, error)
	Get(ctx context.Context, id string, includeDeleted bool) (memapi.Memory, error)
	Update(ctx context.Context, id string, req memapi.UpdateRequest) (memapi.Memory, error)
	// Delete soft-deletes; hard retracts (final, content purged).
	Delete(ctx context.Context, id string, hard bool) error
	Search(ctx context.Context, q memapi.SearchQuery) (memapi.SearchResult, error)
	Timeline(ctx context.Context, q memapi.TimelineQuery) (memapi.Timeline, error)
	Context(ctx context.Context, q memapi.ContextQuery) (memapi.ContextResult, error)
	Compact(ctx context.Context, req memapi.CompactRequest) (memapi.CompactResult, error)
	StartSession(ctx context.Context, req memapi.SessionStart) (memapi.Session, error)
	EndSession(ctx context.Context, req memapi.SessionEnd) (memapi.Session, error)
	SessionSummary(ctx context.Context, req memapi.SessionSummaryRequest) (memapi.SaveResult, error)
	SavePrompt(ctx context.Context, req memapi.PromptRequest) (memapi.SaveResult, error)
	Progress(ctx context.Context, req memapi.ProgressRequest) (memapi.SaveResult, error)
	Stats(ctx context.Context, namespace string) (memapi.Stats, error)
}
