package cluster

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// pullNet is three stepped nodes where node 2 never talks to node 0 (a
// cut both ways) and, while hiding is set, hears no binding that names
// node 0's key from anyone: what node 0 writes reaches node 2 only in node
// 1's sync answers, before the binding that lets it pass. pulls counts
// the pull frames node 2 sends node 1 (BindingsOf).
type pullNet struct {
	*steppedNet
	hiding bool
	pulls  int
}

func newPullNet(t *testing.T, seed uint64) *pullNet {
	pn := &pullNet{steppedNet: newSteppedNet(t, 3, seed), hiding: true}
	codec := wire.NewCodec(0)
	key0 := pn.nodes[0].id.Public
	pn.cut = func(from, to int) bool { return from+to == 2 && from != 1 }
	pn.lose = func(from, to int, frame []byte) bool {
		m, err := codec.Decode(frame)
		if err != nil || m.Kind != wire.KindBindings {
			return false
		}
		if from == 2 && len(m.BindingsOf) > 0 {
			pn.pulls++
		}
		if !pn.hiding || to != 2 {
			return false
		}
		for _, e := range m.Bindings {
			if b, err := acl.DecodeBinding(e); err == nil && b.Key.Equal(key0) {
				return true
			}
		}
		return false
	}
	pn.join()
	n1 := pn.nodes[1]
	for tick := 0; agentsOn(pn.nodes[2].st, n1.id.NodeID()) != "agent://n1" || agentsOn(n1.st, pn.nodes[0].id.NodeID()) != "agent://n0" ||
		agentsOn(n1.st, pn.nodes[2].id.NodeID()) != "agent://n2"; tick++ {
		if tick == 600 {
			t.Fatal("node 1 never learned the other two bindings, or node 2 node 1's")
		}
		pn.tick()
	}
	return pn
}

// A write that reaches a node before the binding of its author's node
// (node 0's save, in node 1's sync answer to node 2) is refused, and node
// 2 pulls the binding from node 1, which holds it (it accepted the
// write): the write is applied seconds later, well before the digest
// round (BindingsInterval) would have brought the binding.
func TestRefusedDeltaPullsItsBindingFromTheSender(t *testing.T) {
	pn := newPullNet(t, 5)
	n0, n2 := pn.nodes[0], pn.nodes[2]
	id := pn.save(n0, "team://core", "pulled binding note")
	for tick := 0; !pn.nodes[1].has(id); tick++ {
		if tick == 100 {
			t.Fatal("node 1 never got node 0's save")
		}
		pn.tick()
	}
	// Node 2 refuses it while it cannot know who wrote it.
	for tick := 0; pn.pulls == 0; tick++ {
		if tick == 100 {
			t.Fatal("node 2 never pulled the binding it lacked")
		}
		pn.tick()
		if n2.has(id) {
			t.Fatal("a write whose author's node is unknown here was applied")
		}
	}
	pn.hiding = false
	start := pn.clock.Now()
	for !n2.has(id) {
		if pn.clock.Now().Sub(start) > BindingsInterval/3 {
			t.Fatalf("node 2 did not get the write within %v of the binding being reachable (pulls %d)", BindingsInterval/3, pn.pulls)
		}
		pn.tick()
	}
	if agentsOn(n2.st, n0.id.NodeID()) != "agent://n0" {
		t.Fatal("node 2 applied the write without node 0's binding")
	}
	if st := n2.st.Status(false); st.BindingPulls == 0 {
		t.Fatalf("status counts no pull: %+v", st)
	}
}

// A writer whose binding never comes (to node 2, as a forged author's
// never comes to anyone) keeps its write refused, and the pulls refusals
// cause stay bounded: one per (peer, replica) per bindingsPullGap however
// many refusals name it, and at most maxPullsPerPeer replicas of a peer
// however many forged writers a member makes up.
func TestUnanswerablePullsStayBounded(t *testing.T) {
	pn := newPullNet(t, 6)
	n1, n2 := pn.nodes[1], pn.nodes[2]
	id := pn.save(pn.nodes[0], "team://core", "never bound here")
	pn.pulls = 0
	start := pn.clock.Now()
	const span = 60 * time.Second
	for pn.clock.Now().Sub(start) < span {
		pn.tick()
	}
	if n2.has(id) {
		t.Fatal("a write whose author's node is unknown here was applied")
	}
	if bound := int(span/bindingsPullGap) + 1; pn.pulls == 0 || pn.pulls > bound {
		t.Fatalf("node 2 sent %d pulls in %v, want 1..%d", pn.pulls, span, bound)
	}
	t.Logf("%d pulls in %v, %d refusals", pn.pulls, span, n2.st.Status(false).Rejected)

	// A burst of refusals in one instant: one writer named 100 times,
	// then 200 forged writers.
	from := replica.PeerID(n1.id.NodeID())
	writer := pn.nodes[0].id.ReplicaID()
	pn.pulls = 0
	for range 100 {
		n2.st.pullForRejection(from, "team://t", &replica.WriterError{Replica: writer, Err: replica.ErrNotAllowed}, nil)
	}
	pn.run()
	if pn.pulls > 1 {
		t.Fatalf("100 refusals naming one writer in one instant sent %d pulls, want at most 1", pn.pulls)
	}
	for r := range 200 {
		n2.st.pullForRejection(from, "team://t", &replica.WriterError{Replica: crdt.ReplicaID(r + 1), Err: replica.ErrNotAllowed}, nil)
	}
	pn.run()
	if got := len(n2.st.bx.pulled[from]); pn.pulls == 0 || got > maxPullsPerPeer {
		t.Fatalf("200 forged writers: %d pulls, %d replicas remembered, want some and at most %d", pn.pulls, got, maxPullsPerPeer)
	}
}

