package surgery

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Lineage: what a governance decision on a memory does to the memories
// made from it.
//
// Copies. Share, promote (and auto-promotion) and capsules copy a memory
// into another namespace; the copy's lineage names the source id and its
// copied_from field (schema.FieldCopiedFrom) the source's namespace. A copy is the
// same knowledge at another address, so an approved retract, block or
// quarantine of a memory follows it to its copies, and to theirs: a
// leaked key quarantined or retracted at its source must not stay
// readable through a team copy or a capsule. Amend and attenuate do not
// follow: a copy is a snapshot whose holders may have corrected it
// themselves. A copy made after the edit follows it too (sharing a
// quarantined memory yields a quarantined copy). Projection views are not
// copies in this sense: projection maintenance already keeps each view
// record to its source's effective view (node/memory/projview).
//
// How. The edit follows as an edit of its own, so the copy's namespace
// carries it and every node holding that namespace hides (or purges) the
// copy — including a node that never held the source's namespace, such
// as a capsule's audience. The following edit is an ordinary signed edit
// record in the copy's namespace (surgery.go): the original's op and
// patch, reason "follows edit ID (OP of TARGET in NS by PROPOSER): the
// original reason" (memapi.Edit.Follows names the original edit, and an audit
// of the original lists it), proposed by the first principal of this
// node that may write the copy's namespace among the original's proposer
// and approver, the copy namespace's inbox writer, the copy's author and
// the node's owner. The copy's namespace keeps its own rules: where its
// op needs approval there, the following edit waits for an admin of that
// namespace like any other edit.
//
// Who follows. After every change it applies (a local write or a peer's
// delta), a node looks at each edit or decision in it (which copies of
// the edited memory do I hold?) and each copy in it (which approved edits
// does its source have?), and writes the following edit when
//   - this node signed the original edit or its approval (the deciding
//     node follows every copy it holds), or
//   - one of this node's principals made the copy (the copying node held
//     the source's namespace then, so it receives the source's edits,
//     and follows the copy wherever the decision was made),
//
// unless the copy already has an edit following that one or an approved
// edit with the same effect (which also ends any lineage cycle). Open
// repeats the check for every copy, repairing a crash between an edit and
// its following. The deciding node and the copying node may both follow
// one copy before either hears of the other's edit; both edits are valid
// and audited, and the ops are idempotent.
//
// Trust. A copy follows only edits stored in the namespace its
// copied_from names, and only a replica that may write a namespace gets
// an edit admitted there (surgery.go, the replication gate). So only
// someone who could edit the source reaches its copies; an edit stored
// elsewhere against the source's id reaches none. Copies without
// copied_from (made before it existed, or imported) do not follow.
//
// Derived memories — those with a "source:<id>" provenance that are not
// copies, such as summaries — keep their text: when a source is
// retracted they are flagged in the view (memapi.Memory.NeedsResummary, computed,
// not stored, so it needs no extra record and cannot be forgotten), and
// Audit lists them.

// followsCopies reports whether an approved edit with op applies to copies.
func followsCopies(op string) bool {
	return op == memapi.OpRetract || op == memapi.OpBlock || op == memapi.OpQuarantine
}

const followPrefix = "follows edit "

// followReason is the reason of the edit that follows e onto a copy,
// within memapi.MaxReasonBytes.
func followReason(e memapi.Edit) string {
	r := fmt.Sprintf("%s%s (%s of %s in %s by %s): %s", followPrefix, e.EditID, e.Op, e.TargetID, e.Namespace, e.Proposer, e.Reason)
	if len(r) > memapi.MaxReasonBytes {
		r = r[:memapi.MaxReasonBytes]
		for !utf8.ValidString(r) {
			r = r[:len(r)-1] // cut inside a rune
		}
	}
	return r
}

// followsOf is the edit id a following edit's reason names, or "".
func followsOf(reason string) string {
	rest, ok := strings.CutPrefix(reason, followPrefix)
	if !ok || len(rest) < 34 || rest[32:34] != " (" {
		return ""
	}
	if _, err := hex.DecodeString(rest[:32]); err != nil {
		return ""
	}
	return rest[:32]
}

// copyRef is a copy this node holds.
type copyRef struct {
	ns, id     string // the copy
	src, srcNS string // its source: lineage, copied_from
}

// copyState indexes the copies in the store by source, derived like the
// search index.
type copyState struct {
	mu sync.RWMutex
	// bySrc: source id → its copies, in no order. A slice, not a map by
	// copy id: a source has one or two copies, and a map each was most of
	// this index (41 of 56 MB at 100 nodes × 10k ops in the simulator).
	bySrc map[string][]copyRef
	byID  map[string]copyRef // copy id → copy
}

