package mcptools

import (
	"context"

	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memory"
)

// The HTTP client already has exactly the Backend methods, with errors
// that unwrap to the same sentinels as the Service's.
var _ Backend = (*client.Client)(nil)

// ClientBackend serves the tools from a node reached over its HTTP API
// (attach mode): every call is one API request, made as the principal the
// client's token stands for.
func ClientBackend(cl *client.Client) Backend { return cl }

// Backend is what the tools need from a node: the memory.Service methods
// with the caller already bound. Every method may be called concurrently
// from several MCP sessions and blocks until the node has answered or ctx
// is done. Errors keep their cause (memory.ErrInvalid, memory.ErrNotFound,
// acl.ErrDenied, …) so the tools can tell the model what to change.
type Backend interface {
	Save(ctx context.Context, req memory.SaveRequest) (memory.SaveResult, error)
	Get(ctx context.Context, id string, includeDeleted bool) (memory.Memory, error)
	Update(ctx context.Context, id string, req memory.UpdateRequest) (memory.Memory, error)
	// Delete soft-deletes; hard retracts (final, content purged).
	Delete(ctx context.Context, id string, hard bool) error
	Search(ctx context.Context, q memory.SearchQuery) (memory.SearchResult, error)
	Timeline(ctx context.Context, q memory.TimelineQuery) (memory.Timeline, error)
	Context(ctx context.Context, q memory.ContextQuery) (memory.ContextResult, error)
	Compact(ctx context.Context, req memory.CompactRequest) (memory.CompactResult, error)
	StartSession(ctx context.Context, req memory.SessionStart) (memory.Session, error)
	EndSession(ctx context.Context, req memory.SessionEnd) (memory.Session, error)
	SessionSummary(ctx context.Context, req memory.SessionSummaryRequest) (memory.SaveResult, error)
	SavePrompt(ctx context.Context, req memory.PromptRequest) (memory.SaveResult, error)
	Progress(ctx context.Context, req memory.ProgressRequest) (memory.SaveResult, error)
	Stats(ctx context.Context, namespace string) (memory.Stats, error)
}

// ServiceBackend serves the tools from an in-process Service, every call
// made as caller c.
func ServiceBackend(svc *memory.Service, c memory.Caller) Backend {
	return serviceBackend{svc: svc, c: c}
}

type serviceBackend struct {
	svc *memory.Service
	c   memory.Caller
}

func (b serviceBackend) Save(ctx context.Context, req memory.SaveRequest) (memory.SaveResult, error) {
	return b.svc.Save(ctx, b.c, req)
}

func (b serviceBackend) Get(ctx context.Context, id string, includeDeleted bool) (memory.Memory, error) {
	return b.svc.Get(ctx, b.c, id, includeDeleted)
}

func (b serviceBackend) Update(ctx context.Context, id string, req memory.UpdateRequest) (memory.Memory, error) {
	return b.svc.Update(ctx, b.c, id, req)
}

func (b serviceBackend) Delete(ctx context.Context, id string, hard bool) error {
	return b.svc.Delete(ctx, b.c, id, hard)
}

func (b serviceBackend) Search(ctx context.Context, q memory.SearchQuery) (memory.SearchResult, error) {
	return b.svc.Search(ctx, b.c, q)
}

func (b serviceBackend) Timeline(ctx context.Context, q memory.TimelineQuery) (memory.Timeline, error) {
	return b.svc.Timeline(ctx, b.c, q)
}

func (b serviceBackend) Context(ctx context.Context, q memory.ContextQuery) (memory.ContextResult, error) {
	return b.svc.Context(ctx, b.c, q)
}

func (b serviceBackend) Compact(ctx context.Context, req memory.CompactRequest) (memory.CompactResult, error) {
	return b.svc.Compact(ctx, b.c, req)
}

func (b serviceBackend) StartSession(ctx context.Context, req memory.SessionStart) (memory.Session, error) {
	return b.svc.StartSession(ctx, b.c, req)
}

func (b serviceBackend) EndSession(ctx context.Context, req memory.SessionEnd) (memory.Session, error) {
	return b.svc.EndSession(ctx, b.c, req)
}

func (b serviceBackend) SessionSummary(ctx context.Context, req memory.SessionSummaryRequest) (memory.SaveResult, error) {
	return b.svc.SessionSummary(ctx, b.c, req)
}

func (b serviceBackend) SavePrompt(ctx context.Context, req memory.PromptRequest) (memory.SaveResult, error) {
	return b.svc.SavePrompt(ctx, b.c, req)
}

func (b serviceBackend) Progress(ctx context.Context, req memory.ProgressRequest) (memory.SaveResult, error) {
	return b.svc.Progress(ctx, b.c, req)
}

func (b serviceBackend) Stats(ctx context.Context, ns string) (memory.Stats, error) {
	return b.svc.Stats(ctx, b.c, ns)
}
