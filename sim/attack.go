package sim

import (
	"fmt"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/sync/wire"
)

// A hostile member's repertoire beyond the forged write of opForge, each
// sent as raw frames from a node that may read but not write the namespace
// to a holder, through the same Step path a peer's frames take:
//
//   - forged dots: a record whose dots name a writer's replica, sealed with
//     the attacker's own key (so the writer's dots stay unsealed);
//   - erasure: a sync reply claiming the target's whole causal context and
//     holding no record (before the trust work, it removed everything), and
//     a retract of a held id;
//   - flood: a sync request naming the namespace a thousand times.
//
// A forged record's id goes on s.forged, so the write checker fires if it is
// applied anywhere; an applied erasure shows as a lost acknowledged write
// and a convergence failure. Replays need nothing here: the network
// duplicates frames (Config.Dup).

// attack sends one of the attacks above from n on namespace j, reporting
// false (nothing done) when opForge should send its plain forged write.
func (s *Sim) attack(n *simNode, j int) bool {
	kind := s.rng.IntN(4)
	if kind == 0 || s.cfg.hooks.openWrite {
		// (The openWrite hook proves the write checker with plain forged
		// writes; an erasure let through as well would remove them.)
		return false
	}
	ns := s.nss[j]
	var targets []*simNode
	for _, t := range s.nodes {
		if t != n && t.up && t.member && s.read[t.idx][j] {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return false
	}
	t := targets[s.rng.IntN(len(targets))]
	var msg *wire.Message
	switch kind {
	case 1:
		var writers []*simNode
		for _, w := range s.nodes {
			if s.write[w.idx][j] {
				writers = append(writers, w)
			}
		}
		if len(writers) == 0 {
			return false
		}
		w := writers[s.rng.IntN(len(writers))]
		id := fmt.Sprintf("forged%d", s.stats.ops)
		// dots far ahead of the writer's own, so an accepted forgery
		// could not hide behind a real write
		m := crdt.NewMap()
		ctx := t.st.Context(ns)
		e, err := crdt.NewEdit(crdtContextAt(w.rep, ctx.Max(w.rep)+1_000_000), nil, w.rep, id, crdt.DefaultLimits())
		if err != nil {
			return false
		}
		ts := n.clock.Now(s.wall())
		if err := firstErr(e.Set(ts, schema.FieldTitle, []byte("forged in "+string(w.id))), schema.Touch(e, ts, s.wall())); err != nil {
			return false
		}
		d := e.Delta()
		d.Seal(ns, n.signer())
		m.Join(d)
		s.forged = append(s.forged, forgedOp{ns: ns, id: id, by: n.idx})
		msg = s.signedDelta(n, wire.KindSyncReply, ns, m)
		s.tracef("attack forged-dots %s %s as %s from %s to %s", ns, id, w.id, n.id, t.id)
	case 2:
		erase := crdt.AssembleMap(t.st.Context(ns), nil, nil)
		if ids := t.st.Map(ns).EntryIDs(); len(ids) > 0 {
			erase.Join(crdt.NewMap().Retract(ids[s.rng.IntN(len(ids))]))
		}
		msg = s.signedDelta(n, wire.KindSyncReply, ns, erase)
		s.tracef("attack erase %s from %s to %s", ns, n.id, t.id)
	case 3:
		msg = &wire.Message{Kind: wire.KindSyncRequest, Reply: true}
		nc := wire.NamespaceContext{Namespace: ns, Context: crdt.NewContext().Encode()}
		for range 1000 {
			msg.Contexts = append(msg.Contexts, nc)
		}
		s.tracef("attack flood %s from %s to %s", ns, n.id, t.id)
	}
	frame, err := s.codec.Encode(msg)
	if err != nil {
		s.sentViols = append(s.sentViols, fmt.Sprintf("encode attack: %v", err))
		return true
	}
	s.stats.attacks++
	// Never granted write on ns later: a frame still in flight would then
	// come from a writer, whose removals count.
	s.forgers[[2]int{n.idx, j}] = true
	s.schedule(&event{at: s.now + s.latency(n.idx, t.idx), kind: evDeliver, node: t.idx, from: n.idx, inc: t.inc, frame: frame})
	return true
}

// crdtContextAt is a context holding replica r's dots 1..max, so an edit
// made against it allocates r's counter max+1.
func crdtContextAt(r crdt.ReplicaID, max uint64) *crdt.Context {
	c := crdt.NewContext()
	c.Add(crdt.Dot{Replica: r, Counter: max})
	return c
}

// signedDelta wraps d as n's signed namespace delta of kind.
func (s *Sim) signedDelta(n *simNode, kind wire.Kind, ns string, d *crdt.Map) *wire.Message {
	nd := wire.NamespaceDelta{Namespace: ns, Delta: d.Encode()}
	nd.Sign(kind, n.signer())
	return &wire.Message{Kind: kind, Deltas: []wire.NamespaceDelta{nd}}
}
