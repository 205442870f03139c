package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/projection"
)

// Projections: a filtered, compressed, read-only view of a source
// namespace delivered to a target agent (package projection decides what
// goes in; this file keeps the view).
//
// Where things live. A projection is created on the publisher's node (the
// one holding the source) by a local principal holding share on the
// source. Its view is the inbox namespace
// agent://TARGET/.inbox/CREATOR/proj-ID (see inbox.go: only the creator
// writes it, target and creator read it, it replicates to the target's
// node, and the target's searches of its own namespace include it). The
// spec itself is the record "spec" of that namespace (kind
// projection-spec, the projection.EncodeSpec bytes), so it travels with
// the view and the subscriber can list it; a deleted projection keeps its
// spec record with deleted_at set and its view records retracted.
//
// View records. One per source memory in the view, with an id derived from
// (projection, source namespace, source id): the query index keys memories
// by id across namespaces, so a view record cannot reuse the source's id on
// a node holding both. It holds the memory projected to the spec's level
// (projection.Project), with namespace = the view, projected_from = the
// source memory's namespace, lineage = the source id, provenance
// "source:<id>" and "projection:<spec id>", author = the creator (who
// wrote it), content_hash of the projected content, and the source's
// created_at and updated_at.
//
// Maintenance. After every change the store applies (local writes and
// remote deltas alike; see reindex), each live projection created on this
// node by a local principal, not deleted, whose source contains the
// changed memory's namespace, brings that memory's view record to what the
// spec says now, in one transaction that reads the source and the view
// together: the effective source memory (edits applied, see surgery.go)
// matches → upsert (written only when a projected field differs; a
// removed record comes back); it does not match (soft-deleted and
// quarantined memories never do) and the view shows it → remove (the view
// record is soft-deleted: it leaves the subscriber's searches); the source
// retracted it (or an approved edit did) and the view has it, even
// soft-deleted → retract, final. syncViewTx reads what the view holds and
// asks projection.DecideView, so the decision is idempotent and a crash
// between a source write and its view write is repaired at the next Open
// (every live projection is reconciled with its source then). A snapshot
// (live false) is filled at creation and never touched again until
// deleted. Inbox namespaces are never a source: what was delivered is not
// delivered again.

const projFillBatch = 200 // view records written per transaction when filling or resyncing

// projState is the Service's list of the projection specs in its store,
// kept in memory so the change hook costs nothing when there are none.
type projState struct {
	mu     sync.RWMutex
	byView map[string]*projEntry // view namespace → entry
}

type projEntry struct {
	spec    projection.Spec
	view    namespace.Address
	p       *projection.Projector
	deleted *time.Time
}

// admitProjection records the spec stored as id in ns (called from index).
func (s *Service) admitProjection(ns, id string, rec *crdt.Record) {
	e, err := decodeProjSpec(ns, id, rec)
	if err != nil {
		s.log.Warn("projection spec refused", "namespace", ns, "id", id, "err", err)
		return
	}
	s.proj.mu.Lock()
	if s.proj.byView == nil {
		s.proj.byView = map[string]*projEntry{}
	}
	s.proj.byView[ns] = e
	s.proj.mu.Unlock()
}

