package surgery

import (
	"context"
	"fmt"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/effective"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Surgery is the surgery feature: governed edits, their audit log, and the
// copies they follow. Attach it to a Service (memory.Config.Features), then
// find it with Of. Its indexes are derived from the store. Safe for
// concurrent use.
type Surgery struct {
	core *memory.Core
	surg surgeryState
	cps  copyState
}

// New returns the surgery feature with the namespaces' approval rules
// (nil: no op needs approval).
func New(a Approvals) (*Surgery, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	s := &Surgery{}
	s.surg.init(a)
	return s, nil
}

// Of returns the surgery feature attached to svc, or nil.
func Of(svc *memory.Service) *Surgery { return memory.FeatureOf[*Surgery](svc) }

// Attach plugs the feature into the core (memory.Feature): it owns the
// edit and decision records, refuses peers' deltas that would change
// them, takes part in every read's effective view, re-views memories when
// edits or the policy change, follows approved edits onto copies, and
// takes over hard deletes.
func (s *Surgery) Attach(c *memory.Core) {
	s.core = c
	c.Register(s)
}

// Owns reports whether rec is an edit or decision record (memory.Kind).
func (s *Surgery) Owns(rec *crdt.Record) bool { return schema.IsEdit(rec) || schema.IsDecision(rec) }

// Admit takes an edit or decision record written here or arrived.
func (s *Surgery) Admit(ns, id string, rec *crdt.Record) {
	if schema.IsEdit(rec) {
		s.admitEdit(ns, id, rec)
		return
	}
	s.admitDecision(ns, id, rec)
}

// CheckRemote refuses a peer's delta that would retract or change an audit
// record, or holds one that does not verify (memory.RemoteChecker).
func (s *Surgery) CheckRemote(ns string, delta *crdt.Map) error {
	return s.checkRemoteSurgery(ns, delta)
}

// View applies the memory's approved edits (memory.Viewer) and flags it
// when a memory it derives from was retracted.
func (s *Surgery) View(ns, id string, m memapi.Memory, fl *memory.ViewFlags) memapi.Memory {
	m, f := effective.View(m, s.editsOf(ns, id))
	fl.Merge(f)
	m.NeedsResummary = s.retractedSources(m)
	return m
}

// Affects names the memory an edit or decision re-views (memory.Affecter).
func (s *Surgery) Affects(c store.Change) (ns, id string, ok bool) {
	t, ok := s.editTarget(c)
	return t.Namespace, t.ID, ok
}

// Changed re-views governed targets if the policy moved (an acl record in
// the change may have granted or revoked admin).
func (s *Surgery) Changed([]store.Change) { s.revisitEdits() }

// PolicyChanged does the same when membership changed the policy.
func (s *Surgery) PolicyChanged() { s.revisitEdits() }

// Loaded: the memories about to be indexed at Open are viewed under this
// policy.
func (s *Surgery) Loaded() {
	p := s.core.Service().Policy()
	s.surg.mu.Lock()
	s.surg.policy = p
	s.surg.mu.Unlock()
}

// Opened re-views what the policy decides and follows every copy, which
// repairs a crash between an edit and its following.
func (s *Surgery) Opened() {
	s.revisitEdits()
	s.followAll()
}

// ObserveMemory remembers a memory that names its source (a copy).
func (s *Surgery) ObserveMemory(ns, id string, rec *crdt.Record) { s.indexCopy(ns, id, rec) }

// Forget drops a retracted copy from the copy index.
func (s *Surgery) Forget(ns, id string) { s.forgetCopy(ns, id) }

// AfterSent follows the approved edits in the changes onto copies, after
// the changes themselves went out.
func (s *Surgery) AfterSent(changes []store.Change) { s.followCopies(changes) }

// RetractMemory makes a hard delete a retract edit, on the audit log like
// any other; where the namespace's rules make retracts need approval, a
// plain hard delete must not skip them (memory.Retracter).
func (s *Surgery) RetractMemory(ctx context.Context, c memapi.Caller, ns namespace.Address, id string) error {
	if s.surg.approvals.requires(ns, memapi.OpRetract) {
		return fmt.Errorf("%w: retracts in %s need approval; propose one (mnemo edit %s --op retract --reason …) for an admin to approve", memapi.ErrConflict, ns, id)
	}
	_, err := s.Propose(ctx, c, memapi.EditRequest{TargetID: id, Op: memapi.OpRetract, Reason: "retracted (hard delete)"})
	return err
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{memapi.ErrInvalid}, a...)...)
}

var (
	_ memory.Feature        = (*Surgery)(nil)
	_ memory.Kind           = (*Surgery)(nil)
	_ memory.RemoteChecker  = (*Surgery)(nil)
	_ memory.Viewer         = (*Surgery)(nil)
	_ memory.Affecter       = (*Surgery)(nil)
	_ memory.ChangeObserver = (*Surgery)(nil)
	_ memory.PolicyObserver = (*Surgery)(nil)
	_ memory.Loader         = (*Surgery)(nil)
	_ memory.Opener         = (*Surgery)(nil)
	_ memory.MemoryObserver = (*Surgery)(nil)
	_ memory.Forgetter      = (*Surgery)(nil)
	_ memory.SentObserver   = (*Surgery)(nil)
	_ memory.Retracter      = (*Surgery)(nil)
)
