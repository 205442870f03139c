package main

import (
	"context"

	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
)

// The link's methods forward each Backend call to the backend in use now,
// through retry. mcptools.Backend holds every tool's method, so the stdio
// server offers exactly the tools the node's /mcp does; a method missing
// here is a compile error, not a tool quietly absent over stdio.

func (l *link) Save(ctx context.Context, req memapi.SaveRequest) (memapi.SaveResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.SaveResult, error) { return b.Save(ctx, req) })
}

func (l *link) Get(ctx context.Context, id string, includeDeleted bool) (memapi.Memory, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Memory, error) { return b.Get(ctx, id, includeDeleted) })
}

func (l *link) Update(ctx context.Context, id string, req memapi.UpdateRequest) (memapi.Memory, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Memory, error) { return b.Update(ctx, id, req) })
}

func (l *link) Delete(ctx context.Context, id string, hard bool) error {
	_, err := retry(ctx, l, func(b mcptools.Backend) (struct{}, error) { return struct{}{}, b.Delete(ctx, id, hard) })
	return err
}

func (l *link) Search(ctx context.Context, q memapi.SearchQuery) (memapi.SearchResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.SearchResult, error) { return b.Search(ctx, q) })
}

func (l *link) Timeline(ctx context.Context, q memapi.TimelineQuery) (memapi.Timeline, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Timeline, error) { return b.Timeline(ctx, q) })
}

func (l *link) Context(ctx context.Context, q memapi.ContextQuery) (memapi.ContextResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.ContextResult, error) { return b.Context(ctx, q) })
}

func (l *link) Compact(ctx context.Context, req memapi.CompactRequest) (memapi.CompactResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.CompactResult, error) { return b.Compact(ctx, req) })
}

func (l *link) StartSession(ctx context.Context, req memapi.SessionStart) (memapi.Session, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Session, error) { return b.StartSession(ctx, req) })
}

func (l *link) EndSession(ctx context.Context, req memapi.SessionEnd) (memapi.Session, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Session, error) { return b.EndSession(ctx, req) })
}

func (l *link) SessionSummary(ctx context.Context, req memapi.SessionSummaryRequest) (memapi.SaveResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.SaveResult, error) { return b.SessionSummary(ctx, req) })
}

func (l *link) SavePrompt(ctx context.Context, req memapi.PromptRequest) (memapi.SaveResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.SaveResult, error) { return b.SavePrompt(ctx, req) })
}

func (l *link) Progress(ctx context.Context, req memapi.ProgressRequest) (memapi.SaveResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.SaveResult, error) { return b.Progress(ctx, req) })
}

func (l *link) Stats(ctx context.Context, ns string) (memapi.Stats, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Stats, error) { return b.Stats(ctx, ns) })
}

func (l *link) Share(ctx context.Context, req memapi.ShareRequest) (memapi.ShareResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.ShareResult, error) { return b.Share(ctx, req) })
}

func (l *link) Promote(ctx context.Context, req memapi.PromoteRequest) (memapi.ShareResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.ShareResult, error) { return b.Promote(ctx, req) })
}

func (l *link) ProposeEdit(ctx context.Context, req memapi.EditRequest) (memapi.EditResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.EditResult, error) { return b.ProposeEdit(ctx, req) })
}

func (l *link) DecideEdit(ctx context.Context, editID string, approve bool) (memapi.Edit, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Edit, error) { return b.DecideEdit(ctx, editID, approve) })
}

func (l *link) Audit(ctx context.Context, q memapi.AuditQuery) (memapi.AuditResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.AuditResult, error) { return b.Audit(ctx, q) })
}

func (l *link) CreateCapsule(ctx context.Context, req memapi.CapsuleRequest) (memapi.CapsuleCreated, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.CapsuleCreated, error) { return b.CreateCapsule(ctx, req) })
}

func (l *link) Capsules(ctx context.Context, q memapi.CapsuleQuery) (memapi.CapsuleList, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.CapsuleList, error) { return b.Capsules(ctx, q) })
}

func (l *link) Capsule(ctx context.Context, id string) (memapi.Capsule, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Capsule, error) { return b.Capsule(ctx, id) })
}

func (l *link) RevokeCapsule(ctx context.Context, id string) (memapi.Capsule, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.Capsule, error) { return b.RevokeCapsule(ctx, id) })
}

func (l *link) BuildContext(ctx context.Context, req memapi.BundleRequest) (memapi.BundleResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.BundleResult, error) { return b.BuildContext(ctx, req) })
}

func (l *link) Duplicates(ctx context.Context, q memapi.DuplicateQuery) (memapi.DuplicatesResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.DuplicatesResult, error) { return b.Duplicates(ctx, q) })
}

func (l *link) MergeDuplicates(ctx context.Context, req memapi.MergeRequest) (memapi.MergeResult, error) {
	return retry(ctx, l, func(b mcptools.Backend) (memapi.MergeResult, error) { return b.MergeDuplicates(ctx, req) })
}
