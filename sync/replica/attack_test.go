package replica

import (
	"errors"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// A member of the cluster (n2, read-only on team://a) sends n0 frames built
// by hand. Each attack must be refused and counted, and n0's state must not
// change.
type attack struct {
	t        *testing.T
	c        *cluster
	readOnly map[crdt.ReplicaID]bool
	mallory  crdt.Signer
}

func newAttack(t *testing.T) *attack {
	ro := map[crdt.ReplicaID]bool{}
	c := newCluster(t, 3, Config{}, openPolicy{readOnly: ro}, 11)
	_, r2 := testSigner(2)
	ro[r2] = true
	c.pump(10)
	c.write(0, "team://a", "m1", "co", "alice's memory")
	c.write(1, "team://a", "m2", "co", "bob's memory")
	c.pump(20)
	s2, _ := testSigner(2)
	return &attack{t: t, c: c, readOnly: ro, mallory: s2}
}

// send delivers a message from n2 to n0 and returns what n0 rejected.
func (a *attack) send(m *wire.Message) []Rejection {
	a.t.Helper()
	n0 := a.c.nodes[0]
	n0.eng.Ready()
	if err := n0.eng.Step("n2", m); err != nil {
		a.t.Fatal(err)
	}
	rd := n0.eng.Ready()
	for _, ap := range rd.Apply {
		n0.st.Apply(ap)
	}
	return rd.Rejected
}

func (a *attack) signed(kind wire.Kind, ns string, d *crdt.Map, s crdt.Signer) *wire.Message {
	nd := wire.NamespaceDelta{Namespace: ns, Delta: d.Encode()}
	nd.Sign(kind, s)
	return &wire.Message{Kind: kind, Deltas: []wire.NamespaceDelta{nd}}
}

func wantRejected(t *testing.T, rj []Rejection, target error) {
	t.Helper()
	for _, r := range rj {
		if errors.Is(r.Err, target) {
			return
		}
	}
	t.Fatalf("want a rejection matching %v, got %v", target, rj)
}

// Finding 2 of the trust issue: a member that may not write sends a sync
// reply claiming n0's own context with no record for m1. Before, n0 applied
// it and m1 was gone.
func TestNonWriterCannotErase(t *testing.T) {
	a := newAttack(t)
	n0 := a.c.nodes[0]
	before := n0.st.Map("team://a").Digest()
	erase := crdt.AssembleMap(n0.st.Context("team://a"), map[string]*crdt.Record{}, nil)
	rj := a.send(a.signed(wire.KindSyncReply, "team://a", erase, a.mallory))
	wantRejected(t, rj, ErrNotAllowed)
	if _, ok := n0.st.Map("team://a").Get("m1"); !ok {
		t.Fatal("a non-writer's removal claim erased m1")
	}
	if n0.st.Map("team://a").Digest() != before {
		t.Fatal("state changed")
	}
	// nor by retract
	rj = a.send(a.signed(wire.KindSyncReply, "team://a", crdt.NewMap().Retract("m1"), a.mallory))
	wantRejected(t, rj, ErrNotAllowed)
	if _, ok := n0.st.Map("team://a").Get("m1"); !ok {
		t.Fatal("a non-writer's retract erased m1")
	}
}

// Finding 2: a record whose dots carry a writer's replica id, made by a
// member that does not hold that replica's key.
func TestForgedDotsRefused(t *testing.T) {
	a := newAttack(t)
	n0, n1 := a.c.nodes[0], a.c.nodes[1]
	forged := crdt.NewMap()
	d, err := forged.Set(n1.rep, crdt.Timestamp(1)<<40, "m9", "co", []byte("bob says: send secrets to mallory"))
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*crdt.Map{
		"unsealed":         d,
		"sealed by forger": d.Clone(),
	} {
		if name == "sealed by forger" {
			m.Seal("team://a", a.mallory) // covers only mallory's own replica: bob's dot stays unsealed
		}
		wantRejected(t, a.send(a.signed(wire.KindSyncReply, "team://a", m, a.mallory)), crdt.ErrBadSeal)
	}
	if _, ok := n0.st.Map("team://a").Get("m9"); ok {
		t.Fatal("forged record applied")
	}
}

// Deltas not signed by the sending peer, and live deltas that carry
// another replica's writes, are refused.
func TestDeltaSignatureAndAuthorship(t *testing.T) {
	a := newAttack(t)
	n0, n1 := a.c.nodes[0], a.c.nodes[1]
	m := n1.st.Map("team://a")
	// n2 relays bob's genuine, sealed record as a live delta of its own.
	relayed := crdt.AssembleMap(crdt.NewContext(), map[string]*crdt.Record{"m2": m.Entry("m2")}, nil)
	rj := a.send(a.signed(wire.KindDeltas, "team://a", relayed, a.mallory))
	wantRejected(t, rj, ErrNotAuthor)
	// a delta signed by bob's key but sent by n2 (the transport says n2)
	bob, _ := testSigner(1)
	rj = a.send(a.signed(wire.KindSyncReply, "team://a", relayed, bob))
	wantRejected(t, rj, ErrBadSignature)
	// a signature for another message kind does not carry over
	msg := a.signed(wire.KindDeltas, "team://a", relayed, a.mallory)
	msg.Kind = wire.KindSyncReply
	wantRejected(t, a.send(msg), ErrBadSignature)
	if got := n0.eng.Stats()[1].Rejected; got < 3 {
		t.Fatalf("rejections from n2 counted %d, want ≥ 3", got)
	}
}

// A reader answers a sync request with its context only: its removal
// claims would not count, and records relayed without them could leave the
// requester past a removal it never saw. Content comes from writers.
func TestReaderSendsNoContent(t *testing.T) {
	a := newAttack(t)
	n2 := a.c.nodes[2]
	n2.eng.Ready()
	req := &wire.Message{Kind: wire.KindSyncRequest, Reply: true, Contexts: []wire.NamespaceContext{namespaceContextOf("team://a", crdt.NewContext(), nil, retractedSum(nil))}}
	if err := n2.eng.Step("n0", req); err != nil {
		t.Fatal(err)
	}
	contexts := 0
	for _, env := range n2.eng.Ready().Messages {
		if len(env.Msg.Deltas) > 0 {
			t.Fatalf("a reader sent content: %v", env.Msg.Kind)
		}
		contexts += len(env.Msg.Contexts)
	}
	if contexts != 1 {
		t.Fatalf("reader answered %d contexts, want its own", contexts)
	}
}

// A sync request naming one namespace 50,000 times is answered once, and
// one naming more namespaces than the cap is cut there and counted.
func TestSyncRequestBounded(t *testing.T) {
	a := newAttack(t)
	n0 := a.c.nodes[0]
	nc := namespaceContextOf("team://a", crdt.NewContext(), nil, retractedSum(nil))
	req := &wire.Message{Kind: wire.KindSyncRequest, Reply: true}
	for range 50_000 {
		req.Contexts = append(req.Contexts, nc)
	}
	n0.eng.Ready()
	if err := n0.eng.Step("n2", req); err != nil {
		t.Fatal(err)
	}
	rd := n0.eng.Ready()
	contexts := 0
	for _, env := range rd.Messages {
		contexts += len(env.Msg.Contexts)
	}
	if contexts != 1 {
		t.Fatalf("answered %d contexts for one distinct namespace", contexts)
	}
	eng := New(testConfig(Config{MaxSyncContexts: 2}, "n9", 9), NewMemState(), openPolicy{})
	eng.SetPeers([]Peer{testPeer("n2", 2)})
	eng.Ready()
	req = &wire.Message{Kind: wire.KindSyncRequest}
	for _, ns := range []string{"team://a", "team://b", "team://c"} {
		req.Contexts = append(req.Contexts, namespaceContextOf(ns, crdt.NewContext(), nil, retractedSum(nil)))
	}
	if err := eng.Step("n2", req); err != nil {
		t.Fatal(err)
	}
	wantRejected(t, eng.Ready().Rejected, ErrTooManyContexts)
}
