package mcptools

import (
	"context"

	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memapi"
)

// The HTTP client has every Backend method, with errors that unwrap to the
// same sentinels as the Service's: attach mode offers every tool.
var _ Backend = (*client.Client)(nil)

// ClientBackend serves the tools from a node reached over its HTTP API
// (attach mode): every call is one API request, made as the principal the
// client's token stands for.
func ClientBackend(cl *client.Client) Backend { return cl }

// Backend is what the tools need from a node: the memory.Service methods
// and the features' (sharing, surgery, capsules, bundles, duplicates), with
// the caller already bound. ClientBackend implements it over HTTP;
// node/mcpservice on a Service in this process, kept out of this package
// so the tools never link the store.
//
// It is one interface, not a core plus optional capabilities found by type
// assertion, so every backend offers every tool: a wrapper (`mnemo mcp`'s
// link) that forgot a method does not compile, where with optional
// interfaces it silently lost those tools. A node without a feature answers
// that feature's methods with memapi.ErrNotFound, so the tool list never
// depends on the node.
//
// Every method may be called concurrently from several MCP sessions and
// blocks until the node has answered or ctx is done. Errors keep their
// cause (memapi.ErrInvalid, memapi.ErrNotFound, acl.ErrDenied, …) so the
// tools can tell the model what to change.
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

	Sharer   // mem_share, mem_promote (sharing.go)
	Surgeon  // mem_edit, mem_approve, mem_audit (surgery.go)
	Capsuler // capsules, mem_build_context, duplicates (capsules.go)
}
