package replica

import (
	"bytes"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

func TestCompareContexts(t *testing.T) {
	ctx := func(dots ...crdt.Dot) *crdt.Context {
		c := crdt.NewContext()
		for _, d := range dots {
			c.Add(d)
		}
		return c
	}
	a1, a2, b1 := crdt.Dot{Replica: 1, Counter: 1}, crdt.Dot{Replica: 1, Counter: 2}, crdt.Dot{Replica: 2, Counter: 1}
	for _, c := range []struct {
		ours, theirs *crdt.Context
		want         Agreement
	}{
		{ctx(), ctx(), AgreeEqual},
		{ctx(a1, b1), ctx(a1, b1), AgreeEqual},
		{ctx(a1, a2), ctx(a1), AgreeBehind},
		{ctx(a1), ctx(), AgreeBehind},
		{ctx(a1), ctx(a1, b1), AgreeAhead},
		{ctx(a1, a2), ctx(a1, b1), AgreeConcurrent},
	} {
		if got := compareContexts(c.ours, c.theirs); got != c.want {
			t.Errorf("ours %v, theirs %v: %s, want %s", c.ours.Vector(), c.theirs.Vector(), got, c.want)
		}
	}
}

// agreementOf is what nd's engine says of peer on ns ("" if nothing).
func agreementOf(nd *node, peer PeerID, ns string) (PeerAgreement, bool) {
	for _, a := range nd.eng.Agreement() {
		if a.Peer == peer && a.Namespace == ns {
			return a, true
		}
	}
	return PeerAgreement{}, false
}

func TestAgreementFollowsToldContexts(t *testing.T) {
	c := newCluster(t, 2, Config{}, openPolicy{}, 1)
	c.pump(10)
	n0, n1 := c.nodes[0], c.nodes[1]
	const ns = "team://a"
	c.write(0, ns, "m1", "title", "one")
	c.pump(10)
	if got := n0.eng.Agreement(); len(got) != 0 {
		t.Fatalf("agreement before any sync of %s: %+v", ns, got)
	}

	c.tick(time.Second)
	told := c.now
	if err := n0.eng.RequestSync(n1.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	for _, pair := range []struct{ at, peer *node }{{n0, n1}, {n1, n0}} {
		a, ok := agreementOf(pair.at, pair.peer.id, ns)
		if !ok || a.Agreement != AgreeEqual || !a.Told.Equal(told) {
			t.Fatalf("%s on %s after a sync: %+v (known %v), want equal told at %v", pair.at.id, pair.peer.id, a, ok, told)
		}
	}

	// A write here: the peer's context, as it told it, lacks it.
	c.tick(time.Second)
	c.drop = func(_, _ PeerID, m *wire.Message) bool { return m.Kind == wire.KindDeltas }
	c.write(0, ns, "m2", "title", "two")
	c.pump(10)
	if a, _ := agreementOf(n0, n1.id, ns); a.Agreement != AgreeBehind || !a.Told.Equal(told) {
		t.Fatalf("n0 on n1 after a local write: %+v, want behind, told at %v", a, told)
	}
	if a, _ := agreementOf(n1, n0.id, ns); a.Agreement != AgreeEqual {
		t.Fatalf("n1 on n0 before hearing of the write: %+v, want equal (as last told)", a)
	}

	// n0 asks again, its request handed to n1 by hand to look before n1
	// has anything more: n1 learns n0 is ahead.
	c.drop = nil
	if err := n0.eng.RequestSync(n1.id, ns); err != nil {
		t.Fatal(err)
	}
	rd := n0.eng.Ready()
	n0.eng.Advance(nil)
	for _, env := range rd.Messages {
		if env.To != n1.id || env.Msg.Kind != wire.KindSyncRequest {
			continue
		}
		if err := n1.eng.Step(n0.id, env.Msg); err != nil {
			t.Fatal(err)
		}
	}
	if a, _ := agreementOf(n1, n0.id, ns); a.Agreement != AgreeAhead || !a.Told.Equal(c.now) {
		t.Fatalf("n1 on n0 on a request carrying a write it lacks: %+v, want ahead told at %v", a, c.now)
	}
	// n1 gets m2 in n0's answer to n1's context, after n1 has told its
	// own: n0 still knows n1 as behind until the next sync tells it more.
	c.pump(10)
	if a, _ := agreementOf(n0, n1.id, ns); a.Agreement != AgreeBehind {
		t.Fatalf("n0 on n1 before n1 told it has m2: %+v, want behind", a)
	}
	if err := n0.eng.RequestSync(n1.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	for _, pair := range []struct{ at, peer *node }{{n0, n1}, {n1, n0}} {
		if a, _ := agreementOf(pair.at, pair.peer.id, ns); a.Agreement != AgreeEqual {
			t.Fatalf("%s on %s after catching up: %+v, want equal", pair.at.id, pair.peer.id, a)
		}
	}

	// A peer that leaves takes what it told with it.
	n0.eng.SetPeers([]Peer{testPeer(n0.id, 0)})
	if got := n0.eng.Agreement(); len(got) != 0 {
		t.Fatalf("agreement with a departed peer: %+v", got)
	}
}

// holdPolicy holds only the namespaces in held, and opens the rest.
type holdPolicy struct {
	openPolicy
	held map[string]bool
}

func (p holdPolicy) ShouldHold(ns string) bool { return p.held[ns] }

func TestAgreementOnlyForNamespacesHeld(t *testing.T) {
	pol := holdPolicy{held: map[string]bool{"team://a": true, "team://b": true}}
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Second}, pol, 1)
	c.write(0, "team://a", "m1", "title", "one")
	c.write(0, "team://b", "m2", "title", "two")
	c.tick(time.Second)
	c.pump(10)
	if err := c.nodes[0].eng.RequestSync(c.nodes[1].id, ""); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	if got := c.nodes[1].eng.Agreement(); len(got) != 2 {
		t.Fatalf("n1 knows %+v, want team://a and team://b", got)
	}
	delete(pol.held, "team://b")
	c.tick(time.Second) // anti-entropy's tick forgets it
	got := c.nodes[1].eng.Agreement()
	if len(got) != 1 || got[0].Namespace != "team://a" {
		t.Fatalf("n1 knows %+v after giving up team://b, want team://a only", got)
	}
	if n := len(c.nodes[1].eng.peers[c.nodes[0].id].told); n != 1 {
		t.Fatalf("n1 still keeps %d told contexts of n0, want 1", n)
	}
}

// Converged peers tell the same context: it is kept once, not per peer.
func TestToldContextsSharedWhenEqual(t *testing.T) {
	c := newCluster(t, 3, Config{}, openPolicy{}, 1)
	c.write(1, "team://a", "m1", "title", "one")
	c.tick(time.Second)
	c.pump(10)
	for _, peer := range c.nodes[1:] {
		if err := peer.eng.RequestSync(c.nodes[0].id, "team://a"); err != nil {
			t.Fatal(err)
		}
	}
	c.pump(10)
	n0 := c.nodes[0].eng
	a, b := n0.peers[c.nodes[1].id].told["team://a"].enc, n0.peers[c.nodes[2].id].told["team://a"].enc
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("n1 and n2 told %x and %x, want the same context", a, b)
	}
	if &a[0] != &b[0] {
		t.Fatal("two equal told contexts are kept as two copies")
	}
}
