package memory

import (
	"context"
	"fmt"

	"github.com/mnemohq/mnemo/namespace"
	"strings"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memory/effective"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// registerFeatures plugs the features into the core, in the order the
// core consults them: grants first (what a change means depends on who
// may do what), then sessions, surgery (approvals count by the grants),
// copies (follow approved edits) and projections (deliver the effective
// views). Feature packages (Config.Features) come after these.
func (s *Service) registerFeatures() {
	for _, f := range []any{accessKind{s}, sessionKind{s}, surgeryKind{s}, copiesFeature{s}, projectionKind{s}} {
		s.feat.register(f)
	}
}

// accessKind: signed grants and revocations (access.go).
type accessKind struct{ s *Service }

func (k accessKind) Owns(rec *crdt.Record) bool            { return schema.IsACL(rec) }
func (k accessKind) Admit(ns, id string, rec *crdt.Record) { k.s.admitACL(ns, id, rec) }
func (k accessKind) CheckRemote(ns string, delta *crdt.Map) error {
	return k.s.checkRemoteACL(ns, delta)
}
func (k accessKind) Changed([]store.Change) { k.s.refreshPolicy() }
func (k accessKind) Loaded()                { k.s.refreshPolicy() }

// sessionKind: session records (sessions.go).
type sessionKind struct{ s *Service }

func (k sessionKind) Owns(rec *crdt.Record) bool { return schema.IsSession(rec) }

func (k sessionKind) Admit(ns, id string, rec *crdt.Record) {
	sess := schema.ToSession(ns, id, rec)
	k.s.sessMu.Lock()
	k.s.sessions[ns+"\x00"+sess.ID] = sess
	k.s.sessMu.Unlock()
}

func (k sessionKind) Forget(ns, id string) {
	k.s.sessMu.Lock()
	delete(k.s.sessions, ns+"\x00"+strings.TrimPrefix(id, schema.SessionPrefix))
	k.s.sessMu.Unlock()
}

// surgeryKind: signed edits and their approvals, and the effective view
// they make (surgery.go).
type surgeryKind struct{ s *Service }

func (k surgeryKind) Owns(rec *crdt.Record) bool { return schema.IsEdit(rec) || schema.IsDecision(rec) }

func (k surgeryKind) Admit(ns, id string, rec *crdt.Record) {
	if schema.IsEdit(rec) {
		k.s.admitEdit(ns, id, rec)
		return
	}
	k.s.admitDecision(ns, id, rec)
}

func (k surgeryKind) CheckRemote(ns string, delta *crdt.Map) error {
	return k.s.checkRemoteSurgery(ns, delta)
}

func (k surgeryKind) View(ns, id string, m Memory, fl *viewFlags) Memory {
	m, f := effective.View(m, k.s.editsOf(ns, id))
	fl.Merge(f)
	m.NeedsResummary = k.s.retractedSources(m)
	return m
}

func (k surgeryKind) Changed([]store.Change) { k.s.revisitEdits() }

// Affects: an edit or decision re-views its target.
func (k surgeryKind) Affects(c store.Change) (ns, id string, ok bool) {
	t, ok := k.s.editTarget(c)
	return t.Namespace, t.ID, ok
}

// Loaded: the memories about to be indexed are viewed under this policy.
func (k surgeryKind) Loaded() {
	p := k.s.Policy()
	k.s.surg.mu.Lock()
	k.s.surg.policy = p
	k.s.surg.mu.Unlock()
}

func (k surgeryKind) Opened() { k.s.revisitEdits() }

func (k surgeryKind) PolicyChanged() { k.s.revisitEdits() }

// RetractMemory: a hard delete is a retract edit, on the audit log like any
// other; where the namespace's rules make retracts need approval, a plain
// hard delete must not skip them.
func (k surgeryKind) RetractMemory(ctx context.Context, c Caller, ns namespace.Address, id string) error {
	if k.s.surg.approvals.requires(ns, OpRetract) {
		return fmt.Errorf("%w: retracts in %s need approval; propose one (mnemo edit %s --op retract --reason …) for an admin to approve", ErrConflict, ns, id)
	}
	_, err := k.s.ProposeEdit(ctx, c, EditRequest{TargetID: id, Op: OpRetract, Reason: "retracted (hard delete)"})
	return err
}

// copiesFeature: copies follow their source's approved edits (copies.go).
type copiesFeature struct{ s *Service }

func (k copiesFeature) ObserveMemory(ns, id string, rec *crdt.Record) { k.s.indexCopy(ns, id, rec) }
func (k copiesFeature) Forget(ns, id string)                          { k.s.forgetCopy(ns, id) }
func (k copiesFeature) AfterSent(changes []store.Change)              { k.s.followCopies(changes) }
func (k copiesFeature) Opened()                                       { k.s.followAll() } // repairs a crash between an edit and its following

// projectionKind: projection specs and their live views (projections.go).
type projectionKind struct{ s *Service }

func (k projectionKind) Owns(rec *crdt.Record) bool            { return schema.IsProjSpec(rec) }
func (k projectionKind) Admit(ns, id string, rec *crdt.Record) { k.s.admitProjection(ns, id, rec) }
func (k projectionKind) Changed(changes []store.Change)        { k.s.projectChanges(changes) }
func (k projectionKind) Opened()                               { k.s.resyncProjections() }

var (
	_ Kind           = accessKind{}
	_ RemoteChecker  = accessKind{}
	_ Forgetter      = sessionKind{}
	_ Viewer         = surgeryKind{}
	_ Affecter       = surgeryKind{}
	_ Retracter      = surgeryKind{}
	_ PolicyObserver = surgeryKind{}
	_ MemoryObserver = copiesFeature{}
	_ SentObserver   = copiesFeature{}
	_ ChangeObserver = projectionKind{}
)
