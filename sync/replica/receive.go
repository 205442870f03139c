package replica

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// The receiving path: a peer's message, its namespace deltas checked
// (signature, holding, decoding, seals, policy) and handed out to apply,
// or held until their dependencies arrive.

// Step handles one message from a peer. It returns an error only for a
// message that is unusable as a whole (unknown peer); per-namespace
// rejections are reported in Ready.Rejected and counted.
func (e *Engine) Step(from PeerID, m *wire.Message) error {
	p, ok := e.peers[from]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownPeer, from)
	}
	e.release() // what was applied since the last input may free held deltas
	e.heardFrom(p)
	switch m.Kind {
	case wire.KindTree:
		e.stepTree(p, m)
	case wire.KindAck:
		if f, ok := p.inflight[m.Seq]; ok {
			delete(p.inflight, m.Seq)
			p.observeAck(f, e.now)
		}
	case wire.KindDeltas:
		p.batchAgain(m.Seq, e.now)
		n := len(e.ready.Apply)
		for _, nd := range m.Deltas {
			e.receiveDelta(p, nd, true)
		}
		// Acked once the node has applied what the batch brought (Advance):
		// an ack says the batch arrived and applied.
		e.ackAfter(from, m.Seq, n)
	case wire.KindSyncRequest:
		e.answerSync(p, m)
	case wire.KindSyncReply:
		for _, nc := range m.Contexts {
			// The answer's last message: the request is settled once this
			// node holds what the peer had (Tick), so a lost batch of it
			// is asked for again. A peer that may not write ns sends no
			// content, so nothing more is owed by it.
			a, ok := p.asked[nc.Namespace]
			if !ok {
				continue
			}
			theirs, err := crdt.DecodeContext(nc.Context, e.cfg.Limits)
			if err != nil || !e.mayOwe(p, nc.Namespace, theirs) ||
				len(e.st.Context(nc.Namespace).Missing(theirs)) == 0 {
				delete(p.asked, nc.Namespace)
				continue
			}
			a.want, a.lostBatch = theirs, true
			p.asked[nc.Namespace] = a
		}
		// A batch of an answer still coming: its request is being
		// answered, not lost (syncRetryWait).
		for _, nd := range m.Deltas {
			if a, ok := p.asked[nd.Namespace]; ok && a.want == nil {
				a.at = e.now
				p.asked[nd.Namespace] = a
			}
		}
		// What this reply brings may complete what held deltas wait for:
		// they are released once it is applied (Advance).
		for _, nd := range m.Deltas {
			e.countAnswer(p, nd)
			e.receiveDelta(p, nd, false)
			e.askSilentLinks(nd.Namespace)
		}
		if len(m.Contexts) > 0 {
			// The responder's contexts: answer with what it lacks.
			e.answerSync(p, &wire.Message{Kind: wire.KindSyncRequest, Contexts: m.Contexts})
		}
	}
	e.flush(p)
	return nil
}

func (e *Engine) reject(p *peerState, ns string, err error) {
	p.stats.Rejected++
	e.ready.Rejected = append(e.ready.Rejected, Rejection{From: p.ID, Namespace: ns, Err: err})
}

// rejectHeld reports the refusal of a delta held for its writer's right
// (writerhold.go): Held tells the driver that the engine applies it if
// that right comes, or asks for it again if not.
func (e *Engine) rejectHeld(p *peerState, ns string, err error) {
	p.stats.Rejected++
	e.ready.Rejected = append(e.ready.Rejected, Rejection{From: p.ID, Namespace: ns, Err: err, Held: true})
}

// receiveDelta checks a namespace delta and, if it passes, hands it out to apply.
func (e *Engine) receiveDelta(p *peerState, nd wire.NamespaceDelta, live bool) {
	kind := wire.KindSyncReply
	if live {
		kind = wire.KindDeltas
	}
	d, err := e.checkDelta(nd, kind, p.Key, p.Replica, p.ID, live)
	if err != nil {
		if d != nil && e.holdForWriter(writerHeld{from: p.ID, ns: nd.Namespace, d: d, rep: p.Replica, lacks: lackedBy(err), live: live, first: nd.From, size: len(nd.Delta)}) {
			e.rejectHeld(p, nd.Namespace, err)
			return
		}
		e.reject(p, nd.Namespace, err)
		if live && errors.Is(err, ErrNotAllowed) {
			e.askAuthority(p, nd.Namespace)
		}
		return
	}
	e.accept(p, nd.Namespace, d, live, nd.From)
}

