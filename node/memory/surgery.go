package memory

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
	"github.com/mnemohq/mnemo/node/memory/effective"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Memory surgery: governed edits of a memory that hold on every replica.
//
// Storage. An edit (retract, amend, quarantine, attenuate, block) is a
// record in the SAME namespace as the memory it targets: id "edit:" +
// its id, field k = "edit", field ed = the sealed edit (a canonical
// msgpack array signed by the proposing node's identity on the
// proposer's behalf). An approval or rejection is a record "appr:" + its
// id, k = "appr", field dc = the sealed decision. Both are written once and
// never modified or retracted: memory operations cannot reach those ids
// (they are never indexed, and saves refuse the prefixes), and
// ApplyRemote refuses a delta that would retract one, change one, or
// carry one whose signature does not verify. So the audit log — the set
// of these records — is grow-only by construction and replicates with the
// namespace.
//
// Status. An edit that does not need approval (Config.Approvals) is
// approved when made. One that does is pending until a decision record
// counts: its signature verifies, its signer key is the one the approver
// principal is bound to, and the approver holds admin on the namespace
// under the current policy. Of the counting decisions the earliest by
// (clock, id) decides, so every replica holding the same records agrees.
// Targets with such edits are re-viewed whenever the policy changes. An
// edit's own authority (write on the namespace) is checked when it is
// made here and, for a peer's, by the replication gate on the delta's
// author; its signature is checked on load and on arrival.
//
// The effective view. Package effective applies the approved edits of one
// memory deterministically: by op precedence retract, block, quarantine,
// amend, attenuate, and within an op by (clock, edit id). So an attenuate
// always applies to the amended importance, and of two amends the later
// one's fields win. Service.view is the one place reads go through: index (the
// search doc gets the amended text, Hidden = quarantined, Blocked = the
// blocked channels; a retracted memory leaves the index), Get, load
// (search, timeline, context, export, compaction) and the results of
// save and update. An amend's text replaces the content, and the title
// too when the title was derived from the content (an explicit title
// stays). An amend shadows later plain updates of the same fields: a governance decision is not undone by an ordinary write; amend
// again to change it.
//
// Retract. A retract that is approved also performs the real CRDT
// retract of the target in the same transaction (final, content purged on
// every replica); the edit record stays as the audit entry. A replica
// that has the edit before the purge arrives already hides the memory.
// Copies and derived data (copies.go): an approved retract, block or
// quarantine follows the memory's copies as edits of their own; a memory
// derived from a retracted one is flagged (Memory.NeedsResummary).

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
			if !slices.Contains(EditOps, op) {
				return invalid("approvals[%q]: unknown op %q (one of %s)", k, op, strings.Join(EditOps, ", "))
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
func (s *Service) admitEdit(ns, id string, rec *crdt.Record) {
	b, eid, err := decodeEditRecord(ns, id, rec)
	if err != nil {
		s.log.Warn("edit record refused", "namespace", ns, "id", id, "err", err)
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
	if b.Op == OpRetract {
		st.retracts++
	}
	st.mu.Unlock()
	s.review(ns, b.Target)
}

func decodeEditRecord(ns, id string, rec *crdt.Record) (editBody, string, error) {
	f, ok := rec.Field(schema.FieldEdit)
	if !ok {
		return editBody{}, "", invalid("edit record %s in %s has no edit", id, ns)
	}
	b, eid, err := decodeEdit(f.Value)
	if err != nil {
		return b, "", err
	}
	if id != schema.EditPrefix+eid || b.Namespace != ns {
		return b, "", invalid("edit record %s in %s holds edit %s of %s", id, ns, eid, b.Namespace)
	}
	return b, eid, nil
}

func decodeDecisionRecord(ns, id string, rec *crdt.Record) (decisionBody, string, error) {
	f, ok := rec.Field(schema.FieldDecision)
	if !ok {
		return decisionBody{}, "", invalid("decision record %s in %s has no decision", id, ns)
	}
	b, did, err := decodeDecision(f.Value)
	if err != nil {
		return b, "", err
	}
	if id != schema.DecisionPrefix+did || b.Namespace != ns {
		return b, "", invalid("decision record %s in %s holds decision %s of %s", id, ns, did, b.Namespace)
	}
	return b, did, nil
}

// admitDecision adds the decision record stored as id in ns.
func (s *Service) admitDecision(ns, id string, rec *crdt.Record) {
	b, did, err := decodeDecisionRecord(ns, id, rec)
	if err != nil {
		s.log.Warn("decision record refused", "namespace", ns, "id", id, "err", err)
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

// review re-indexes a target after its edits or their status changed.
func (s *Service) review(ns, target string) {
	if s.loading() {
		return // indexed once the scan is over, with all its edits
	}
	rec, err := s.st.Record(ns, target)
	if err != nil {
		s.log.Warn("edit target unreadable", "namespace", ns, "id", target, "err", err)
		return
	}
	if rec.Empty() {
		return // not here (yet), or retracted: nothing indexed to change
	}
	s.index(ns, target, rec)
}

// revisitEdits re-views the targets whose edits need approval when the
// policy changed since they were last viewed: who holds admin decides
// which decisions count.
func (s *Service) revisitEdits() {
	if s.loading() {
		return
	}
	p := s.Policy()
	st := &s.surg
	st.mu.Lock()
	if st.policy == p {
		st.mu.Unlock()
		return
	}
	st.policy = p
	targets := make(map[string]string, len(st.governed))
	for t, ns := range st.governed {
		targets[t] = ns
	}
	st.mu.Unlock()
	for t, ns := range targets {
		s.review(ns, t)
	}
}

// timedEdit is an audit entry with the clock that orders it within its op
// (package effective, which applies them).
type timedEdit = effective.Edit

// editsOf returns the edits of target stored in ns with their status.
func (s *Service) editsOf(ns, target string) []timedEdit {
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
func (s *Service) toEdit(e *editEntry) timedEdit {
	b := &e.body
	ts := crdt.Timestamp(b.TS)
	out := timedEdit{Edit: Edit{EditID: e.id, TargetID: b.Target, Namespace: e.ns, Op: b.Op, Reason: b.Reason, Proposer: b.Proposer,
		Patch: b.patch(), NeedsApproval: b.NeedsApproval, CreatedAt: ts.Time(), Status: StatusApproved, Follows: followsOf(b.Reason)}, TS: ts}
	if !b.NeedsApproval {
		out.DecidedAt = &out.CreatedAt
		return out
	}
	out.Status = StatusPending
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
		out.Status = StatusRejected
		if best.body.Approve {
			out.Status = StatusApproved
		}
		out.Approver = best.body.Approver
		t := crdt.Timestamp(best.body.TS).Time()
		out.DecidedAt = &t
	}
	return out
}

// decisionCounts: the signer key is the approver's, who holds admin now.
func (s *Service) decisionCounts(d *decisionEntry) bool {
	p, err := namespace.Parse(d.body.Approver)
	if err != nil {
		return false
	}
	ns, err := namespace.Parse(d.body.Namespace)
	if err != nil {
		return false
	}
	key, ok := s.keyOf(p)
	if !ok || !bytes.Equal(key, d.body.Key) {
		return false
	}
	return s.check(p, ns.Root(), acl.Admin) == nil
}

// viewFlags is what the effective view decides beyond the memory's fields
// (retracted, quarantined, blocked channels).
type viewFlags = effective.Flags

// checkRemoteSurgery refuses a peer's delta that would retract or change
// an edit or decision record, or that holds one that does not decode,
// verify or belong where it is stored.
func (s *Service) checkRemoteSurgery(ns string, delta *crdt.Map) error {
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
				_, _, err = decodeEditRecord(ns, id, rec)
			}
		case strings.HasPrefix(id, schema.DecisionPrefix):
			field = schema.FieldDecision
			if !schema.IsDecision(rec) {
				err = invalid("entry %s in %s is not a decision record", id, ns)
			} else {
				_, _, err = decodeDecisionRecord(ns, id, rec)
			}
		case schema.IsEdit(rec) || schema.IsDecision(rec):
			err = invalid("entry %s in %s is marked as an audit record without its prefix", id, ns)
		default:
			return true
		}
		if err == nil {
			var cur *crdt.Record
			if cur, err = s.st.Record(ns, id); err == nil {
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

// ProposeEdit records an edit of a memory the caller may write. It is
// approved at once unless Config.Approvals says the op needs approval in
// the memory's namespace; then it is pending and has no effect until an
// admin approves it. An approved retract also retracts the memory (final).
// Errors: ErrInvalid (bad op, reason or patch), ErrNotFound (no such
// memory the caller can read), acl.ErrDenied (no write, or a principal
// this node cannot sign for).
func (s *Service) ProposeEdit(ctx context.Context, c Caller, req EditRequest) (EditResult, error) {
	if strings.TrimSpace(req.TargetID) == "" {
		return EditResult{}, invalid("target_id is required")
	}
	if err := checkEdit(req.Op, req.Reason, req.Patch); err != nil {
		return EditResult{}, err
	}
	if c.Principal.IsZero() {
		return EditResult{}, invalid("no caller principal")
	}
	ns, _, err := s.locate(c, req.TargetID, true)
	if err != nil {
		return EditResult{}, err
	}
	if err := s.auth.CheckWrite(c.Principal, ns); err != nil {
		return EditResult{}, err
	}
	if err := s.signer(c); err != nil {
		return EditResult{}, err
	}
	_, ts := s.now()
	b := editBody{Version: sealVersion, Namespace: ns.String(), Target: req.TargetID, Op: req.Op, Reason: req.Reason,
		Proposer: c.Principal.String(), Key: s.acl.id.Public, Text: req.Patch.Text, Importance: req.Patch.Importance,
		Delta: req.Patch.ImportanceDelta, Channel: req.Patch.Channel, TS: uint64(ts),
		NeedsApproval: s.surg.approvals.requires(ns, req.Op)}
	enc, eid, err := seal(s.acl.id, editDomain, &b, func(sig []byte) any { return &sealedEdit{Body: b, Sig: sig} })
	if err != nil {
		return EditResult{}, err
	}
	err = s.write(func(tx *store.Tx) error {
		if err := putSealed(tx, ns.String(), schema.EditPrefix+eid, schema.KindEdit, schema.FieldEdit, enc, ts); err != nil {
			return err
		}
		if req.Op == OpRetract && !b.NeedsApproval {
			return tx.Retract(ns.String(), req.TargetID)
		}
		return nil
	})
	if err != nil {
		return EditResult{}, err
	}
	st := StatusApproved
	if b.NeedsApproval {
		st = StatusPending
	}
	return EditResult{EditID: eid, Status: st}, nil
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

// DecideEdit approves or rejects a pending edit. The caller needs admin on
// the edit's namespace (acl.ErrDenied otherwise) and must be a principal of
// this node. An edit already decided, or one that needed no approval, is
// ErrConflict; an unknown one (or one the caller cannot read) ErrNotFound.
func (s *Service) DecideEdit(ctx context.Context, c Caller, editID string, approve bool) (Edit, error) {
	editID = strings.TrimPrefix(strings.TrimSpace(editID), schema.EditPrefix)
	if editID == "" {
		return Edit{}, invalid("edit id is required")
	}
	if c.Principal.IsZero() {
		return Edit{}, invalid("no caller principal")
	}
	s.surg.writeMu.Lock()
	defer s.surg.writeMu.Unlock()
	cur, ok := s.auditEntry(editID)
	if !ok {
		return Edit{}, fmt.Errorf("%w: edit %q", ErrNotFound, editID)
	}
	ns, err := namespace.Parse(cur.Namespace)
	if err != nil {
		return Edit{}, err
	}
	if s.auth.CheckRead(c.Principal, ns) != nil {
		return Edit{}, fmt.Errorf("%w: edit %q", ErrNotFound, editID)
	}
	if err := s.check(c.Principal, ns.Root(), acl.Admin); err != nil {
		return Edit{}, err
	}
	if !cur.NeedsApproval {
		return Edit{}, fmt.Errorf("%w: edit %s needed no approval (approved when made)", ErrConflict, editID)
	}
	if cur.Status != StatusPending {
		return Edit{}, fmt.Errorf("%w: edit %s is already %s by %s", ErrConflict, editID, cur.Status, cur.Approver)
	}
	if err := s.signer(c); err != nil {
		return Edit{}, err
	}
	_, ts := s.now()
	b := decisionBody{Version: sealVersion, Namespace: ns.String(), Edit: editID, Approve: approve,
		Approver: c.Principal.String(), Key: s.acl.id.Public, TS: uint64(ts)}
	enc, did, err := seal(s.acl.id, decisionDomain, &b, func(sig []byte) any { return &sealedDecision{Body: b, Sig: sig} })
	if err != nil {
		return Edit{}, err
	}
	err = s.write(func(tx *store.Tx) error {
		if err := putSealed(tx, ns.String(), schema.DecisionPrefix+did, schema.KindDecision, schema.FieldDecision, enc, ts); err != nil {
			return err
		}
		if approve && cur.Op == OpRetract {
			if gone, err := tx.Retracted(ns.String(), cur.TargetID); err != nil || gone {
				return err
			}
			return tx.Retract(ns.String(), cur.TargetID)
		}
		return nil
	})
	if err != nil {
		return Edit{}, err
	}
	out, _ := s.auditEntry(editID)
	return out, nil
}

func (s *Service) auditEntry(editID string) (Edit, bool) {
	s.surg.mu.RLock()
	defer s.surg.mu.RUnlock()
	e, ok := s.surg.edits[editID]
	if !ok {
		return Edit{}, false
	}
	return s.toEdit(e).Edit, true
}

// Audit lists the edits the caller can read (those of one memory with
// q.ID, and the edits that followed them onto its copies), oldest first, and the derived memories that need re-summarising
// because a source was retracted (a scan of what the caller can read; an
// operator's command, not a hot path).
func (s *Service) Audit(ctx context.Context, c Caller, q AuditQuery) (AuditResult, error) {
	if q.Status != "" {
		if err := oneOf("status", q.Status, []string{StatusPending, StatusApproved, StatusRejected}); err != nil {
			return AuditResult{}, err
		}
	}
	sf, err := s.readScope(c, q.Namespace)
	if err != nil {
		return AuditResult{}, err
	}
	readable := func(ns string) bool {
		for _, n := range sf.Namespaces {
			if n == ns || strings.HasPrefix(ns, strings.TrimSuffix(n, "/")+"/") {
				return true
			}
		}
		return false
	}
	res := AuditResult{Edits: []Edit{}}
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
	if retracts == 0 || q.Status == StatusPending || q.Status == StatusRejected {
		return res, nil
	}
	sf.IncludeDeleted, sf.IncludeHidden = true, true
	for _, m := range s.load(metaIDs(s.ix.List(sf, false, 0))) {
		if len(m.NeedsResummary) == 0 || q.ID != "" && m.ID != q.ID && !slices.Contains(m.NeedsResummary, q.ID) {
			continue
		}
		res.NeedsResummary = append(res.NeedsResummary, Resummary{ID: m.ID, Namespace: m.Namespace, Type: m.Type, Title: m.Title, Retracted: m.NeedsResummary})
	}
	return res, nil
}

// editTarget maps a change of an edit or decision record to the memory
// whose effective view it changes.
func (s *Service) editTarget(c store.Change) (MemoryKey, bool) {
	switch {
	case schema.IsEdit(c.Record):
		b, _, err := decodeEditRecord(c.Namespace, c.ID, c.Record)
		if err != nil {
			return MemoryKey{}, false
		}
		return MemoryKey{c.Namespace, b.Target}, true
	case schema.IsDecision(c.Record):
		b, _, err := decodeDecisionRecord(c.Namespace, c.ID, c.Record)
		if err != nil {
			return MemoryKey{}, false
		}
		s.surg.mu.RLock()
		e := s.surg.edits[b.Edit]
		s.surg.mu.RUnlock()
		if e == nil {
			return MemoryKey{}, false
		}
		return MemoryKey{e.ns, e.body.Target}, true
	}
	return MemoryKey{}, false
}