func decodeProjSpec(ns, id string, rec *crdt.Record) (*projEntry, error) {
	if id != schema.ProjSpecID {
		return nil, invalid("projection spec stored as %q, want %q", id, schema.ProjSpecID)
	}
	f, ok := rec.Field(schema.FieldProjSpec)
	if !ok {
		return nil, invalid("projection spec record holds no spec")
	}
	spec, err := projection.DecodeSpec(f.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	view, err := projView(spec)
	if err != nil {
		return nil, err
	}
	if view.String() != ns {
		return nil, invalid("projection %s belongs in %s", spec.ID, view)
	}
	p, err := projection.NewProjector(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	e := &projEntry{spec: spec, view: view, p: p}
	if d := schema.Time(rec, schema.FieldDeletedAt); !d.IsZero() {
		e.deleted = &d
	}
	return e, nil
}

func projView(spec projection.Spec) (namespace.Address, error) {
	return InboxNamespace(spec.Target, spec.Creator, schema.ProjNamePrefix+spec.ID)
}

// viewRecordID is the id of the view record of source memory id in ns.
func viewRecordID(spec projection.Spec, ns, id string) string {
	return derivedID(spec.CreatedAt, "projection", spec.ID, ns, id)
}

// maintained lists the projections this node keeps up to date: live, not
// deleted, created by a local principal.
func (s *Service) maintained() []*projEntry {
	s.proj.mu.RLock()
	defer s.proj.mu.RUnlock()
	if len(s.proj.byView) == 0 {
		return nil
	}
	var out []*projEntry
	for _, e := range s.proj.byView {
		if e.spec.Live && e.deleted == nil && s.isLocal(e.spec.Creator) {
			out = append(out, e)
		}
	}
	return out
}

// srcKey names one source memory.
type srcKey struct{ ns, id string }

// projectChanges updates the live views the changes touch (called from
// reindex, after the changes are durable and indexed).
func (s *Service) projectChanges(changes []store.Change) {
	es := s.maintained()
	if len(es) == 0 {
		return
	}
	work := map[*projEntry][]srcKey{}
	for _, mk := range s.touched(changes) {
		k := srcKey{mk.Namespace, mk.ID}
		ns, err := namespace.Parse(k.ns)
		if err != nil {
			continue
		}
		if _, _, inbox := InboxParties(ns); inbox {
			continue
		}
		for _, e := range es {
			if e.spec.Source.Contains(ns) && !slices.Contains(work[e], k) {
				work[e] = append(work[e], k)
			}
		}
	}
	for e, keys := range work {
		if err := s.syncViews(e, keys); err != nil {
			s.log.Warn("projection view not updated", "projection", e.spec.ID, "view", e.view, "err", err)
		}
	}
}

// syncViews reconciles the view records of keys, projFillBatch per
// transaction.
func (s *Service) syncViews(e *projEntry, keys []srcKey) error {
	for len(keys) > 0 {
		n := min(len(keys), projFillBatch)
		batch := keys[:n]
		keys = keys[n:]
		err := s.write(func(tx *store.Tx) error {
			// Re-read the spec inside the transaction: a delete that
			// committed since the caller listed e must win.
			if rec, err := tx.Record(e.view.String(), schema.ProjSpecID); err != nil {
				return err
			} else if rec.Empty() || !schema.Time(rec, schema.FieldDeletedAt).IsZero() {
				return errProjGone
			}
			for _, k := range batch {
				if _, err := s.syncViewTx(tx, e, k.ns, k.id); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, errProjGone) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var errProjGone = errors.New("projection deleted")

// syncViewTx brings the view record of source memory id in ns to what the
// spec says now (projection.DecideView on what the view holds and the
// effective source memory), and reports what it did.
func (s *Service) syncViewTx(tx *store.Tx, e *projEntry, ns, id string) (projection.Action, error) {
	view := e.view.String()
	vid := viewRecordID(e.spec, ns, id)
	held := projection.HeldRetracted
	var cur *crdt.Record
	if gone, err := tx.Retracted(view, vid); err != nil {
		return projection.ActionNone, err
	} else if !gone {
		if cur, err = tx.Record(view, vid); err != nil {
			return projection.ActionNone, err
		}
		held = heldIn(cur)
	}
	srcGone, err := tx.Retracted(ns, id)
	if err != nil {
		return projection.ActionNone, err
	}
	var after *projection.Item // nil: retracted at the source or by an approved edit
	if !srcGone {
		rec, err := tx.Record(ns, id)
		if err != nil {
			return projection.ActionNone, err
		}
		if rec.Empty() || schema.Str(rec, schema.FieldKind) != "" {
			return projection.ActionNone, nil // not (or not yet) a memory here
		}
		if m, fl := s.view(ns, id, rec); !fl.Retracted {
			it := toItem(m)
			after = &it
		}
	}
	switch a := e.p.DecideView(held, after); a {
	case projection.ActionRetract:
		return a, tx.Retract(view, vid)
	case projection.ActionUpsert:
		changed, err := s.putViewTx(tx, e, vid, ns, e.p.Project(*after), cur)
		if err != nil || !changed {
			return projection.ActionNone, err
		}
		return a, nil
	case projection.ActionRemove:
		return a, s.softDeleteTx(tx, e.view, vid)
	}
	return projection.ActionNone, nil
}

// heldIn is what a view record that is not retracted holds.
func heldIn(cur *crdt.Record) projection.Held {
	switch {
	case cur.Empty():
		return projection.HeldNothing
	case !schema.Time(cur, schema.FieldDeletedAt).IsZero():
		return projection.HeldRemoved
	}
	return projection.HeldShown
}

// putViewTx writes the projected item it as view record vid, changing only
// the fields that differ from cur; it reports whether anything changed.
func (s *Service) putViewTx(tx *store.Tx, e *projEntry, vid, srcNS string, it projection.Item, cur *crdt.Record) (bool, error) {
	view := e.view.String()
	_, ts := s.now()
	ed, err := tx.Edit(view, vid)
	if err != nil {
		return false, err
	}
	changed := false
	fields := []struct{ name, v string }{
		{schema.FieldType, it.Type}, {schema.FieldTitle, it.Title}, {schema.FieldContent, it.Content}, {schema.FieldSummary, it.Summary},
		{schema.FieldTopicKey, it.TopicKey}, {schema.FieldScope, it.Scope}, {schema.FieldSubjectType, it.SubjectType},
		{schema.FieldSubjectID, it.SubjectID}, {schema.FieldProject, it.Project}, {schema.FieldSessionID, it.SessionID},
		{schema.FieldChannel, it.Channel}, {schema.FieldAuthor, e.spec.Creator.String()}, {schema.FieldLineage, it.ID},
		{schema.FieldHash, schema.ContentHash(it.Content)}, {schema.FieldImportance, string(schema.EncodeNum(it.Importance))},
		{schema.FieldConfidence, string(schema.EncodeNum(it.Confidence))}, {schema.FieldCreatedAt, string(schema.EncodeTime(it.CreatedAt))},
		{schema.FieldUpdatedAt, string(schema.EncodeTime(it.UpdatedAt))}, {schema.FieldDeletedAt, ""}, {schema.FieldProjFrom, srcNS},
	}
	for _, f := range fields {
		old, ok := cur.Field(f.name)
		if ok && string(old.Value) == f.v || !ok && f.v == "" {
			continue
		}
		if err := ed.Set(ts, f.name, []byte(f.v)); err != nil {
			return false, err
		}
		changed = true
	}
	for _, set := range []struct {
		name string
		want []string
	}{{schema.SetTags, it.Tags}, {schema.SetLinkedFiles, it.LinkedFiles},
		{schema.SetProvenance, []string{"source:" + it.ID, "projection:" + e.spec.ID}}} {
		for _, old := range cur.Elements(set.name) {
			if !slices.Contains(set.want, old) {
				ed.Remove(set.name, old)
				changed = true
			}
		}
		for _, x := range set.want {
			if !cur.HasElement(set.name, x) {
				if err := ed.Add(set.name, x); err != nil {
					return false, err
				}
				changed = true
			}
		}
	}
	if changed {
		tx.Commit(view, vid, ed)
	}
	return changed, nil
}

// toItem is what package projection sees of a memory.
func toItem(m Memory) projection.Item {
	it := projection.Item{
		ID: m.ID, Type: m.Type, Title: m.Title, Content: m.Content, Summary: m.Summary,
		Tags: m.Tags, Importance: m.Importance, Confidence: m.Confidence,
		LinkedFiles: m.LinkedFiles, Scope: m.Scope, SubjectType: m.SubjectType,
		SubjectID: m.SubjectID, Project: m.Project, SessionID: m.SessionID, Channel: m.Channel,
		Author: m.Author, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, TopicKey: m.TopicKey,
		Lineage: m.Lineage, ContentHash: m.ContentHash, Quarantined: m.Quarantined,
	}
	if m.DeletedAt != nil {
		d := *m.DeletedAt
		it.DeletedAt = &d
	}
	return it
}

// sourceKeys lists the memories of every namespace under src this node
// holds (inboxes excluded), in store order.
func (s *Service) sourceKeys(src namespace.Address) ([]srcKey, error) {
	var keys []srcKey
	for _, name := range s.st.Namespaces() {
		ns, err := namespace.Parse(name)
		if err != nil || !src.Contains(ns) {
			continue
		}
		if _, _, inbox := InboxParties(ns); inbox {
			continue
		}
		err = s.st.Scan(name, func(_, id string, rec *crdt.Record) error {
			if schema.Str(rec, schema.FieldKind) == "" && !rec.Empty() {
				keys = append(keys, srcKey{name, id})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// resyncProjections reconciles every maintained projection with its source
// (Open: repairs views a crash left behind their source).
func (s *Service) resyncProjections() {
	for _, e := range s.maintained() {
		keys, err := s.sourceKeys(e.spec.Source)
		if err == nil {
			err = s.syncViews(e, keys)
		}
		if err != nil {
			s.log.Warn("projection resync failed", "projection", e.spec.ID, "view", e.view, "err", err)
		}
	}
}

// CreateProjection creates a projection of req.Source for req.Target and
// fills its view. The caller must be a principal of this node holding
// share on the source.
func (s *Service) CreateProjection(ctx context.Context, c Caller, req ProjectionRequest) (ProjectionInfo, error) {
	if c.Principal.IsZero() {
		return ProjectionInfo{}, invalid("no caller principal")
	}
	if strings.TrimSpace(req.Source) == "" {
		return ProjectionInfo{}, invalid("source (the namespace to project) is required")
	}
	if strings.TrimSpace(req.Target) == "" {
		return ProjectionInfo{}, invalid("target (the agent that receives the view) is required")
	}
	src, err := s.resolve(c, req.Source)
	if err != nil {
		return ProjectionInfo{}, err
	}
	if _, _, inbox := InboxParties(src); inbox {
		return ProjectionInfo{}, invalid("source %s is an inbox: what was delivered is not delivered again", src)
	}
	target, err := namespace.ParsePrincipal(req.Target)
	if err != nil {
		return ProjectionInfo{}, fmt.Errorf("%w: target: %w", ErrInvalid, err)
	}
	if target == c.Principal {
		return ProjectionInfo{}, invalid("target %s is the creator: a projection delivers to another agent", target)
	}
	if err := s.check(c.Principal, src, acl.Share); err != nil {
		return ProjectionInfo{}, err
	}
	if !s.isLocal(c.Principal) {
		return ProjectionInfo{}, fmt.Errorf("%w: %s is not a principal of this node: create the projection on its own node", acl.ErrDenied, c.Principal)
	}
	now, ts := s.now()
	rid, err := s.newID(now)
	if err != nil {
		return ProjectionInfo{}, err
	}
	spec := projection.Spec{ID: strings.ToLower(rid), Source: src, Target: target, Filter: req.Filter,
		Level: req.Level, Live: req.Live == nil || *req.Live, Creator: c.Principal, CreatedAt: now}
	enc, err := projection.EncodeSpec(spec)
	if err != nil {
		return ProjectionInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	p, err := projection.NewProjector(spec)
	if err != nil {
		return ProjectionInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	view, err := projView(spec)
	if err != nil {
		return ProjectionInfo{}, err
	}
	err = s.write(func(tx *store.Tx) error {
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
		return ProjectionInfo{}, err
	}
	e := &projEntry{spec: spec, view: view, p: p}
	keys, err := s.sourceKeys(src)
	if err == nil {
		err = s.syncViews(e, keys)
	}
	if err != nil {
		return ProjectionInfo{}, fmt.Errorf("memory: projection %s created but its view is incomplete: %w", spec.ID, err)
	}
	return s.projInfo(e), nil
}

func (s *Service) projInfo(e *projEntry) ProjectionInfo {
	info := ProjectionInfo{Spec: e.spec, View: e.view.String(), DeletedAt: e.deleted}
	if e.deleted == nil {
		info.Memories = s.ix.Count(search.Filter{Namespaces: []string{info.View}, IncludeHidden: true})
	}
	return info
}

// Projections lists the projections the caller created or receives that
// this node knows of, not deleted, oldest first.
func (s *Service) Projections(ctx context.Context, c Caller) ([]ProjectionInfo, error) {
	if c.Principal.IsZero() {
		return nil, invalid("no caller principal")
	}
	s.proj.mu.RLock()
	var es []*projEntry
	for _, e := range s.proj.byView {
		if e.deleted == nil && (e.spec.Creator == c.Principal || e.spec.Target == c.Principal) {
			es = append(es, e)
		}
	}
	s.proj.mu.RUnlock()
	slices.SortFunc(es, func(a, b *projEntry) int {
		return cmp.Or(a.spec.CreatedAt.Compare(b.spec.CreatedAt), cmp.Compare(a.spec.ID, b.spec.ID))
	})
	out := make([]ProjectionInfo, 0, len(es))
	for _, e := range es {
		out = append(out, s.projInfo(e))
	}
	return out, nil
}

// DeleteProjection ends a projection: its spec is marked deleted and every
// record of its view is retracted, so the subscriber's view empties. Only
// its creator may delete it, on the creator's node.
func (s *Service) DeleteProjection(ctx context.Context, c Caller, id string) error {
	id = strings.TrimSpace(id)
	if id == "" {
		return invalid("id is required")
	}
	var found *projEntry
	s.proj.mu.RLock()
	for _, e := range s.proj.byView {
		if e.spec.ID == id && e.deleted == nil && (e.spec.Creator == c.Principal || e.spec.Target == c.Principal) {
			found = e
			break
		}
	}
	s.proj.mu.RUnlock()
	if found == nil {
		return fmt.Errorf("%w: projection %q", ErrNotFound, id)
	}
	if found.spec.Creator != c.Principal {
		return fmt.Errorf("%w: only %s, who created projection %s, may delete it", acl.ErrDenied, found.spec.Creator, id)
	}
	if !s.isLocal(c.Principal) {
		return fmt.Errorf("%w: %s is not a principal of this node: delete the projection on its own node", acl.ErrDenied, c.Principal)
	}
	view := found.view.String()
	return s.write(func(tx *store.Tx) error {
		rec, err := tx.Record(view, schema.ProjSpecID)
		if err != nil {
			return err
		}
		if rec.Empty() || !schema.Time(rec, schema.FieldDeletedAt).IsZero() {
			return fmt.Errorf("%w: projection %q", ErrNotFound, id)
		}
		if err := s.softDeleteTx(tx, found.view, schema.ProjSpecID); err != nil {
			return err
		}
		var ids []string
		if err := s.st.Scan(view, func(_, rid string, _ *crdt.Record) error {
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
