package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// The broadcast trees' figures: the engines carry live deltas of replica
// sets of Config.Engine.TreeThreshold holders or more over epidemic trees
// (sync/replica/doc.go, "Trees"); the simulator counts their frames like
// the others and sums the engines' tree counters, the crashed
// incarnations' included (totals, check.go).

// writeTrees prints the wire bytes against the minimum and the trees'
// figures (Report.WriteText).
func (r *Report) writeTrees(w io.Writer) {
	if r.MinDeltaBytes > 0 {
		fmt.Fprintf(w, "  bytes on the wire / minimum: %.2f (delta, sync and tree frames: %.2f)\n", float64(r.Bytes)/float64(r.MinDeltaBytes),
			float64(r.DeltaBytes+r.SyncBytes+r.TreeBytes)/float64(r.MinDeltaBytes))
	}
	t := r.Trees
	fmt.Fprintf(w, "  tree frames %d (%d bytes): %d broadcasts (up to %d trees a node), %d sent direct (no link yet), %d relayed deltas applied;\n"+
		"    %d payload sends, %d announced ids, %d wants, %d grafts, %d given up, %d repairs asked of authors, %d catch-ups, %d relays distrusted\n",
		r.TreeMessages, r.TreeBytes, t.Broadcasts, t.Trees, t.Direct, t.Relayed, t.Node.PayloadsSent, t.Node.IHaveIDs, t.Node.Wants, t.Node.Grafts, t.Node.GaveUp, t.Repairs, t.CatchUps, t.Distrusted)
	if a := r.Relays; a.Armed > 0 {
		fmt.Fprintf(w, "  hostile relays %d: %d payloads altered, %d dropped (%d of them sent by another member since), %d replayed\n",
			a.Armed, a.Altered, a.Dropped, a.Rerouted, a.Replayed)
	}
}

// A hostile relay is the malicious member (attack.go) on a namespace's
// broadcast tree: a reader that never wrote it, whose own engine relays
// the namespace's deltas as any member's does, and whose sends the
// simulator then tampers with, from the frame on (send calls relayFrame),
// for the rest of its incarnation. It either alters what it relays or
// drops it:
//
//   - alter: each payload it forwards goes out with one of a byte of the
//     author's delta flipped; the delta's causal context widened to every
//     dot the relay has seen (the records kept: an erasure of whatever the
//     receiver holds of them, the one alteration no seal covers, only the
//     author's signature); another member named as its author; another
//     author's signed delta (one it relayed before) under this author's
//     name. Or, one time in five, the payload goes unchanged and an old
//     genuine one it relayed goes with it (a replay: harmless, a delta
//     applied twice is applied once, and not held against the relay);
//   - drop: every payload it should forward is dropped; it still
//     announces what it has and answers everything else, a link that
//     looks alive and delivers nothing.
//
// Honest receivers must refuse every altered payload and distrust the
// relay (replica.TreeStats.Distrusted), route around a dropping one
// (grafts), and every invariant must hold. hooks.bypassRelay writes each
// widened context into its receiver's store as well, as a receiver that
// skipped the author's signature would: the acknowledged-write and
// convergence checkers must then fire.

// RelayAttacks counts what hostile relays did (Report.Relays).
type RelayAttacks struct {
	Armed    int `json:"armed"`    // members made hostile relays
	Altered  int `json:"altered"`  // payloads forwarded altered
	Dropped  int `json:"dropped"`  // payloads not forwarded
	Replayed int `json:"replayed"` // old genuine payloads sent again
	// Rerouted: dropped payloads that another member sent the same
	// receiver later (the tree routed around the relay).
	Rerouted int `json:"rerouted"`
}

// relayState is the run's hostile relays.
type relayState struct {
	hostile map[[2]int]*hostileRelay // (node, ns) relaying with tampering
	counts  RelayAttacks
	// drops: per receiver, the payloads a hostile relay dropped on their
	// way to it that no other member has sent it since.
	drops map[int]map[[wire.TreeIDSize]byte]bool
}

// hostileRelay is one member's tampering with one namespace's tree.
type hostileRelay struct {
	drop bool
	at   time.Duration         // when it turned hostile
	inc  int                   // the incarnation it holds for
	seen []wire.NamespaceDelta // genuine payloads it relayed, newest last (at most relaySeen)
}

const relaySeen = 8

