package projview

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/projection"
)

// Projections is the projection-view feature: attach it to a Service
// (memory.Config.Features), then find it with Of. Its list of specs is
// derived from the store, as the search index is, and kept in memory so
// the change hook costs nothing when there are none. Safe for concurrent
// use.
type Projections struct {
	core *memory.Core

	mu     sync.RWMutex
	byView map[string]*entry // view namespace → entry
	// written: view namespace → the newest write its records hold here
	// (ObserveMemory), one entry per view namespace held.
	written map[string]time.Time
}

// entry is an admitted spec record.
type entry struct {
	spec    projection.Spec
	view    namespace.Address
	p       *projection.Projector
	deleted *time.Time
}

// New returns the projection-view feature, to attach to a Service.
func New() *Projections { return &Projections{} }

// Of returns the projection-view feature attached to svc, or nil.
func Of(svc *memory.Service) *Projections { return memory.FeatureOf[*Projections](svc) }

// Attach plugs the feature into the core (memory.Feature): it owns the
// projection spec records, keeps the live views it maintains up to date
// after every change, and reconciles them with their sources at Open.
func (pv *Projections) Attach(c *memory.Core) {
	pv.core = c
	c.Register(pv)
}

var (
	_ memory.Feature        = (*Projections)(nil)
	_ memory.Kind           = (*Projections)(nil)
	_ memory.ChangeObserver = (*Projections)(nil)
	_ memory.Opener         = (*Projections)(nil)
	_ memory.MemoryObserver = (*Projections)(nil)
)

// Owns reports whether rec is a projection spec (memory.Kind).
func (pv *Projections) Owns(rec *crdt.Record) bool { return schema.IsProjSpec(rec) }

// Admit records the spec stored as id in ns (memory.Kind); a spec that
// does not decode, or is stored where it does not belong, is logged and
// ignored.
func (pv *Projections) Admit(ns, id string, rec *crdt.Record) {
	e, err := decodeSpec(ns, id, rec)
	if err != nil {
		pv.core.Logger().Warn("projection spec refused", "namespace", ns, "id", id, "err", err)
		return
	}
	pv.mu.Lock()
	if pv.byView == nil {
		pv.byView = map[string]*entry{}
	}
	pv.byView[ns] = e
	pv.mu.Unlock()
}

// Changed updates the live views the changes touch (memory.ChangeObserver).
func (pv *Projections) Changed(changes []store.Change) { pv.projectChanges(changes) }

// ObserveMemory notes the newest write a view record holds
// (memory.MemoryObserver): the core offers every memory record, at Open's
// scan and after each write or peer delta, so the time of a view's last
// delivery costs no scan to show. A record's newest field timestamp is
// when the creator's node wrote it into the view (putViewTx stamps every
// field it changes with the creator's clock), on the creator's node and
// the target's alike.
func (pv *Projections) ObserveMemory(ns, _ string, rec *crdt.Record) {
	if !strings.Contains(ns, "/"+namespace.InboxSegment+"/") || !strings.Contains(ns, "/"+schema.ProjNamePrefix) {
		return // not a projection view: the common case, decided without a lock
	}
	t := rec.MaxTimestamp().Time()
	pv.mu.Lock()
	if pv.written == nil {
		pv.written = map[string]time.Time{}
	}
	if t.After(pv.written[ns]) {
		pv.written[ns] = t
	}
	pv.mu.Unlock()
}

// Opened reconciles every maintained view with its source (memory.Opener):
// it repairs views a crash left behind their source.
func (pv *Projections) Opened() { pv.resync() }

func decodeSpec(ns, id string, rec *crdt.Record) (*entry, error) {
	if id != schema.ProjSpecID {
		return nil, invalid("projection spec stored as %q, want %q", id, schema.ProjSpecID)
	}
	f, ok := rec.Field(schema.FieldProjSpec)
	if !ok {
		return nil, invalid("projection spec record holds no spec")
	}
	spec, err := projection.DecodeSpec(f.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", memapi.ErrInvalid, err)
	}
	view, err := viewOf(spec)
	if err != nil {
		return nil, err
	}
	if view.String() != ns {
		return nil, invalid("projection %s belongs in %s", spec.ID, view)
	}
	p, err := projection.NewProjector(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", memapi.ErrInvalid, err)
	}
	e := &entry{spec: spec, view: view, p: p}
	if d := schema.Time(rec, schema.FieldDeletedAt); !d.IsZero() {
		e.deleted = &d
	}
	return e, nil
}

