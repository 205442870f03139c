package sim

import (
	"fmt"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/sync/wire"
)

// A hostile member is a node of the cluster (it holds the cluster's trust:
// its key is a member's, its frames pass the transport) whose agent may
// read a namespace but not write it. Its frames go to a holder through the
// same Deliver path a peer's frames take, so the receiving node's real
// loop, engine and service judge them:
//
//   - forged write: a record in its own replica's name, its own genuine
//     seal; refused for want of write;
//   - forged dots: a record whose dots name a writer's replica, sealed with
//     the attacker's own key (so the writer's dots stay unsealed);
//   - impersonation: a binding claiming a writer's agent for the attacker's
//     key, then a record authored by that agent;
//   - erasure: a sync reply claiming the target's whole causal context and
//     holding no record (before the trust work, it removed everything), and
//     a retract of a held id;
//   - flood: a sync request naming the namespace a thousand times.
//
// A forged record's id goes on s.forged, so the write checker fires if it
// is applied anywhere; an applied erasure shows as a lost acknowledged
// write and a convergence failure. Replays need nothing here: the network
// duplicates frames (Config.Dup).

// opForge picks a live member that may read but never wrote a namespace
// and has it attack a holder.
func (s *Sim) opForge() {
	var cand [][2]int
	for i, n := range s.nodes {
		if !n.up || !n.member {
			continue
		}
		for j := range s.nss {
			if s.read[i][j] && !s.everWrit[i][j] {
				cand = append(cand, [2]int{i, j})
			}
		}
	}
	if len(cand) == 0 {
		s.stats.skipped++
		return
	}
	p := cand[s.wr.IntN(len(cand))]
	// With trees on the namespace, one attack in three (every one under
	// hooks.relayOnly) is a hostile relay (trees.go); runs without trees
	// draw exactly as before.
	if s.treesOn(p[1]) && (s.cfg.hooks.relayOnly || s.wr.IntN(3) == 0) {
		s.armRelay(s.nodes[p[0]], p[1])
		return
	}
	if !s.attack(s.nodes[p[0]], p[1]) {
		s.stats.skipped++
	}
}

// attack sends one attack from n on namespace j to a holder.
func (s *Sim) attack(n *simNode, j int) bool {
	ns := s.nss[j]
	var targets []*simNode
	for _, t := range s.nodes {
		if t != n && t.up && t.member && s.read[t.idx][j] {
			targets = append(targets, t)
		}
	}
	var writers []*simNode
	for _, w := range s.nodes {
		if w != n && s.write[w.idx][j] {
			writers = append(writers, w)
		}
	}
	if len(targets) == 0 || len(writers) == 0 {
		return false
	}
	t := targets[s.wr.IntN(len(targets))]
	w := writers[s.wr.IntN(len(writers))]
	ts := crdt.MakeTimestamp(s.nodeWall(n).UnixMilli(), 0)
	kind := s.wr.IntN(5)
	if s.cfg.hooks.bypassWrite {
		kind = 0
	}
	var msgs []*wire.Message
	switch kind {
	case 0, 1, 2:
		id := fmt.Sprintf("forged%d", s.stats.ops)
		rep, ctx := n.ident.ReplicaID(), t.svc.Store().Context(ns)
		author := n.principal
		what := "write"
		switch kind {
		case 1: // dots far ahead of the writer's own, so an accepted forgery could not hide behind a real write
			rep, what = w.ident.ReplicaID(), "dots of "+string(w.id)
			ctx = contextAt(rep, ctx.Max(rep)+1_000_000)
		case 2:
			// Only an agent the target already knows the host of: trust on
			// first use cannot stop a member from claiming the name of an
			// agent whose node has not reached the target yet (see doc.go,
			// "Found").
			if host, ok := t.loop.HostedElsewhere(w.principal); !ok || host != acl.NodeID(w.id) {
				return false
			}
			author, what = w.principal, "impersonating "+w.principal.String()
			b, err := acl.NewBinding(n.ident, w.principal, crdt.Timestamp(s.nodeWall(n).UnixNano()))
			if err != nil {
				return false
			}
			msgs = append(msgs, &wire.Message{Kind: wire.KindBindings, Bindings: [][]byte{b.Encode()}})
		}
		e, err := crdt.NewEdit(ctx, nil, rep, id, crdt.DefaultLimits())
		if err != nil {
			return false
		}
		if err := firstErr(e.Set(ts, schema.FieldTitle, []byte("forged")), e.Set(ts, schema.FieldContent, []byte("forged "+what)),
			e.Set(ts, schema.FieldType, []byte("observation")), e.Set(ts, schema.FieldAuthor, []byte(author.String())),
			schema.Touch(e, ts, s.nodeWall(n))); err != nil {
			return false
		}
		d := e.Delta()
		d.Seal(ns, n.ident.Signer()) // its own, genuine seal
		if s.cfg.hooks.bypassWrite {
			if _, err := t.svc.Store().Apply(map[string]*crdt.Map{ns: d}); err != nil {
				s.violate("hook: %v", err)
			}
		}
		msgs = append(msgs, s.signedDelta(n, wire.KindSyncReply, ns, d))
		s.forged = append(s.forged, forgedOp{ns: ns, id: id, by: n.idx})
		s.stats.forgedN++
		s.tracef("attack forged %s %s %s from %s to %s", what, ns, id, n.id, t.id)
	case 3:
		erase := crdt.AssembleMap(t.svc.Store().Context(ns), nil, nil)
		if ids := t.state(ns).EntryIDs(); len(ids) > 0 {
			erase.Join(crdt.NewMap().Retract(ids[s.wr.IntN(len(ids))]))
		}
		msgs = append(msgs, s.signedDelta(n, wire.KindSyncReply, ns, erase))
		s.stats.attacks++
		s.tracef("attack erase %s from %s to %s", ns, n.id, t.id)
	case 4:
		m := &wire.Message{Kind: wire.KindSyncRequest, Reply: true}
		nc := wire.NamespaceContext{Namespace: ns, Context: crdt.NewContext().Encode()}
		for range 1000 {
			m.Contexts = append(m.Contexts, nc)
		}
		msgs = append(msgs, m)
		s.stats.attacks++
		s.tracef("attack flood %s from %s to %s", ns, n.id, t.id)
	}
	// Never granted write on ns later: a frame still in flight would then
	// come from a writer, whose removals count.
	s.forgers[[2]int{n.idx, j}] = true
	for _, m := range msgs {
		frame, err := s.codec.Encode(m)
		if err != nil {
			s.violate("encode attack: %v", err)
			return true
		}
		s.transmit(n.idx, t.idx, frame)
	}
	return true
}

// contextAt is a context holding replica r's dots 1..max, so an edit made
// against it allocates r's counter max+1.
func contextAt(r crdt.ReplicaID, max uint64) *crdt.Context {
	c := crdt.NewContext()
	c.Add(crdt.Dot{Replica: r, Counter: max})
	return c
}

// signedDelta wraps d as n's signed namespace delta of kind.
func (s *Sim) signedDelta(n *simNode, kind wire.Kind, ns string, d *crdt.Map) *wire.Message {
	nd := wire.NamespaceDelta{Namespace: ns, Delta: d.Encode()}
	nd.Sign(kind, n.ident.Signer())
	return &wire.Message{Kind: kind, Deltas: []wire.NamespaceDelta{nd}}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
