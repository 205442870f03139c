package surgery

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/effective"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// maxSealedBytes bounds a sealed edit or decision from a peer.
const maxSealedBytes = 128 << 10

const (
	sealVersion    = 1
	editDomain     = "mnemo/edit/v1\x00"
	decisionDomain = "mnemo/decision/v1\x00"
)

// Approvals says which edit operations need an admin's approval, per
// namespace: keys are a namespace address (a root covers its paths) or "*"
// for every namespace, values are ops. The most specific key decides:
// exact namespace, then its root, then "*". Default (nil): none.
type Approvals map[string][]string

// Validate checks the keys and ops.
func (a Approvals) Validate() error {
	for k, ops := range a {
		if k != "*" {
			if ns, err := namespace.Parse(k); err != nil || ns.String() != k {
				return invalid("approvals: %q is not a namespace address or \"*\"", k)
			}
		}
		for _, op := range ops {
			if !slices.Contains(memapi.EditOps, op) {
				return invalid("approvals[%q]: unknown op %q (one of %s)", k, op, strings.Join(memapi.EditOps, ", "))
			}
		}
	}
	return nil
}

func (a Approvals) requires(ns namespace.Address, op string) bool {
	for _, k := range []string{ns.String(), ns.Root().String(), "*"} {
		if ops, ok := a[k]; ok {
			return slices.Contains(ops, op)
		}
	}
	return false
}

// editEntry is an admitted edit record.
type editEntry struct {
	id   string
	ns   string
	body editBody
}

// decisionEntry is an admitted decision record.
type decisionEntry struct {
	id   string
	body decisionBody
}

// surgeryState is the Service's view of the edit and decision records in
// its store, kept in memory so a read costs O(edits of that memory).
type surgeryState struct {
	approvals Approvals

	mu        sync.RWMutex
	edits     map[string]*editEntry      // edit id → edit
	byTarget  map[string][]*editEntry    // target id → its edits
	decisions map[string][]decisionEntry // edit id → decisions, possibly before the edit
	governed  map[string]string          // target id → namespace, for targets with edits needing approval
	policy    *acl.Policy                // the policy governed targets were last viewed under
	retracts  int                        // edits with op retract (0: no derived-data lookups)
	writeMu   sync.Mutex                 // serialises decide: check, then write
}

func (st *surgeryState) init(a Approvals) {
	st.approvals = a
	st.edits = map[string]*editEntry{}
	st.byTarget = map[string][]*editEntry{}
	st.decisions = map[string][]decisionEntry{}
	st.governed = map[string]string{}
}

// admitEdit adds the edit record stored as id in ns (called from index)
// and re-views its target.
func (s *Surgery) admitEdit(ns, id string, rec *crdt.Record) {
	b, eid, err := decodeEditRecord(s.core.Seals(), ns, id, rec)
	if err != nil {
		s.core.Logger().Warn("edit record refused", "namespace", ns, "id", id, "err", err)
		return
	}
	st := &s.surg
	st.mu.Lock()
	if _, ok := st.edits[eid]; ok {
		st.mu.Unlock()
		return
	}
	e := &editEntry{id: eid, ns: ns, body: b}
	st.edits[eid] = e
	st.byTarget[b.Target] = append(st.byTarget[b.Target], e)
	if b.NeedsApproval {
		st.governed[b.Target] = ns
	}
	if b.Op == memapi.OpRetract {
		st.retracts++
	}
	st.mu.Unlock()
	s.review(ns, b.Target)
}

func decodeEditRecord(seals *crdt.SealCache, ns, id string, rec *crdt.Record) (editBody, string, error) {
	f, ok := rec.Field(schema.FieldEdit)
	if !ok {
		return editBody{}, "", invalid("edit record %s in %s has no edit", id, ns)
	}
	b, eid, err := decodeEdit(seals, f.Value)
	if err != nil {
		return b, "", err
	}
	if id != schema.EditPrefix+eid || b.Namespace != ns {
		return b, "", invalid("edit record %s in %s holds edit %s of %s", id, ns, eid, b.Namespace)
	}
	return b, eid, nil
}