// viewOf is the inbox namespace that holds spec's view.
func viewOf(spec projection.Spec) (namespace.Address, error) {
	return memory.InboxNamespace(spec.Target, spec.Creator, schema.ProjNamePrefix+spec.ID)
}

// Create creates a projection of req.Source for req.Target and fills its
// view. The caller must be a principal of this node holding share on the
// source. Errors wrap memapi.ErrInvalid (a bad request or spec) or
// acl.ErrDenied.
func (pv *Projections) Create(ctx context.Context, c memapi.Caller, req memapi.ProjectionRequest) (memapi.ProjectionInfo, error) {
	if c.Principal.IsZero() {
		return memapi.ProjectionInfo{}, invalid("no caller principal")
	}
	if strings.TrimSpace(req.Source) == "" {
		return memapi.ProjectionInfo{}, invalid("source (the namespace to project) is required")
	}
	if strings.TrimSpace(req.Target) == "" {
		return memapi.ProjectionInfo{}, invalid("target (the agent that receives the view) is required")
	}
	src, err := pv.core.Resolve(c, req.Source)
	if err != nil {
		return memapi.ProjectionInfo{}, err
	}
	if _, _, inbox := memory.InboxParties(src); inbox {
		return memapi.ProjectionInfo{}, invalid("source %s is an inbox: what was delivered is not delivered again", src)
	}
	target, err := namespace.ParsePrincipal(req.Target)
	if err != nil {
		return memapi.ProjectionInfo{}, fmt.Errorf("%w: target: %w", memapi.ErrInvalid, err)
	}
	if target == c.Principal {
		return memapi.ProjectionInfo{}, invalid("target %s is the creator: a projection delivers to another agent", target)
	}
	if err := pv.core.Check(c.Principal, src, acl.Share); err != nil {
		return memapi.ProjectionInfo{}, err
	}
	if !pv.core.IsLocal(c.Principal) {
		return memapi.ProjectionInfo{}, fmt.Errorf("%w: %s is not a principal of this node: create the projection on its own node", acl.ErrDenied, c.Principal)
	}
	now, ts := pv.core.Now()
	rid, err := pv.core.NewID(now)
	if err != nil {
		return memapi.ProjectionInfo{}, err
	}
	spec := projection.Spec{ID: strings.ToLower(rid), Source: src, Target: target, Filter: req.Filter,
		Level: req.Level, Live: req.Live == nil || *req.Live, Creator: c.Principal, CreatedAt: now}
	enc, err := projection.EncodeSpec(spec)
	if err != nil {
		return memapi.ProjectionInfo{}, fmt.Errorf("%w: %w", memapi.ErrInvalid, err)
	}
	p, err := projection.NewProjector(spec)
	if err != nil {
		return memapi.ProjectionInfo{}, fmt.Errorf("%w: %w", memapi.ErrInvalid, err)
	}
	view, err := viewOf(spec)
	if err != nil {
		return memapi.ProjectionInfo{}, err
	}
	err = pv.core.Write(func(tx *store.Tx) error {
		ed, err := tx.Edit(view.String(), schema.ProjSpecID)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			v    []byte
		}{{schema.FieldKind, []byte(schema.KindProjSpec)}, {schema.FieldProjSpec, enc}, {schema.FieldCreatedAt, schema.EncodeTime(now)}} {
			if err := ed.Set(ts, f.name, f.v); err != nil {
				return err
			}
		}
		tx.Commit(view.String(), schema.ProjSpecID, ed)
		return nil
	})
	if err != nil {
		return memapi.ProjectionInfo{}, err
	}
	e := &entry{spec: spec, view: view, p: p}
	keys, err := pv.sourceKeys(src)
	if err == nil {
		err = pv.syncViews(e, keys)
	}
	if err != nil {
		return memapi.ProjectionInfo{}, fmt.Errorf("projview: projection %s created but its view is incomplete: %w", spec.ID, err)
	}
	return pv.info(e), nil
}

