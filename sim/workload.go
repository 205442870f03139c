package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/sync/wire"
)

// The workload is what agents do, through the memory service's public API
// on the node that hosts them: saves, updates, soft deletes, tag edits,
// retracts and shares of their own memories into a shared namespace; the
// namespaces' creators grant and revoke; hostile members forge (attack.go).
// An operation is acknowledged when the call returns without error: its
// deltas (what the service handed its replication listeners during the
// call) are then what no crash or loss may take away.

// words is the vocabulary of saved content, so that queries match.
var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
	mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
	amber basalt cedar dune ember fjord granite harbor island jasper`)

type ackedOp struct {
	ns, id, kind string
	dots         []crdt.Dot
	at           time.Duration
}

type forgedOp struct {
	ns, id string
	by     int
}

// listen is the sim's own listener on a node's local deltas (beside the
// loop's): the deltas of the operation in progress.
func (s *Sim) listen(n *simNode) {
	n.svc.OnLocalDelta(func(ns string, d *crdt.Map) {
		if s.opNode == n {
			s.opDeltas = append(s.opDeltas, nsDelta{ns, d})
		}
	})
}

type nsDelta struct {
	ns string
	d  *crdt.Map
}

// acknowledge records a successful operation: every dot its deltas carry.
func (s *Sim) acknowledge(n *simNode, kind, ns, id string) {
	for _, nd := range s.opDeltas {
		if !memory.Replicated(nd.ns) {
			continue
		}
		op := ackedOp{ns: nd.ns, id: id, kind: kind, at: s.now}
		nd.d.Records(func(_ string, r *crdt.Record) bool {
			op.dots = append(op.dots, r.Dots()...)
			return true
		})
		if nd.ns != ns || kind == "grant" || kind == "revoke" {
			op.id = "" // an acl record or a side effect: its dots, not a memory id
		}
		s.acked = append(s.acked, op)
		if j, ok := s.nsIdx[nd.ns]; ok {
			s.stats.minDeltaBytes += uint64(len(nd.d.Encode())) * uint64(s.holders(j, n.idx))
			if s.cfg.measureState {
				s.stats.stateBytes += uint64(len(n.state(nd.ns).Encode())) * uint64(s.holders(j, n.idx))
			}
			if kind != "retract" && len(op.dots) > 0 {
				s.maybeTrack(n, nd.ns, op.dots[0])
			}
		}
	}
	s.tracef("op %s %s %s on %s", kind, ns, id, n.id)
}

// run calls fn as an agent on n would, collecting the deltas it writes,
// then lets n's loop send them.
func (s *Sim) run(n *simNode, fn func(ctx context.Context) error) error {
	s.opNode, s.opDeltas = n, nil
	err := fn(context.Background())
	s.opNode = nil
	if n.cutDone { // the power went mid-write
		s.tracef("crash n%d in the middle of a write (%v)", n.idx, err)
		s.stats.cutWrites++
		s.crash(n)
		if err == nil {
			// The agent was told it is done though a write of the call
			// never became durable: an acknowledgement a restart may not
			// keep.
			s.violate("durability: n%d acknowledged a call whose write the power cut", n.idx)
		}
		return fmt.Errorf("sim: the node died in the middle of the write: %w", err)
	}
	n.loop.Pump()
	s.noteTrees(n)
	return err
}

// op runs one workload operation chosen from the seed.
func (s *Sim) op() {
	s.stats.ops++
	x := s.wr.Float64()
	switch {
	case x < 0.04:
		s.opGrant()
		return
	case x < 0.07:
		s.opRevoke()
		return
	case x < 0.11:
		s.opForge()
		return
	case x < 0.13:
		s.opDecide()
		return
	case x < 0.14:
		s.opRevokeCapsule()
		return
	}
	n := s.pickLive()
	if n == nil {
		s.stats.skipped++
		return
	}
	switch {
	case x < 0.17:
		s.opEdit(n)
		return
	case x < 0.19:
		s.opCapsule(n)
		return
	case x < 0.20:
		s.opProjection(n)
		return
	}
	var nsw []int
	for j := range s.nss {
		if s.write[n.idx][j] {
			nsw = append(nsw, j)
		}
	}
	if len(nsw) == 0 {
		s.stats.skipped++
		return
	}
	j := nsw[s.wr.IntN(len(nsw))]
	ns := s.nss[j]
	ids := s.ids[j]
	kind := "save"
	switch y := s.wr.Float64(); {
	case len(ids) == 0 || y < 0.3:
	case y < 0.34:
		kind = "share"
	case y < 0.38:
		kind = "promote"
	case y < 0.65:
		kind = "update"
	case y < 0.75:
		kind = "delete"
	case y < 0.93:
		kind = "tags"
	default:
		kind = "retract"
	}
	id := ""
	if kind != "save" && kind != "share" && kind != "promote" {
		id = ids[s.wr.IntN(len(ids))]
	}
	text := s.text()
	err := s.run(n, func(ctx context.Context) error {
		switch kind {
		case "save":
			r, err := n.svc.Save(ctx, n.me, memory.SaveRequest{Namespace: ns, Type: "observation", Title: text[:min(len(text), 24)],
				Content: text, Tags: []string{s.tag()}})
			id = r.ID
			return err
		case "share":
			// an agent shares one of its own memories: saved in its private
			// namespace, copied into the shared one
			r, err := n.svc.Save(ctx, n.me, memory.SaveRequest{Type: "decision", Content: text, Tags: []string{s.tag()}})
			if err != nil {
				return err
			}
			sh, err := n.svc.Share(ctx, n.me, memory.ShareRequest{ID: r.ID, Namespace: ns})
			id = sh.Memory.ID
			return err
		case "promote":
			// as share, but through Promote: a copy, or a move that leaves
			// a reference in the agent's namespace
			r, err := n.svc.Save(ctx, n.me, memory.SaveRequest{Type: "decision", Content: text, Tags: []string{s.tag()}})
			if err != nil {
				return err
			}
			mode := "copy"
			if s.wr.IntN(2) == 0 {
				mode = "move"
			}
			sh, err := n.svc.Promote(ctx, n.me, memory.PromoteRequest{ID: r.ID, Namespace: ns, Mode: mode})
			id = sh.Memory.ID
			return err
		case "update":
			_, err := n.svc.Update(ctx, n.me, id, memory.UpdateRequest{Content: &text})
			return err
		case "delete":
			return n.svc.Delete(ctx, n.me, id, false)
		case "tags":
			m, err := n.svc.Get(ctx, n.me, id, true)
			if err != nil {
				return err
			}
			tags, tag := slices.Clone(m.Tags), s.tag()
			if i := slices.Index(tags, tag); i >= 0 {
				if s.cfg.NoSetRemoves {
					return errors.New("tag present and removes are off")
				}
				tags = slices.Delete(tags, i, i+1)
			} else {
				tags = append(tags, tag)
			}
			_, err = n.svc.Update(ctx, n.me, id, memory.UpdateRequest{Tags: &tags})
			return err
		case "retract":
			return n.svc.Retract(ctx, n.me, id)
		}
		return nil
	})
	if err != nil {
		s.tracef("op %s %s %s on %s refused: %v", kind, ns, id, n.id, err)
		s.stats.skipped++
		return
	}
	switch kind {
	case "save", "share", "promote":
		s.stats.saves++
		s.ids[j] = append(s.ids[j], id)
	case "update":
		s.stats.updates++
	case "delete":
		s.stats.deletes++
	case "tags":
		s.stats.tagOps++
	case "retract":
		s.stats.retracts++
		s.retracted = append(s.retracted, retraction{ns: ns, id: id})
	}
	if kind == "share" || kind == "promote" {
		s.stats.shares++
	}
	if s.cfg.hooks.lostRetract && kind == "save" && len(s.retracted) == 0 {
		s.retracted = append(s.retracted, retraction{ns: ns, id: id})
	}
	if s.cfg.hooks.leak && kind == "save" {
		s.leak(n, j)
	}
	if s.cfg.hooks.dropAcked && s.stats.saves == 1 && kind == "save" {
		s.opDeltas = nil // test hook: acknowledged, then the checker is told of a write nobody has
		s.acked = append(s.acked, ackedOp{ns: ns, id: "dropped", kind: kind, at: s.now,
			dots: []crdt.Dot{{Replica: n.ident.ReplicaID(), Counter: 1 << 40}}})
	}
	s.acknowledge(n, kind, ns, id)
}

type retraction struct{ ns, id string }

// leak sends namespace j's content from n to a node never granted it, as a
// loop that forgot to ask the policy would (test hook).
func (s *Sim) leak(n *simNode, j int) {
	for _, t := range s.nodes {
		if !s.everRead[t.idx][j] {
			frame, err := s.codec.Encode(s.signedDelta(n, wire.KindSyncReply, s.nss[j], n.state(s.nss[j])))
			if err == nil {
				s.send(n, string(t.id), frame)
			}
			return
		}
	}
}

// text is a few words of the vocabulary.
func (s *Sim) text() string {
	k := 3 + s.wr.IntN(5)
	w := make([]string, k)
	for i := range w {
		w[i] = words[s.wr.IntN(len(words))]
	}
	return strings.Join(w, " ") + fmt.Sprintf(" #%d", s.stats.ops)
}

func (s *Sim) tag() string { return fmt.Sprintf("t%d", s.wr.IntN(5)) }

// holders counts the members other than self that should receive ns now.
func (s *Sim) holders(j, self int) int {
	c := 0
	for i, n := range s.nodes {
		if i != self && n.member && s.read[i][j] {
			c++
		}
	}
	return c
}

func (s *Sim) pickLive() *simNode {
	var c []*simNode
	for _, n := range s.nodes {
		if n.up && n.member {
			c = append(c, n)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[s.wr.IntN(len(c))]
}