func decodeDecisionRecord(seals *crdt.SealCache, ns, id string, rec *crdt.Record) (decisionBody, string, error) {
	f, ok := rec.Field(schema.FieldDecision)
	if !ok {
		return decisionBody{}, "", invalid("decision record %s in %s has no decision", id, ns)
	}
	b, did, err := decodeDecision(seals, f.Value)
	if err != nil {
		return b, "", err
	}
	if id != schema.DecisionPrefix+did || b.Namespace != ns {
		return b, "", invalid("decision record %s in %s holds decision %s of %s", id, ns, did, b.Namespace)
	}
	return b, did, nil
}

// admitDecision adds the decision record stored as id in ns.
func (s *Surgery) admitDecision(ns, id string, rec *crdt.Record) {
	b, did, err := decodeDecisionRecord(s.core.Seals(), ns, id, rec)
	if err != nil {
		s.core.Logger().Warn("decision record refused", "namespace", ns, "id", id, "err", err)
		return
	}
	st := &s.surg
	st.mu.Lock()
	if slices.ContainsFunc(st.decisions[b.Edit], func(d decisionEntry) bool { return d.id == did }) {
		st.mu.Unlock()
		return
	}
	st.decisions[b.Edit] = append(st.decisions[b.Edit], decisionEntry{id: did, body: b})
	e := st.edits[b.Edit]
	st.mu.Unlock()
	if e != nil {
		s.review(e.ns, e.body.Target)
	}
}

// review re-indexes a target after its edits or their status changed
// (nothing while Open's scan runs: the target is indexed once after it,
// with all its edits).
func (s *Surgery) review(ns, target string) { s.core.Reindex(ns, target) }

// revisitEdits re-views the targets whose edits need approval when the
// policy of their namespace changed since they were last viewed: who holds
// admin decides which decisions count. A namespace whose policy is
// unchanged (acl.Policy.Unchanged) keeps its views: a grant in one team
// does not re-view every governed memory of every other.
func (s *Surgery) revisitEdits() {
	if s.core.Loading() {
		return
	}
	p := s.core.Service().Policy()
	st := &s.surg
	st.mu.Lock()
	if st.policy == p {
		st.mu.Unlock()
		return
	}
	since := st.policy
	st.policy = p
	targets := make(map[string]string, len(st.governed))
	for t, ns := range st.governed {
		targets[t] = ns
	}
	st.mu.Unlock()
	changed := map[string]bool{}
	for t, ns := range targets {
		c, ok := changed[ns]
		if !ok {
			addr, err := namespace.Parse(ns)
			c = err != nil || !p.Unchanged(since, addr)
			changed[ns] = c
		}
		if c {
			s.review(ns, t)
		}
	}
}

// timedEdit is an audit entry with the clock that orders it within its op
// (package effective, which applies them).
type timedEdit = effective.Edit

// editsOf returns the edits of target stored in ns with their status.
func (s *Surgery) editsOf(ns, target string) []timedEdit {
	st := &s.surg
	st.mu.RLock()
	defer st.mu.RUnlock()
	es := st.byTarget[target]
	if len(es) == 0 {
		return nil
	}
	out := make([]timedEdit, 0, len(es))
	for _, e := range es {
		if e.ns == ns {
			out = append(out, s.toEdit(e))
		}
	}
	return out
}

// toEdit builds an audit entry with its status. Call with surg.mu held.
func (s *Surgery) toEdit(e *editEntry) timedEdit {
	b := &e.body
	ts := crdt.Timestamp(b.TS)
	out := timedEdit{Edit: memapi.Edit{EditID: e.id, TargetID: b.Target, Namespace: e.ns, Op: b.Op, Reason: b.Reason, Proposer: b.Proposer,
		Patch: b.patch(), NeedsApproval: b.NeedsApproval, CreatedAt: ts.Time(), Status: memapi.StatusApproved, Follows: followsOf(b.Reason)}, TS: ts}
	if !b.NeedsApproval {
		out.DecidedAt = &out.CreatedAt
		return out
	}
	out.Status = memapi.StatusPending
	var best *decisionEntry
	for i := range s.surg.decisions[e.id] {
		d := &s.surg.decisions[e.id][i]
		if d.body.Namespace != e.ns || !s.decisionCounts(d) {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(d.body.TS, best.body.TS), cmp.Compare(d.id, best.id)) < 0 {
			best = d
		}
	}
	if best != nil {
		out.Status = memapi.StatusRejected
		if best.body.Approve {
			out.Status = memapi.StatusApproved
		}
		out.Approver = best.body.Approver
		t := crdt.Timestamp(best.body.TS).Time()
		out.DecidedAt = &t
	}
	return out
}