// info is e as callers see it, with the number of memories its view
// shows on this node.
func (pv *Projections) info(e *entry) memapi.ProjectionInfo {
	info := memapi.ProjectionInfo{Spec: e.spec, View: e.view.String(), DeletedAt: e.deleted}
	if e.deleted == nil {
		info.Memories = pv.core.Count(search.Filter{Namespaces: []string{info.View}, IncludeHidden: true})
		pv.mu.RLock()
		t, ok := pv.written[info.View]
		pv.mu.RUnlock()
		if ok {
			info.LastDelivery = &t
		}
	}
	return info
}

// List lists the projections the caller created or receives that this
// node knows of, not deleted, oldest first.
func (pv *Projections) List(ctx context.Context, c memapi.Caller) ([]memapi.ProjectionInfo, error) {
	if c.Principal.IsZero() {
		return nil, invalid("no caller principal")
	}
	pv.mu.RLock()
	var es []*entry
	for _, e := range pv.byView {
		if e.deleted == nil && (e.spec.Creator == c.Principal || e.spec.Target == c.Principal) {
			es = append(es, e)
		}
	}
	pv.mu.RUnlock()
	slices.SortFunc(es, func(a, b *entry) int {
		return cmp.Or(a.spec.CreatedAt.Compare(b.spec.CreatedAt), cmp.Compare(a.spec.ID, b.spec.ID))
	})
	out := make([]memapi.ProjectionInfo, 0, len(es))
	for _, e := range es {
		out = append(out, pv.info(e))
	}
	return out, nil
}

// Delete ends a projection: its spec is marked deleted and every record of
// its view is retracted, so the subscriber's view empties. Only its
// creator may delete it, on the creator's node. Errors wrap
// memapi.ErrNotFound (no such projection the caller created or receives)
// or acl.ErrDenied.
func (pv *Projections) Delete(ctx context.Context, c memapi.Caller, id string) error {
	id = strings.TrimSpace(id)
	if id == "" {
		return invalid("id is required")
	}
	var found *entry
	pv.mu.RLock()
	for _, e := range pv.byView {
		if e.spec.ID == id && e.deleted == nil && (e.spec.Creator == c.Principal || e.spec.Target == c.Principal) {
			found = e
			break
		}
	}
	pv.mu.RUnlock()
	if found == nil {
		return fmt.Errorf("%w: projection %q", memapi.ErrNotFound, id)
	}
	if found.spec.Creator != c.Principal {
		return fmt.Errorf("%w: only %s, who created projection %s, may delete it", acl.ErrDenied, found.spec.Creator, id)
	}
	if !pv.core.IsLocal(c.Principal) {
		return fmt.Errorf("%w: %s is not a principal of this node: delete the projection on its own node", acl.ErrDenied, c.Principal)
	}
	view := found.view.String()
	return pv.core.Write(func(tx *store.Tx) error {
		rec, err := tx.Record(view, schema.ProjSpecID)
		if err != nil {
			return err
		}
		if rec.Empty() || !schema.Time(rec, schema.FieldDeletedAt).IsZero() {
			return fmt.Errorf("%w: projection %q", memapi.ErrNotFound, id)
		}
		if err := pv.core.SoftDeleteTx(tx, found.view, schema.ProjSpecID); err != nil {
			return err
		}
		var ids []string
		if err := pv.store().Scan(view, func(_, rid string, _ *crdt.Record) error {
			if rid != schema.ProjSpecID {
				ids = append(ids, rid)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, rid := range ids {
			if err := tx.Retract(view, rid); err != nil {
				return err
			}
		}
		return nil
	})
}

// store is the service's store, scanned for the memories of a source or
// the records of a view (reads only: writes go through Core.Write).
func (pv *Projections) store() *store.Store { return pv.core.Service().Store() }

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{memapi.ErrInvalid}, a...)...)
}