// treesOn reports whether namespace j's replica set is large enough for
// the engines to carry it over a tree.
func (s *Sim) treesOn(j int) bool {
	th := s.cfg.Engine.TreeThreshold
	if th < 0 {
		return false
	}
	if th == 0 {
		th = replica.DefaultTreeThreshold
	}
	readers := 0
	for i := range s.nodes {
		if s.read[i][j] {
			readers++
		}
	}
	return readers >= th
}

// armRelay makes n a hostile relay of namespace j.
func (s *Sim) armRelay(n *simNode, j int) {
	if s.relay.hostile == nil {
		s.relay.hostile = map[[2]int]*hostileRelay{}
	}
	h := &hostileRelay{drop: s.wr.IntN(2) == 0, at: s.now, inc: n.inc}
	s.relay.hostile[[2]int{n.idx, j}] = h
	s.forgers[[2]int{n.idx, j}] = true // never granted write later: it stays a relay, never an author
	s.relay.counts.Armed++
	s.tracef("attack relay %s of %s turns hostile (drop %v)", n.id, s.nss[j], h.drop)
}

// relayRead is what a hostile relay's tampering reads of a gossip frame
// (relayFrame), made on the sender's worker (relayPrepare): the frame
// decoded, its payload's id, and from a relay of the frame's namespace
// its context then (what alterRelayed widens a context with).
type relayRead struct {
	m   *wire.Message // nil: not one payload of gossip, nothing to tamper with
	id  [wire.TreeIDSize]byte
	ctx *crdt.Context
}

// relayPrepare reads, on from's worker, a tree frame from sends to to
// that relayFrame will read when the window merges: a payload a hostile
// relay of its namespace sends, or any payload sent to a node that a
// dropping relay left without one (as the window began; a drop for to
// earlier in the same merge has relayFrame read the frame itself). Nil
// when there is nothing relayFrame reads.
func (s *Sim) relayPrepare(from *simNode, to int, g wire.Glance, frame []byte) *relayRead {
	if len(g.Namespaces) != 1 || epidemic.Kind(g.TreeKind) != epidemic.KindGossip {
		return nil
	}
	j, ok := s.nsIdx[g.Namespaces[0]]
	if !ok {
		return nil
	}
	h := s.relay.hostile[[2]int{from.idx, j}]
	if h != nil && h.inc != from.inc {
		h = nil
	}
	if h == nil && len(s.relay.drops[to]) == 0 {
		return nil
	}
	r := &relayRead{}
	m, err := s.codec.Decode(frame)
	if err != nil || m.Tree == nil || epidemic.Kind(m.Tree.Kind) != epidemic.KindGossip || len(m.Deltas) != 1 {
		return r
	}
	r.m, r.id = m, wire.RelayID(m.Deltas[0].RelayBytes())
	if h != nil && !h.drop {
		r.ctx = from.svc.Store().Context(g.Namespaces[0])
	}
	return r
}