// decisionCounts: the signer key is the approver's, who holds admin now.
func (s *Surgery) decisionCounts(d *decisionEntry) bool {
	p, err := namespace.Parse(d.body.Approver)
	if err != nil {
		return false
	}
	ns, err := namespace.Parse(d.body.Namespace)
	if err != nil {
		return false
	}
	key, ok := s.core.KeyOf(p)
	if !ok || !bytes.Equal(key, d.body.Key) {
		return false
	}
	return s.core.Check(p, ns.Root(), acl.Admin) == nil
}

// viewFlags is what the effective view decides beyond the memory's fields
// (retracted, quarantined, blocked channels).
type viewFlags = effective.Flags

// checkRemoteSurgery refuses a peer's delta that would retract or change
// an edit or decision record, or that holds one that does not decode,
// verify or belong where it is stored.
func (s *Surgery) checkRemoteSurgery(ns string, delta *crdt.Map) error {
	for _, id := range delta.RetractedIDs() {
		if strings.HasPrefix(id, schema.EditPrefix) || strings.HasPrefix(id, schema.DecisionPrefix) {
			return invalid("audit record %s in %s cannot be retracted", id, ns)
		}
	}
	var bad error
	delta.Records(func(id string, rec *crdt.Record) bool {
		var field string
		var err error
		switch {
		case strings.HasPrefix(id, schema.EditPrefix):
			field = schema.FieldEdit
			if !schema.IsEdit(rec) {
				err = invalid("entry %s in %s is not an edit record", id, ns)
			} else {
				_, _, err = decodeEditRecord(s.core.Seals(), ns, id, rec)
			}
		case strings.HasPrefix(id, schema.DecisionPrefix):
			field = schema.FieldDecision
			if !schema.IsDecision(rec) {
				err = invalid("entry %s in %s is not a decision record", id, ns)
			} else {
				_, _, err = decodeDecisionRecord(s.core.Seals(), ns, id, rec)
			}
		case schema.IsEdit(rec) || schema.IsDecision(rec):
			err = invalid("entry %s in %s is marked as an audit record without its prefix", id, ns)
		default:
			return true
		}
		if err == nil {
			var cur *crdt.Record
			if cur, err = s.core.Record(ns, id); err == nil {
				nf, _ := rec.Field(field)
				if f, ok := cur.Field(field); ok && !bytes.Equal(f.Value, nf.Value) {
					err = invalid("audit record %s in %s cannot be changed", id, ns)
				}
			}
		}
		bad = err
		return err == nil
	})
	return bad
}

// Propose records an edit of a memory the caller may write. It is
// approved at once unless Config.Approvals says the op needs approval in
// the memory's namespace; then it is pending and has no effect until an
// admin approves it. An approved retract also retracts the memory (final).
// Errors: memapi.ErrInvalid (bad op, reason or patch), memapi.ErrNotFound (no such
// memory the caller can read), acl.ErrDenied (no write, or a principal
// this node cannot sign for).
func (s *Surgery) Propose(ctx context.Context, c memapi.Caller, req memapi.EditRequest) (memapi.EditResult, error) {
	if strings.TrimSpace(req.TargetID) == "" {
		return memapi.EditResult{}, invalid("target_id is required")
	}
	if err := checkEdit(req.Op, req.Reason, req.Patch); err != nil {
		return memapi.EditResult{}, err
	}
	if c.Principal.IsZero() {
		return memapi.EditResult{}, invalid("no caller principal")
	}
	ns, _, err := s.core.Locate(c, req.TargetID, true)
	if err != nil {
		return memapi.EditResult{}, err
	}
	if err := s.core.Check(c.Principal, ns, acl.Write); err != nil {
		return memapi.EditResult{}, err
	}
	if err := s.signer(c); err != nil {
		return memapi.EditResult{}, err
	}
	_, ts := s.core.Now()
	b := editBody{Version: sealVersion, Namespace: ns.String(), Target: req.TargetID, Op: req.Op, Reason: req.Reason,
		Proposer: c.Principal.String(), Key: s.core.Service().Identity().Public, Text: req.Patch.Text, Importance: req.Patch.Importance,
		Delta: req.Patch.ImportanceDelta, Channel: req.Patch.Channel, TS: uint64(ts),
		NeedsApproval: s.surg.approvals.requires(ns, req.Op)}
	enc, eid, err := seal(s.core.Service().Identity(), editDomain, &b, func(sig []byte) any { return &sealedEdit{Body: b, Sig: sig} })
	if err != nil {
		return memapi.EditResult{}, err
	}
	err = s.core.Write(func(tx *store.Tx) error {
		if err := putSealed(tx, ns.String(), schema.EditPrefix+eid, schema.KindEdit, schema.FieldEdit, enc, ts); err != nil {
			return err
		}
		if req.Op == memapi.OpRetract && !b.NeedsApproval {
			return tx.Retract(ns.String(), req.TargetID)
		}
		return nil
	})
	if err != nil {
		return memapi.EditResult{}, err
	}
	st := memapi.StatusApproved
	if b.NeedsApproval {
		st = memapi.StatusPending
	}
	return memapi.EditResult{EditID: eid, Status: st}, nil
}