// A delta held for its writer's binding (the engine's writer hold) has
// that binding pulled again while it waits, so a pull whose answer was
// lost costs one more small frame, not the content again: once the
// binding is reachable node 2 applies the write it holds without node 1
// sending it again (without the pulls again, the hold ran out and node 2
// asked node 1 for a sync, whose answer brought the write a second time).
func TestHeldDeltaPullsItsBindingAgain(t *testing.T) {
	pn := newPullNet(t, 7)
	n0, n2 := pn.nodes[0], pn.nodes[2]
	codec := wire.NewCodec(0)
	unhidden, resent := false, 0
	lose := pn.lose
	pn.lose = func(from, to int, frame []byte) bool {
		if m, err := codec.Decode(frame); err == nil && unhidden && from == 1 && to == 2 && m.Kind == wire.KindSyncReply {
			for _, nd := range m.Deltas {
				if d, err := crdt.DecodeMap(nd.Delta, crdt.DefaultLimits()); err == nil && nd.Namespace == "team://core" && d.Len() > 0 {
					resent++
					t.Logf("resent at %v, asked %v, held %+v", pn.clock.Now(), n2.st.loop.eng.SyncStats().Asked, n2.st.loop.eng.SyncStats())
				}
			}
		}
		return lose(from, to, frame)
	}
	id := pn.save(n0, "team://core", "held, then pulled again")
	for tick := 0; n2.st.loop.eng.SyncStats().WriterHeld == 0; tick++ {
		if tick == 200 {
			t.Fatal("node 2 never held node 0's write")
		}
		pn.tick()
	}
	held := n2.st.loop.eng.SyncStats()
	pn.hiding, unhidden = false, true
	t.Logf("unhidden at %v", pn.clock.Now())
	for tick := 0; !n2.has(id); tick++ {
		if tick == 200 {
			t.Fatal("node 2 never applied the write it held")
		}
		pn.tick()
	}
	if s := n2.st.loop.eng.SyncStats(); s.WriterReleased == 0 || s.WriterExpired > held.WriterExpired {
		t.Fatalf("held %d, passed %d, ran out %d (%d before the binding was reachable); want it passed from the hold", s.WriterHeld, s.WriterReleased, s.WriterExpired, held.WriterExpired)
	}
	if resent > 0 {
		t.Fatalf("node 1 sent the write again %d times", resent)
	}
}

// A refusal for an acl record whose signer no binding here names asks for
// that signer's binding (unboundSignersIn, which pullForRejection adds to
// the writers of the refused delta): an outsider's creation of team://x,
// signed by a key node 0 cannot tie to agent://x, names the outsider's
// replica until its binding is admitted, and then nothing.
func TestUnboundSignerIsNamedUntilBound(t *testing.T) {
	net := newSteppedNet(t, 2, 16)
	net.join()
	var seed [32]byte
	seed[0] = 99
	x, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	agent := namespace.MustParse("agent://x")
	svc, err := memory.Open(memory.Config{Agent: agent, Replica: x.ReplicaID(), Authorizer: sharedOK{}, Identity: x,
		Now: net.clock.Now, Rand: rand.NewChaCha8(seed), KV: store.NewMemKV()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	var d *crdt.Map
	svc.OnLocalDelta(func(ns string, delta *crdt.Map) {
		if ns != "team://x" {
			return
		}
		if d == nil {
			d = delta.Clone()
		} else {
			d.Join(delta)
		}
	})
	if _, err := svc.CreateNamespace(context.Background(), memory.Caller{Principal: agent}, "team://x"); err != nil {
		t.Fatal(err)
	}
	if d == nil {
		t.Fatal("creating team://x made no delta of it")
	}
	l := net.nodes[0].st.loop
	addr := namespace.MustParse("team://x")
	named := func() map[crdt.ReplicaID]bool {
		pol := l.svc.PolicyWithDelta("team://x", d)
		if pol == nil {
			t.Fatal("no policy for a delta carrying acl records")
		}
		return l.unboundSignersIn(pol, addr, nil)
	}
	if got := named(); len(got) != 1 || !got[x.ReplicaID()] {
		t.Fatalf("unbound signer: named %v, want only the outsider's replica %v", got, x.ReplicaID())
	}
	b, err := acl.NewBinding(x, agent, crdt.Timestamp(1))
	if err != nil {
		t.Fatal(err)
	}
	l.admitBindings("", [][]byte{b.Encode()})
	if k, ok := l.keyOf(agent); !ok || !k.Equal(x.Public) {
		t.Fatal("the outsider's binding was not admitted")
	}
	if got := named(); len(got) != 0 {
		t.Fatalf("once bound, the signer is still named: %v", got)
	}
}