// relayFrame is a hostile relay's tampering with a tree frame it sent
// (it: as its outbox kept it), when the window merges: the frame to put
// on the network instead (nil: dropped).
func (s *Sim) relayFrame(from *simNode, to int, frame []byte, it *outItem) []byte {
	nss := it.g.Namespaces
	if len(nss) != 1 || epidemic.Kind(it.g.TreeKind) != epidemic.KindGossip {
		return frame
	}
	j, ok := s.nsIdx[nss[0]]
	h := s.relay.hostile[[2]int{from.idx, j}]
	if h != nil && h.inc != from.inc {
		h = nil
	}
	if !ok || h == nil && len(s.relay.drops[to]) == 0 {
		return frame
	}
	r := it.relay
	if r == nil { // not read on the worker: a drop for to came earlier in this merge (h is nil)
		r = s.relayPrepare(from, to, it.g, frame)
	}
	if r == nil || r.m == nil {
		return frame
	}
	m := r.m
	nd, id := m.Deltas[0], r.id
	if h == nil || nd.Author == string(from.id) {
		if s.relay.drops[to][id] {
			delete(s.relay.drops[to], id)
			s.relay.counts.Rerouted++
		}
		return frame
	}
	if h.drop {
		if s.relay.drops == nil {
			s.relay.drops = map[int]map[[wire.TreeIDSize]byte]bool{}
		}
		if s.relay.drops[to] == nil {
			s.relay.drops[to] = map[[wire.TreeIDSize]byte]bool{}
		}
		s.relay.drops[to][id] = true
		s.relay.counts.Dropped++
		s.tracef("attack relay %s drops %s's delta of %s to n%d", from.id, nd.Author, nd.Namespace, to)
		return nil
	}
	old := h.seen
	if len(h.seen) == 0 || h.seen[len(h.seen)-1].Sig == nil || string(h.seen[len(h.seen)-1].Sig) != string(nd.Sig) {
		h.seen = append(h.seen, nd)
		if len(h.seen) > relaySeen {
			h.seen = h.seen[1:]
		}
	}
	what, bad := s.alterRelayed(from, to, nd, old, r.ctx)
	if what == "replay" {
		s.relay.counts.Replayed++
		s.tracef("attack relay %s replays an old delta of %s by %s to n%d", from.id, bad.Namespace, bad.Author, to)
		s.postMessage(from, to, &wire.Message{Kind: wire.KindTree, Overlay: m.Overlay, Tree: m.Tree, Deltas: []wire.NamespaceDelta{bad}}, it.checks)
		return frame
	}
	s.relay.counts.Altered++
	s.tracef("attack relay %s alters %s's delta of %s to n%d: %s", from.id, nd.Author, nd.Namespace, to, what)
	m.Deltas = []wire.NamespaceDelta{bad}
	out, err := s.codec.Encode(m)
	if err != nil {
		s.violate("encode relay attack: %v", err)
		return frame
	}
	return out
}

// alterRelayed picks the hostile relay's alteration of nd (seen: the
// genuine payloads it relayed before nd; ctx: its context of nd's
// namespace when it sent nd) and returns what it did and the payload to
// send.
func (s *Sim) alterRelayed(from *simNode, to int, nd wire.NamespaceDelta, seen []wire.NamespaceDelta, ctx *crdt.Context) (string, wire.NamespaceDelta) {
	bad := nd
	var others []wire.NamespaceDelta // genuine payloads of other authors
	for _, o := range seen {
		if o.Author != nd.Author {
			others = append(others, o)
		}
	}
	kind := s.rng.IntN(5)
	if s.cfg.hooks.bypassRelay {
		kind = 1
	}
	switch {
	case kind == 4 && len(seen) > 0:
		return "replay", seen[s.rng.IntN(len(seen))]
	case kind == 1:
		d, err := crdt.DecodeMap(nd.Delta, crdt.DefaultLimits())
		if err != nil || ctx == nil {
			break
		}
		d.Context().Join(ctx)
		if enc := d.Encode(); string(enc) != string(nd.Delta) {
			bad.Delta = enc
			if s.cfg.hooks.bypassRelay && s.nodes[to].up {
				if _, err := s.nodes[to].svc.Store().Apply(map[string]*crdt.Map{nd.Namespace: d}); err != nil {
					s.violate("hook: %v", err)
				}
			}
			return "its context widened to the relay's", bad
		}
	case kind == 2:
		var names []string
		for _, o := range s.nodes {
			if o.up && o.member && o != from && o.idx != to && string(o.id) != nd.Author {
				names = append(names, string(o.id))
			}
		}
		if len(names) > 0 {
			bad.Author = names[s.rng.IntN(len(names))]
			return "author named " + bad.Author, bad
		}
	case kind == 3 && len(others) > 0:
		o := others[s.rng.IntN(len(others))]
		bad.Delta, bad.Sig, bad.From = o.Delta, o.Sig, o.From
		return "swapped for a delta by " + o.Author, bad
	}
	bad.Delta = append([]byte(nil), nd.Delta...)
	bad.Delta[s.rng.IntN(len(bad.Delta))] ^= 1 << s.rng.IntN(8)
	return "a byte flipped", bad
}

// postMessage encodes m and posts it from one node to another as a frame
// its loop sent (checks: the read check's violations made when it sent
// the frame m goes beside, of the same namespace).
func (s *Sim) postMessage(from *simNode, to int, m *wire.Message, checks []string) {
	frame, err := s.codec.Encode(m)
	if err != nil {
		s.violate("encode relay attack: %v", err)
		return
	}
	g, err := s.codec.Peek(frame)
	if err != nil {
		s.violate("peek relay attack: %v", err)
		return
	}
	s.post(from, to, g, frame, nil, checks)
}