func putSealed(tx *store.Tx, ns, id, kind, field string, enc []byte, ts crdt.Timestamp) error {
	e, err := tx.Edit(ns, id)
	if err != nil {
		return err
	}
	if err := e.Set(ts, schema.FieldKind, []byte(kind)); err != nil {
		return err
	}
	if err := e.Set(ts, field, enc); err != nil {
		return err
	}
	tx.Commit(ns, id, e)
	return nil
}

// Decide approves or rejects a pending edit. The caller needs admin on
// the edit's namespace (acl.ErrDenied otherwise) and must be a principal of
// this node. An edit already decided, or one that needed no approval, is
// memapi.ErrConflict; an unknown one (or one the caller cannot read) memapi.ErrNotFound.
func (s *Surgery) Decide(ctx context.Context, c memapi.Caller, editID string, approve bool) (memapi.Edit, error) {
	editID = strings.TrimPrefix(strings.TrimSpace(editID), schema.EditPrefix)
	if editID == "" {
		return memapi.Edit{}, invalid("edit id is required")
	}
	if c.Principal.IsZero() {
		return memapi.Edit{}, invalid("no caller principal")
	}
	s.surg.writeMu.Lock()
	defer s.surg.writeMu.Unlock()
	cur, ok := s.auditEntry(editID)
	if !ok {
		return memapi.Edit{}, fmt.Errorf("%w: edit %q", memapi.ErrNotFound, editID)
	}
	ns, err := namespace.Parse(cur.Namespace)
	if err != nil {
		return memapi.Edit{}, err
	}
	if s.core.Check(c.Principal, ns, acl.Read) != nil {
		return memapi.Edit{}, fmt.Errorf("%w: edit %q", memapi.ErrNotFound, editID)
	}
	if err := s.core.Check(c.Principal, ns.Root(), acl.Admin); err != nil {
		return memapi.Edit{}, err
	}
	if !cur.NeedsApproval {
		return memapi.Edit{}, fmt.Errorf("%w: edit %s needed no approval (approved when made)", memapi.ErrConflict, editID)
	}
	if cur.Status != memapi.StatusPending {
		return memapi.Edit{}, fmt.Errorf("%w: edit %s is already %s by %s", memapi.ErrConflict, editID, cur.Status, cur.Approver)
	}
	if err := s.signer(c); err != nil {
		return memapi.Edit{}, err
	}
	_, ts := s.core.Now()
	b := decisionBody{Version: sealVersion, Namespace: ns.String(), Edit: editID, Approve: approve,
		Approver: c.Principal.String(), Key: s.core.Service().Identity().Public, TS: uint64(ts)}
	enc, did, err := seal(s.core.Service().Identity(), decisionDomain, &b, func(sig []byte) any { return &sealedDecision{Body: b, Sig: sig} })
	if err != nil {
		return memapi.Edit{}, err
	}
	err = s.core.Write(func(tx *store.Tx) error {
		if err := putSealed(tx, ns.String(), schema.DecisionPrefix+did, schema.KindDecision, schema.FieldDecision, enc, ts); err != nil {
			return err
		}
		if approve && cur.Op == memapi.OpRetract {
			if gone, err := tx.Retracted(ns.String(), cur.TargetID); err != nil || gone {
				return err
			}
			return tx.Retract(ns.String(), cur.TargetID)
		}
		return nil
	})
	if err != nil {
		return memapi.Edit{}, err
	}
	out, _ := s.auditEntry(editID)
	return out, nil
}

