package projview

import (
	"errors"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/projection"
)

const fillBatch = 200 // view records written per transaction when filling or resyncing

// viewRecordID is the id of the view record of source memory id in ns.
func viewRecordID(spec projection.Spec, ns, id string) string {
	return memory.DerivedID(spec.CreatedAt, "projection", spec.ID, ns, id)
}

// maintained lists the projections this node keeps up to date: live, not
// deleted, created by a local principal.
func (pv *Projections) maintained() []*entry {
	pv.mu.RLock()
	defer pv.mu.RUnlock()
	if len(pv.byView) == 0 {
		return nil
	}
	var out []*entry
	for _, e := range pv.byView {
		if e.spec.Live && e.deleted == nil && pv.core.IsLocal(e.spec.Creator) {
			out = append(out, e)
		}
	}
	return out
}

// srcKey names one source memory.
type srcKey struct{ ns, id string }

// projectChanges updates the live views the changes touch (after the
// changes are durable and indexed).
func (pv *Projections) projectChanges(changes []store.Change) {
	es := pv.maintained()
	if len(es) == 0 {
		return
	}
	work := map[*entry][]srcKey{}
	for _, mk := range pv.core.Touched(changes) {
		k := srcKey{mk.Namespace, mk.ID}
		ns, err := namespace.Parse(k.ns)
		if err != nil {
			continue
		}
		if _, _, inbox := memory.InboxParties(ns); inbox {
			continue
		}
		for _, e := range es {
			if e.spec.Source.Contains(ns) && !slices.Contains(work[e], k) {
				work[e] = append(work[e], k)
			}
		}
	}
	for e, keys := range work {
		if err := pv.syncViews(e, keys); err != nil {
			pv.core.Logger().Warn("projection view not updated", "projection", e.spec.ID, "view", e.view, "err", err)
		}
	}
}

// syncViews reconciles the view records of keys, fillBatch per
// transaction.
func (pv *Projections) syncViews(e *entry, keys []srcKey) error {
	for len(keys) > 0 {
		n := min(len(keys), fillBatch)
		batch := keys[:n]
		keys = keys[n:]
		err := pv.core.Write(func(tx *store.Tx) error {
			// Re-read the spec inside the transaction: a delete that
			// committed since the caller listed e must win.
			if rec, err := tx.Record(e.view.String(), schema.ProjSpecID); err != nil {
				return err
			} else if rec.Empty() || !schema.Time(rec, schema.FieldDeletedAt).IsZero() {
				return errGone
			}
			for _, k := range batch {
				if _, err := pv.syncViewTx(tx, e, k.ns, k.id); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, errGone) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var errGone = errors.New("projview: projection deleted")

// syncViewTx brings the view record of source memory id in ns to what the
// spec says now (projection.DecideView on what the view holds and the
// effective source memory), and reports what it did.
func (pv *Projections) syncViewTx(tx *store.Tx, e *entry, ns, id string) (projection.Action, error) {
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
		if m, fl := pv.core.View(ns, id, rec); !fl.Retracted {
			it := toItem(m)
			after = &it
		}
	}
	switch a := e.p.DecideView(held, after); a {
	case projection.ActionRetract:
		return a, tx.Retract(view, vid)
	case projection.ActionUpsert:
		changed, err := pv.putViewTx(tx, e, vid, ns, e.p.Project(*after), cur)
		if err != nil || !changed {
			return projection.ActionNone, err
		}
		return a, nil
	case projection.ActionRemove:
		return a, pv.core.SoftDeleteTx(tx, e.view, vid)
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
func (pv *Projections) putViewTx(tx *store.Tx, e *entry, vid, srcNS string, it projection.Item, cur *crdt.Record) (bool, error) {
	view := e.view.String()
	_, ts := pv.core.Now()
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
func toItem(m memapi.Memory) projection.Item {
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
func (pv *Projections) sourceKeys(src namespace.Address) ([]srcKey, error) {
	st := pv.store()
	var keys []srcKey
	for _, name := range st.Namespaces() {
		ns, err := namespace.Parse(name)
		if err != nil || !src.Contains(ns) {
			continue
		}
		if _, _, inbox := memory.InboxParties(ns); inbox {
			continue
		}
		err = st.Scan(name, func(_, id string, rec *crdt.Record) error {
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

// resync reconciles every maintained projection with its source (Open:
// repairs views a crash left behind their source).
func (pv *Projections) resync() {
	for _, e := range pv.maintained() {
		keys, err := pv.sourceKeys(e.spec.Source)
		if err == nil {
			err = pv.syncViews(e, keys)
		}
		if err != nil {
			pv.core.Logger().Warn("projection resync failed", "projection", e.spec.ID, "view", e.view, "err", err)
		}
	}
}
