package replica

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
)

// Deltas refused for their writer's right, held for it.
//
// Content, grants and bindings travel apart, so a delta can arrive before
// what lets its writer write its namespace here: the binding that says
// which agents the writer's node hosts, or the grant to those agents
// (checkDelta's *WriterError). Such a delta was dropped, and its sender
// (a relayed delta's author) asked at once for a digest sync of the
// namespace, whose answer brought the same content a second time, and was
// refused again while the binding was still on its way (the driver asked
// once more when it came).
//
// The engine now keeps the checked, decoded delta of a writer whose node
// hosts no agent known here (unbound: its binding has not come) for
// Config.WriterHoldFor, and checks its writer's right again when it may
// have come: a peer's principals changed (SetPeers, UpdatePeers: a
// binding admitted) or a delta of its namespace was applied (a grant).
// Passing, it goes on as on arrival: applied, held for what it depends
// on, or, relayed, stepped into its tree (delivered, forwarded,
// announced) unless a copy came another way since. Still refused when its
// time is up, or pushed out of the bounded buffer (WriterHoldMax deltas,
// QueueMaxBytes bytes; the oldest first), it is dropped and its sender or
// author asked for a sync as before. Its Rejection says Held, so the
// driver need not ask again itself; a driver that pulls bindings asks
// for the lacking ones again while they are held (HeldWriters).
//
// A writer bound here and refused lacks a grant, or may not write: not
// held, its sender asked at once as before, so its delta never passes on
// a grant that came after it (held, a member's erasure sent before it was
// granted write applied once granted). An unbound writer's delta may
// still pass on a grant that comes with or after its binding, within
// WriterHoldFor; what it applies then, the writer could send again by
// right at that moment.
//
// A relayed delta held once is not held again when its other copies
// come (other links of the tree, answers to wants): they are refused,
// and counted, like the first.

// writerHeld is a delta refused for its writer's right, held for it.
type writerHeld struct {
	from PeerID // the peer it came from
	ns   string
	d    *crdt.Map
	// rep and author: the replica and node the checks named as its
	// writer (the sender, or a relayed delta's author).
	rep    crdt.ReplicaID
	author PeerID
	lacks  crdt.ReplicaID // the writer the last check found no right of
	live   bool
	first  uint64 // the delta's From (what it depends on)
	size   int    // its encoded bytes
	at     time.Time
	relay  *heldRelay // a relayed delta's, or nil
}

// heldRelay is a held relayed delta's tree message and what checkRelayed
// made of it, to step into the tree once it passes.
type heldRelay struct {
	em epidemic.Message
	rl *relayed
}

// holdForWriter holds h, refused for its writer's right, and reports
// whether it is held (or a copy of it already is).
func (e *Engine) holdForWriter(h writerHeld) bool {
	if e.cfg.WriterHoldFor < 0 || h.size > e.cfg.QueueMaxBytes {
		return false
	}
	if h.author == "" {
		h.author = h.from
	}
	if !e.unbound(h.lacks) {
		// A writer bound here whom the policy refuses: a grant may be
		// missing, which its sender's sync brings at once (askAuthority),
		// or the writer may not write. Held, its delta would pass once
		// a grant came, later than it was refused: the erasure a member
		// sent before it was granted write would then apply (the
		// malicious-member e2e test).
		return false
	}
	if h.relay != nil && slices.ContainsFunc(e.writerHeld, func(o writerHeld) bool {
		return o.relay != nil && o.relay.rl.id == h.relay.rl.id
	}) {
		return true
	}
	for len(e.writerHeld) > 0 && (len(e.writerHeld) >= e.cfg.WriterHoldMax || e.writerHeldBytes+h.size > e.cfg.QueueMaxBytes) {
		old := e.writerHeld[0]
		e.writerHeld[0] = writerHeld{}
		e.writerHeld = e.writerHeld[1:]
		e.unheld(old)
		e.syncStats.WriterEvicted++
		e.askAgain(old)
	}
	h.at = e.now
	e.writerHeld = append(e.writerHeld, h)
	e.writerHeldBytes += h.size
	if e.writerHeldNS == nil {
		e.writerHeldNS = map[string]int{}
	}
	e.writerHeldNS[h.ns]++
	e.syncStats.WriterHeld++
	return true
}

// unbound reports whether rep is a replica whose node hosts no principal
// known here (or no peer's): the binding that would say which agents it
// hosts has not come.
func (e *Engine) unbound(rep crdt.ReplicaID) bool {
	if rep == 0 || rep == e.cfg.Replica {
		return false
	}
	for _, p := range e.peers {
		if p.Replica == rep {
			return len(p.Principals) == 0
		}
	}
	return true
}

// lackedBy is the replica a *WriterError names.
func lackedBy(err error) crdt.ReplicaID {
	var we *WriterError
	if errors.As(err, &we) {
		return we.Replica
	}
	return 0
}

// unheld takes h's share out of the held deltas' counts.
func (e *Engine) unheld(h writerHeld) {
	e.writerHeldBytes -= h.size
	if e.writerHeldNS[h.ns]--; e.writerHeldNS[h.ns] <= 0 {
		delete(e.writerHeldNS, h.ns)
	}
}

