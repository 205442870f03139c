package mcpservice

import (
	"context"
	"fmt"

	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/bundle"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

// Backend is a Service with the caller bound in. Each method calls the
// Service (or feature) method of the same meaning once, so it may be
// called concurrently and blocks as the Service does, and its errors are
// the Service's; a feature the node lacks answers memapi.ErrNotFound.
type Backend struct {
	svc  *memory.Service
	caps *capsule.Capsules // nil: the node has no capsule feature
	surg *surgery.Surgery  // nil: the node has no surgery feature
	dd   *dedup.Dedup      // nil: the node has no dedup feature
	c    memapi.Caller
}

var _ mcptools.Backend = Backend{}

// New serves the tools from svc, every call made as caller c.
func New(svc *memory.Service, c memapi.Caller) Backend {
	return Backend{svc: svc, caps: capsule.Of(svc), surg: surgery.Of(svc), dd: dedup.Of(svc), c: c}
}

// attached returns the feature f, or an error (memapi.ErrNotFound) saying
// the node does not have the feature called name.
func attached[F comparable](f F, name string) (F, error) {
	var none F
	if f == none {
		return none, fmt.Errorf("%w: this node has no %s feature", memapi.ErrNotFound, name)
	}
	return f, nil
}

func (b Backend) Save(ctx context.Context, req memapi.SaveRequest) (memapi.SaveResult, error) {
	return b.svc.Save(ctx, b.c, req)
}

func (b Backend) Get(ctx context.Context, id string, includeDeleted bool) (memapi.Memory, error) {
	return b.svc.Get(ctx, b.c, id, includeDeleted)
}

func (b Backend) Update(ctx context.Context, id string, req memapi.UpdateRequest) (memapi.Memory, error) {
	return b.svc.Update(ctx, b.c, id, req)
}

func (b Backend) Delete(ctx context.Context, id string, hard bool) error {
	return b.svc.Delete(ctx, b.c, id, hard)
}

func (b Backend) Search(ctx context.Context, q memapi.SearchQuery) (memapi.SearchResult, error) {
	return b.svc.Search(ctx, b.c, q)
}

func (b Backend) Timeline(ctx context.Context, q memapi.TimelineQuery) (memapi.Timeline, error) {
	return b.svc.Timeline(ctx, b.c, q)
}

func (b Backend) Context(ctx context.Context, q memapi.ContextQuery) (memapi.ContextResult, error) {
	return b.svc.Context(ctx, b.c, q)
}

func (b Backend) Compact(ctx context.Context, req memapi.CompactRequest) (memapi.CompactResult, error) {
	return b.svc.Compact(ctx, b.c, req)
}

func (b Backend) StartSession(ctx context.Context, req memapi.SessionStart) (memapi.Session, error) {
	return b.svc.StartSession(ctx, b.c, req)
}

func (b Backend) EndSession(ctx context.Context, req memapi.SessionEnd) (memapi.Session, error) {
	return b.svc.EndSession(ctx, b.c, req)
}

func (b Backend) SessionSummary(ctx context.Context, req memapi.SessionSummaryRequest) (memapi.SaveResult, error) {
	return b.svc.SessionSummary(ctx, b.c, req)
}

func (b Backend) SavePrompt(ctx context.Context, req memapi.PromptRequest) (memapi.SaveResult, error) {
	return b.svc.SavePrompt(ctx, b.c, req)
}

func (b Backend) Progress(ctx context.Context, req memapi.ProgressRequest) (memapi.SaveResult, error) {
	return b.svc.Progress(ctx, b.c, req)
}

func (b Backend) Stats(ctx context.Context, ns string) (memapi.Stats, error) {
	return b.svc.Stats(ctx, b.c, ns)
}

func (b Backend) Share(ctx context.Context, req memapi.ShareRequest) (memapi.ShareResult, error) {
	return b.svc.Share(ctx, b.c, req)
}

func (b Backend) Promote(ctx context.Context, req memapi.PromoteRequest) (memapi.ShareResult, error) {
	return b.svc.Promote(ctx, b.c, req)
}

func (b Backend) ProposeEdit(ctx context.Context, req memapi.EditRequest) (memapi.EditResult, error) {
	surg, err := attached(b.surg, "surgery")
	if err != nil {
		return memapi.EditResult{}, err
	}
	return surg.Propose(ctx, b.c, req)
}

func (b Backend) DecideEdit(ctx context.Context, editID string, approve bool) (memapi.Edit, error) {
	surg, err := attached(b.surg, "surgery")
	if err != nil {
		return memapi.Edit{}, err
	}
	return surg.Decide(ctx, b.c, editID, approve)
}

func (b Backend) Audit(ctx context.Context, q memapi.AuditQuery) (memapi.AuditResult, error) {
	surg, err := attached(b.surg, "surgery")
	if err != nil {
		return memapi.AuditResult{}, err
	}
	return surg.Audit(ctx, b.c, q)
}

func (b Backend) CreateCapsule(ctx context.Context, req memapi.CapsuleRequest) (memapi.CapsuleCreated, error) {
	caps, err := attached(b.caps, "capsule")
	if err != nil {
		return memapi.CapsuleCreated{}, err
	}
	return caps.Create(ctx, b.c, req)
}

func (b Backend) Capsules(ctx context.Context, q memapi.CapsuleQuery) (memapi.CapsuleList, error) {
	caps, err := attached(b.caps, "capsule")
	if err != nil {
		return memapi.CapsuleList{}, err
	}
	return caps.List(ctx, b.c, q)
}

func (b Backend) Capsule(ctx context.Context, id string) (memapi.Capsule, error) {
	caps, err := attached(b.caps, "capsule")
	if err != nil {
		return memapi.Capsule{}, err
	}
	return caps.Get(ctx, b.c, id)
}

func (b Backend) RevokeCapsule(ctx context.Context, id string) (memapi.Capsule, error) {
	caps, err := attached(b.caps, "capsule")
	if err != nil {
		return memapi.Capsule{}, err
	}
	return caps.Revoke(ctx, b.c, id)
}

func (b Backend) BuildContext(ctx context.Context, req memapi.BundleRequest) (memapi.BundleResult, error) {
	var caps bundle.Capsules
	if b.caps != nil {
		caps = b.caps
	}
	return bundle.Build(ctx, b.svc, caps, b.c, req)
}

func (b Backend) Duplicates(ctx context.Context, q memapi.DuplicateQuery) (memapi.DuplicatesResult, error) {
	dd, err := attached(b.dd, "duplicate-detection")
	if err != nil {
		return memapi.DuplicatesResult{}, err
	}
	return dd.Find(ctx, b.c, q)
}

func (b Backend) MergeDuplicates(ctx context.Context, req memapi.MergeRequest) (memapi.MergeResult, error) {
	dd, err := attached(b.dd, "duplicate-detection")
	if err != nil {
		return memapi.MergeResult{}, err
	}
	return dd.Merge(ctx, b.c, req)
}