// indexCopy remembers a memory record that names its source (called by
// index for every memory record).
func (s *Surgery) indexCopy(ns, id string, rec *crdt.Record) {
	ref := copyRef{ns: ns, id: id, src: schema.Str(rec, schema.FieldLineage), srcNS: schema.Str(rec, schema.FieldCopiedFrom)}
	if ref.src == "" || ref.srcNS == "" || ref.src == id {
		return
	}
	st := &s.cps
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.byID[id]; ok {
		if old == ref {
			return
		}
		st.dropFromSrc(old.src, id)
	}
	if st.byID == nil {
		st.bySrc, st.byID = map[string][]copyRef{}, map[string]copyRef{}
	}
	st.bySrc[ref.src] = append(st.bySrc[ref.src], ref)
	st.byID[id] = ref
}

// forgetCopy drops a retracted record from the copy index.
func (s *Surgery) forgetCopy(ns, id string) {
	st := &s.cps
	st.mu.Lock()
	defer st.mu.Unlock()
	if ref, ok := st.byID[id]; ok && ref.ns == ns {
		delete(st.byID, id)
		st.dropFromSrc(ref.src, id)
	}
}

// dropFromSrc removes copy id from the copies of src. Call with mu held.
func (st *copyState) dropFromSrc(src, id string) {
	refs := slices.DeleteFunc(st.bySrc[src], func(r copyRef) bool { return r.id == id })
	if len(refs) == 0 {
		delete(st.bySrc, src)
		return
	}
	st.bySrc[src] = refs
}

// copiesOf lists the copies of the memory src stored in srcNS, in id order.
func (s *Surgery) copiesOf(src, srcNS string) []copyRef {
	st := &s.cps
	st.mu.RLock()
	defer st.mu.RUnlock()
	var out []copyRef
	for _, ref := range st.bySrc[src] {
		if ref.srcNS == srcNS {
			out = append(out, ref)
		}
	}
	slices.SortFunc(out, func(a, b copyRef) int { return strings.Compare(a.id, b.id) })
	return out
}

// followCopies is called after each change the store applied (a local
// write or a peer's delta): it writes the edits that follow the approved
// edits in the change onto the copies this node holds, and the approved
// edits of their sources onto the copies in the change (see the comment
// at the top). Failures are logged: the change itself has been applied.
func (s *Surgery) followCopies(changes []store.Change) {
	s.cps.mu.RLock()
	none := len(s.cps.byID) == 0
	s.cps.mu.RUnlock()
	if none {
		return
	}
	var jobs []followJob
	edited := func(eid string) {
		if e, ok := s.auditEntry(eid); ok && e.Status == memapi.StatusApproved && followsCopies(e.Op) {
			for _, cp := range s.copiesOf(e.TargetID, e.Namespace) {
				jobs = append(jobs, followJob{e, cp})
			}
		}
	}
	for _, c := range changes {
		switch {
		case c.Record == nil:
		case strings.HasPrefix(c.ID, schema.EditPrefix):
			edited(strings.TrimPrefix(c.ID, schema.EditPrefix))
		case strings.HasPrefix(c.ID, schema.DecisionPrefix):
			if b, _, err := decodeDecisionRecord(s.core.Seals(), c.Namespace, c.ID, c.Record); err == nil {
				edited(b.Edit)
			}
		default:
			s.cps.mu.RLock()
			cp, ok := s.cps.byID[c.ID]
			s.cps.mu.RUnlock()
			if ok && cp.ns == c.Namespace {
				jobs = s.sourceEdits(jobs, cp)
			}
		}
	}
	for _, j := range jobs {
		s.follow(j.e, j.cp)
	}
}

// followJob is an approved edit to follow onto a copy of its target.
type followJob struct {
	e  memapi.Edit
	cp copyRef
}

// sourceEdits appends the approved edits of cp's source that follow copies.
func (s *Surgery) sourceEdits(jobs []followJob, cp copyRef) []followJob {
	for _, e := range s.editsOf(cp.srcNS, cp.src) {
		if e.Status == memapi.StatusApproved && followsCopies(e.Op) {
			jobs = append(jobs, followJob{e.Edit, cp})
		}
	}
	return jobs
}

// followAll runs followCopies' check for every copy (at Open).
func (s *Surgery) followAll() {
	s.cps.mu.RLock()
	copies := slices.Collect(maps.Values(s.cps.byID))
	s.cps.mu.RUnlock()
	slices.SortFunc(copies, func(a, b copyRef) int { return strings.Compare(a.id, b.id) })
	var jobs []followJob
	for _, cp := range copies {
		jobs = s.sourceEdits(jobs, cp)
	}
	for _, j := range jobs {
		s.follow(j.e, j.cp)
	}
}