// accept hands out a checked delta of ns from p to apply, or holds a live
// one until what it depends on is here.
func (e *Engine) accept(p *peerState, ns string, d *crdt.Map, live bool, first uint64) {
	p.stats.DeltasRecv++
	// (A delta that overwrote nothing depends on nothing: no need to build
	// what this node has seen.)
	if live && !d.DependsOn(noDots, p.Replica, first) && !d.DependsOn(e.haveFor(ns), p.Replica, first) {
		e.holdFrom(p.ID, p.Replica, ns, d, first)
		return
	}
	e.toApply(Apply{From: p.ID, Namespace: ns, Delta: d, Live: live})
}

// checkDelta runs the checks on arrival (doc.go) on a namespace delta
// signed by key for a message of kind, whose author is the node named
// author with replica rep: the peer that sent it, or for a relayed delta
// (tree.go) the node that wrote it. A live delta holds only the author's
// writes. The errors other than ErrNotHeld and ErrNotAllowed are about
// the bytes themselves, whoever checks them. A refusal for the writer's
// right (a *WriterError) comes with the decoded delta, which may be held
// for that right (writerhold.go); any other comes without.
func (e *Engine) checkDelta(nd wire.NamespaceDelta, kind wire.Kind, key ed25519.PublicKey, rep crdt.ReplicaID, author PeerID, live bool) (*crdt.Map, error) {
	if !e.cfg.DeltaSigs.Verify(key, nd.SignedBytes(kind), nd.Sig) { // nd.Verify, remembered if DeltaSigs is set
		return nil, ErrBadSignature
	}
	if !e.pol.ShouldHold(nd.Namespace) {
		return nil, ErrNotHeld
	}
	d, err := crdt.DecodeMap(nd.Delta, e.cfg.Limits)
	if err != nil {
		return nil, err
	}
	if err := d.VerifySeals(nd.Namespace, e.cfg.Seals); err != nil {
		return nil, err
	}
	if err := e.mayWrite(nd.Namespace, d, rep, author, live); err != nil {
		var we *WriterError
		if errors.As(err, &we) {
			return d, err
		}
		return nil, err
	}
	return d, nil
}

// mayWrite is checkDelta's part that depends on what this node knows
// rather than on the bytes: the writes of d, in ns, sent (or written, if
// relayed) by author with replica rep, are by writers of ns. A live delta
// holds only rep's writes.
func (e *Engine) mayWrite(ns string, d *crdt.Map, rep crdt.ReplicaID, author PeerID, live bool) error {
	pol := e.pol
	if dp, ok := pol.(DeltaPolicy); ok {
		pol = dp.ForDelta(ns, d)
	}
	var bad error
	d.Records(func(id string, r *crdt.Record) bool {
		for _, dot := range r.Dots() {
			if live && dot.Replica != rep {
				bad = fmt.Errorf("%w: %s holds a write by replica %v", ErrNotAuthor, id, dot.Replica)
				return false
			}
			if !pol.ReplicaMayWrite(dot.Replica, ns) {
				bad = &WriterError{Replica: dot.Replica, Err: fmt.Errorf("%w: %s holds a write by replica %v", ErrNotAllowed, id, dot.Replica)}
				return false
			}
		}
		return true
	})
	// Removals only by writers: a delta's causal context removes whatever
	// the receiver holds that the delta claims without carrying, so only a
	// peer that may write ns may send one, live or in a sync answer.
	if bad == nil && !pol.ReplicaMayWrite(rep, ns) {
		bad = &WriterError{Replica: rep, Err: fmt.Errorf("%w: %s may not write %s, so it may not send it", ErrNotAllowed, author, ns)}
	}
	return bad
}

// mayOwe reports whether p, which told theirs as its context of ns, owes
// this node the content of ns it lacks: p may write ns, or this node
// holds none of ns (so cannot tell who may write it: the grants travel in
// ns) and theirs holds dots of p's own replica, which only a writer
// makes. Without the second, a holder of none of ns whose answer from a
// writer was lost never asked again: the writer had asked first (a join),
// got this node's empty context back, and holds nothing owed of its own
// answer; the simulator found a member missing the namespace's whole
// history for 133.8 s, until the writer's anti-entropy picked it
// (mnemo sim --mixed --seed 1285 with sync/epidemic's lone-node fill).
func (e *Engine) mayOwe(p *peerState, ns string, theirs *crdt.Context) bool {
	if e.pol.ReplicaMayWrite(p.Replica, ns) {
		return true
	}
	return theirs.Max(p.Replica) > 0 && e.st.Context(ns).IsEmpty()
}