func (s *Surgery) auditEntry(editID string) (memapi.Edit, bool) {
	s.surg.mu.RLock()
	defer s.surg.mu.RUnlock()
	e, ok := s.surg.edits[editID]
	if !ok {
		return memapi.Edit{}, false
	}
	return s.toEdit(e).Edit, true
}

// Audit lists the edits the caller can read (those of one memory with
// q.ID, and the edits that followed them onto its copies), oldest first, and the derived memories that need re-summarising
// because a source was retracted (a scan of what the caller can read; an
// operator's command, not a hot path).
func (s *Surgery) Audit(ctx context.Context, c memapi.Caller, q memapi.AuditQuery) (memapi.AuditResult, error) {
	if q.Status != "" {
		if err := memapi.OneOf("status", q.Status, []string{memapi.StatusPending, memapi.StatusApproved, memapi.StatusRejected}); err != nil {
			return memapi.AuditResult{}, err
		}
	}
	sf, err := s.core.ReadScope(c, q.Namespace)
	if err != nil {
		return memapi.AuditResult{}, err
	}
	readable := func(ns string) bool {
		for _, n := range sf.Namespaces {
			if n == ns || strings.HasPrefix(ns, strings.TrimSuffix(n, "/")+"/") {
				return true
			}
		}
		return false
	}
	res := memapi.AuditResult{Edits: []memapi.Edit{}}
	var eds []timedEdit
	s.surg.mu.RLock()
	var entries []*editEntry
	if q.ID != "" {
		entries = s.withFollowers(s.surg.byTarget[q.ID]) // copies.go
	} else {
		for _, e := range s.surg.edits {
			entries = append(entries, e)
		}
	}
	for _, e := range entries {
		if !readable(e.ns) {
			continue
		}
		if ed := s.toEdit(e); q.Status == "" || ed.Status == q.Status {
			eds = append(eds, ed)
		}
	}
	retracts := s.surg.retracts
	s.surg.mu.RUnlock()
	slices.SortFunc(eds, func(a, b timedEdit) int { return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.EditID, b.EditID)) })
	for _, ed := range eds {
		res.Edits = append(res.Edits, ed.Edit)
	}
	if retracts == 0 || q.Status == memapi.StatusPending || q.Status == memapi.StatusRejected {
		return res, nil
	}
	sf.IncludeDeleted, sf.IncludeHidden = true, true
	for _, m := range s.core.List(sf, false, 0) {
		if len(m.NeedsResummary) == 0 || q.ID != "" && m.ID != q.ID && !slices.Contains(m.NeedsResummary, q.ID) {
			continue
		}
		res.NeedsResummary = append(res.NeedsResummary, memapi.Resummary{ID: m.ID, Namespace: m.Namespace, Type: m.Type, Title: m.Title, Retracted: m.NeedsResummary})
	}
	return res, nil
}

// editTarget maps a change of an edit or decision record to the memory
// whose effective view it changes.
func (s *Surgery) editTarget(c store.Change) (memory.MemoryKey, bool) {
	switch {
	case schema.IsEdit(c.Record):
		b, _, err := decodeEditRecord(s.core.Seals(), c.Namespace, c.ID, c.Record)
		if err != nil {
			return memory.MemoryKey{}, false
		}
		return memory.MemoryKey{Namespace: c.Namespace, ID: b.Target}, true
	case schema.IsDecision(c.Record):
		b, _, err := decodeDecisionRecord(s.core.Seals(), c.Namespace, c.ID, c.Record)
		if err != nil {
			return memory.MemoryKey{}, false
		}
		s.surg.mu.RLock()
		e := s.surg.edits[b.Edit]
		s.surg.mu.RUnlock()
		if e == nil {
			return memory.MemoryKey{}, false
		}
		return memory.MemoryKey{Namespace: e.ns, ID: e.body.Target}, true
	}
	return memory.MemoryKey{}, false
}

// signer checks this node may sign for the caller: only its own principals.
func (s *Surgery) signer(c memapi.Caller) error {
	if !s.core.IsLocal(c.Principal) {
		return fmt.Errorf("%w: %s is not a principal of this node, so this node cannot sign for it", acl.ErrDenied, c.Principal)
	}
	return nil
}