// follow writes the edit that follows e onto the copy cp, unless this node
// is not the one to, or the copy already follows it.
func (s *Surgery) follow(e memapi.Edit, cp copyRef) {
	rec, err := s.core.Record(cp.ns, cp.id)
	if err != nil || rec.Empty() {
		return // retracted meanwhile
	}
	author, _ := namespace.Parse(schema.Str(rec, schema.FieldAuthor))
	if !s.signedHere(e) && (author.IsZero() || !s.core.IsLocal(author)) {
		return // the deciding or the copying node follows it
	}
	for _, ce := range s.editsOf(cp.ns, cp.id) {
		if ce.Follows == e.EditID || ce.Status == memapi.StatusApproved && ce.Op == e.Op && ce.Patch.Channel == e.Patch.Channel {
			return
		}
	}
	ns, err := namespace.Parse(cp.ns)
	if err != nil {
		return
	}
	p, ok := s.followSigner(e, ns, author)
	if !ok {
		s.core.Logger().Warn("copy not followed: no principal of this node may write its namespace",
			"copy", cp.id, "namespace", cp.ns, "edit", e.EditID, "op", e.Op)
		return
	}
	_, ts := s.core.Now()
	b := editBody{Version: sealVersion, Namespace: cp.ns, Target: cp.id, Op: e.Op, Reason: followReason(e),
		Proposer: p.String(), Key: s.core.Service().Identity().Public, Channel: e.Patch.Channel, TS: uint64(ts),
		NeedsApproval: s.surg.approvals.requires(ns, e.Op)}
	enc, eid, err := seal(s.core.Service().Identity(), editDomain, &b, func(sig []byte) any { return &sealedEdit{Body: b, Sig: sig} })
	if err == nil {
		err = s.core.Write(func(tx *store.Tx) error {
			if err := putSealed(tx, cp.ns, schema.EditPrefix+eid, schema.KindEdit, schema.FieldEdit, enc, ts); err != nil {
				return err
			}
			if b.Op != memapi.OpRetract || b.NeedsApproval {
				return nil
			}
			if gone, err := tx.Retracted(cp.ns, cp.id); err != nil || gone {
				return err
			}
			return tx.Retract(cp.ns, cp.id)
		})
	}
	if err != nil {
		s.core.Logger().Warn("copy not followed", "copy", cp.id, "namespace", cp.ns, "edit", e.EditID, "err", err)
	}
}

// signedHere reports whether this node signed e or the decision that
// approved it.
func (s *Surgery) signedHere(e memapi.Edit) bool {
	if p, err := namespace.Parse(e.Approver); err == nil && s.core.IsLocal(p) {
		return true
	}
	s.surg.mu.RLock()
	defer s.surg.mu.RUnlock()
	en := s.surg.edits[e.EditID]
	return en != nil && bytes.Equal(en.body.Key, s.core.Service().Identity().Public)
}

// followSigner picks who proposes a following edit (see the comment at
// the top): a principal of this node that may write ns.
func (s *Surgery) followSigner(e memapi.Edit, ns, author namespace.Address) (namespace.Address, bool) {
	var cands []namespace.Address
	for _, v := range []string{e.Proposer, e.Approver} {
		if p, err := namespace.Parse(v); err == nil {
			cands = append(cands, p)
		}
	}
	_, writer, _ := memory.InboxParties(ns)
	for _, p := range append(cands, writer, author, s.core.Service().Owner()) {
		if !p.IsZero() && s.core.IsLocal(p) && s.core.Check(p, ns, acl.Write) == nil {
			return p, true
		}
	}
	return namespace.Address{}, false
}

// withFollowers adds to the edits of one memory the edits that follow
// them onto its copies, for Audit. Call with surg.mu held.
func (s *Surgery) withFollowers(es []*editEntry) []*editEntry {
	if len(es) == 0 {
		return es
	}
	ids := map[string]bool{}
	for _, e := range es {
		ids[e.id] = true
	}
	out := slices.Clone(es)
	for _, e := range s.surg.edits {
		if f := followsOf(e.body.Reason); f != "" && ids[f] {
			out = append(out, e)
		}
	}
	return out
}

// retractedSources lists the ids m was derived from (lineage, "source:"
// provenance) that an approved edit retracted.
func (s *Surgery) retractedSources(m memapi.Memory) []string {
	if m.Lineage == "" && len(m.Provenance) == 0 {
		return nil
	}
	s.surg.mu.RLock()
	defer s.surg.mu.RUnlock()
	if s.surg.retracts == 0 {
		return nil
	}
	var out []string
	try := func(id string) {
		for _, e := range s.surg.byTarget[id] {
			if e.body.Op == memapi.OpRetract && s.toEdit(e).Status == memapi.StatusApproved && !slices.Contains(out, id) {
				out = append(out, id)
				return
			}
		}
	}
	if m.Lineage != "" {
		try(m.Lineage)
	}
	for _, p := range m.Provenance {
		if src, ok := strings.CutPrefix(p, "source:"); ok {
			try(src)
		}
	}
	slices.Sort(out)
	return out
}