// askAuthority asks p, whose live delta of ns was refused because this
// node does not know that its author may write ns, for a digest sync of
// ns, unless one is owed already. The grant that lets the author write
// travels in ns itself, and p, a writer if it is honest, sends it in its
// answer with the refused writes: one exchange, where the batch's
// retransmissions (refused the same way) and its fallback at AckTimeout
// took ten seconds (the answer also stops those: answeredSince). A member
// that may not write gets a request its answer holds no content for (it
// may send nothing) and, while that is owed, no other.
func (e *Engine) askAuthority(p *peerState, ns string) {
	if _, owed := p.asked[ns]; !owed {
		needSyncOf(p, ns, CauseAuthority)
		if p.authority == nil {
			p.authority = map[string]bool{}
		}
		p.authority[ns] = true // a request holds a context, no content: no read needed
	}
}

// askEmpty asks p for a sync of ns, which this node holds none of yet
// and so refused p's tree traffic of: a holder that holds nothing of ns
// cannot know who may read it (the grants travel in ns), so its first
// sync was lost. p, which offers it ns's tree, is asked for one, as for a
// live delta refused for want of its author's grant: one peer at a time
// (each answer is the whole namespace), at most maxAuthorityAsks of p's
// at once, and no sooner than RetransmitAfter after the last ask for ns,
// to whomever (a neighbour that only reads answers its context alone,
// and the next frame of the tree would ask again at once: 100 requests
// for 100 announcements in 10 s, found by review).
func (e *Engine) askEmpty(p *peerState, ns string) {
	if e.askedAny(ns) || authorityAsks(p) >= maxAuthorityAsks {
		return
	}
	if at, ok := e.emptyAsked[ns]; ok && e.now.Sub(at) < e.cfg.RetransmitAfter {
		return
	}
	if e.emptyAsked == nil {
		e.emptyAsked = map[string]time.Time{}
	}
	if len(e.emptyAsked) >= 4*maxAuthorityAsks {
		// Only asks within the last RetransmitAfter gate anything.
		maps.DeleteFunc(e.emptyAsked, func(_ string, at time.Time) bool { return e.now.Sub(at) >= e.cfg.RetransmitAfter })
	}
	e.emptyAsked[ns] = e.now
	e.askAuthority(p, ns)
}

// maxAuthorityAsks bounds the namespaces an empty holder asks one peer
// about at a time for the tree traffic it refused (stepTree): any member
// can name namespaces in unsigned tree frames, each of which this node
// would hold, and each would be a request and an entry kept here.
const maxAuthorityAsks = 32

// authorityAsks counts p's authority asks queued or owed.
func authorityAsks(p *peerState) int {
	n := len(p.authority)
	for _, a := range p.asked {
		if a.authority {
			n++
		}
	}
	return n
}

// noDots is the empty context. Never modified.
var noDots = crdt.NewContext()

// haveFor is what this node has applied of ns. Deltas handed out to apply
// do not count until they are in the state: the node may refuse one
// (Advance), and a delta released on its account would then claim dots this
// node never got.
func (e *Engine) haveFor(ns string) *crdt.Context { return e.st.Context(ns) }

// holdFrom keeps a live delta by replica origin until what it depends on
// has arrived. The buffer is bounded: the oldest entry goes first, and its
// namespace is synced with peer from instead.
func (e *Engine) holdFrom(from PeerID, origin crdt.ReplicaID, ns string, d *crdt.Map, first uint64) {
	if len(e.pending) >= e.cfg.PendingMax {
		old := e.pending[0]
		e.pending = e.pending[1:]
		if op, ok := e.peers[old.from]; ok {
			needSyncOf(op, old.ns, CauseHeld)
			op.stats.Fallbacks++
		}
	}
	e.pending = append(e.pending, held{from: from, origin: origin, first: first, ns: ns, d: d})
}

// release applies held deltas whose dependencies have arrived, and drops
// those that became redundant.
func (e *Engine) release() {
	e.recheckWriters()
	if len(e.pending) == 0 {
		return
	}
	// haves[ns] is haveFor(ns), built once per namespace. A delta released
	// here does not count for the next one: its outcome is not known yet,
	// so a delta that depends on it waits for the Advance that applies it.
	haves := map[string]*crdt.Context{}
	kept := e.pending[:0]
	for _, h := range e.pending {
		have, ok := haves[h.ns]
		if !ok {
			have = e.haveFor(h.ns)
			haves[h.ns] = have
		}
		switch {
		case allIn(h.d, have):
			// everything it carries is already here
		case h.d.DependsOn(have, h.origin, h.first):
			e.toApply(Apply{From: h.from, Namespace: h.ns, Delta: h.d, Live: true})
		default:
			kept = append(kept, h)
		}
	}
	clear(e.pending[len(kept):])
	e.pending = kept
}

// allIn reports whether every dot of d's context is in have.
func allIn(d *crdt.Map, have *crdt.Context) bool { return len(have.Missing(d.Context())) == 0 }