// askAgain asks for a dropped held delta again, as its refusal would
// have without the hold: its sender for a digest sync of its namespace,
// or a relayed delta's author.
func (e *Engine) askAgain(h writerHeld) {
	if h.relay != nil {
		e.askAuthor(h.author, h.ns)
		return
	}
	if p, ok := e.peers[h.from]; ok {
		e.askAuthority(p, h.ns)
	}
}

// writersMayHaveCome marks the held deltas to be checked again
// (recheckWriters): a peer's principals changed.
func (e *Engine) writersMayHaveCome() {
	if len(e.writerHeld) > 0 {
		e.writerDirty = true
	}
}

// appliedIn marks the held deltas to be checked again if some are of
// ns, a namespace a delta was just applied in (it may hold a grant).
func (e *Engine) appliedIn(ns string) {
	if e.writerHeldNS[ns] > 0 {
		e.writerDirty = true
	}
}

// recheckWriters checks the held deltas' writers again if something they
// may have lacked came since the last check, and goes on with those that
// pass; then drops, and asks again for, those whose time is up. It
// reports whether some passed.
func (e *Engine) recheckWriters() bool {
	if len(e.writerHeld) == 0 {
		e.writerDirty = false
		return false
	}
	var passed []writerHeld
	if e.writerDirty {
		e.writerDirty = false
		kept := e.writerHeld[:0]
		for _, h := range e.writerHeld {
			switch {
			case !e.pol.ShouldHold(h.ns):
				e.unheld(h) // no longer held here
			case e.stillLacks(&h):
				kept = append(kept, h)
			default:
				e.unheld(h)
				passed = append(passed, h)
			}
		}
		clear(e.writerHeld[len(kept):])
		e.writerHeld = kept
	}
	var expired []writerHeld
	for len(e.writerHeld) > 0 && e.now.Sub(e.writerHeld[0].at) >= e.cfg.WriterHoldFor {
		h := e.writerHeld[0]
		e.writerHeld[0] = writerHeld{}
		e.writerHeld = e.writerHeld[1:]
		e.unheld(h)
		expired = append(expired, h)
	}
	for _, h := range passed {
		e.syncStats.WriterReleased++
		e.goOn(h)
	}
	for _, h := range expired {
		e.syncStats.WriterExpired++
		e.askAgain(h)
	}
	return len(passed) > 0
}

// stillLacks checks h's writers' right again, and reports whether one
// still lacks it (noted in h.lacks).
func (e *Engine) stillLacks(h *writerHeld) bool {
	err := e.mayWrite(h.ns, h.d, h.rep, h.author, h.live)
	if r := lackedBy(err); r != 0 {
		h.lacks = r
	}
	return err != nil
}

// heldHas reports whether this node's context of ns joined with those of
// the deltas of ns held for their writer's right covers want.
func (e *Engine) heldHas(ns string, want *crdt.Context) bool {
	if e.writerHeldNS[ns] == 0 {
		return false
	}
	have := e.st.Context(ns)
	for _, h := range e.writerHeld {
		if h.ns == ns {
			have.Join(h.d.Context())
		}
	}
	return len(have.Missing(want)) == 0
}

// HeldWriter is a writer whose right a held delta lacks, and the peer the
// delta came from (which checked that right, or wrote it).
type HeldWriter struct {
	From    PeerID
	Replica crdt.ReplicaID
}

// HeldWriters lists, sorted and once each, the writers whose right the
// deltas held for it lack: a driver that pulls bindings asks From for
// them again while they are held (a pull lost, or its answer, would
// otherwise leave them held until WriterHoldFor asks for a sync).
func (e *Engine) HeldWriters() []HeldWriter {
	var out []HeldWriter
	for _, h := range e.writerHeld {
		if h.lacks != 0 {
			out = append(out, HeldWriter{From: h.from, Replica: h.lacks})
		}
	}
	slices.SortFunc(out, func(a, b HeldWriter) int {
		if c := cmpStr(string(a.From), string(b.From)); c != 0 {
			return c
		}
		return cmp.Compare(a.Replica, b.Replica)
	})
	return slices.Compact(out)
}

// goOn takes a held delta whose writer's right came on as its arrival
// would have.
func (e *Engine) goOn(h writerHeld) {
	p := e.peers[h.from]
	if p == nil {
		return // gone since: its content comes from the other holders
	}
	if h.relay == nil {
		e.accept(p, h.ns, h.d, h.live, h.first)
		return
	}
	em, rl := h.relay.em, h.relay.rl
	t := e.trees[h.ns]
	switch {
	case t != nil && t.node.Received(rl.id):
		return // a copy came another way since
	case t != nil && !t.distrusted[p.ID]:
		e.keepRelayed(&em)
		if err := t.node.Step(epidemic.PeerID(p.ID), em); err != nil {
			e.treeStats.Refused++
		}
		e.drainTree(t, rl)
		return
	}
	// No tree to step it into (dropped since), or its relay distrusted
	// since, whose messages the tree no longer takes: checked as its
	// author's on arrival, it is applied as delivered, not forwarded.
	e.applyRelayed(p, h.ns, rl)
}
