package replica

import (
	"testing"
	"time"
)

// A peer listed again with another incarnation restarted: the engine
// forgets what it had in flight to the old one and syncs every namespace
// with the new one at once, as with a peer that joins; listed again with
// the same incarnation, nothing starts over.
func TestRestartedPeerStartsOver(t *testing.T) {
	const ns = "team://a"
	now := time.Unix(1_800_000_000, 0)
	st0, st1 := NewMemState(), NewMemState()
	st0.Map(ns)
	st1.Map(ns)
	e0 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n0", 0), st0, openPolicy{})
	e1 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n1", 1), st1, openPolicy{})
	p0, p1 := testPeer("n0", 0), testPeer("n1", 1)
	p1.Incarnation = 1
	e0.SetPeers([]Peer{p0, p1})
	e1.SetPeers([]Peer{p0, p1})
	e0.Tick(now)
	e1.Tick(now)
	for range 4 { // the join syncs, answered both ways
		for _, env := range e0.Ready().Messages {
			_ = e1.Step("n0", env.Msg)
		}
		for _, env := range e1.Ready().Messages {
			_ = e0.Step("n1", env.Msg)
		}
	}
	s0, r0 := testSigner(0)
	d, err := st0.Map(ns).Set(r0, 5, "m1", "title", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	e0.LocalDelta(ns, sealInto(st0.Map(ns), ns, d, s0))
	_ = e0.Ready() // the batch goes to n1's old incarnation, and is lost

	e0.SetPeers([]Peer{p0, p1}) // the same incarnation again: nothing to do
	if got := syncRequests(e0.Ready()); got != 0 {
		t.Fatalf("listed again unchanged: %d sync requests, want 0", got)
	}
	p1.Incarnation = 2
	e0.SetPeers([]Peer{p0, p1})
	if got := syncRequests(e0.Ready()); got != 1 {
		t.Fatalf("restarted peer: %d sync requests, want 1 at once", got)
	}
	st := e0.Stats()[0]
	if st.Peer != "n1" || st.Fallbacks != 0 || st.SyncsSent != 1 {
		t.Fatalf("restarted peer's stats carried over: %+v", st)
	}
	// The batch sent to the old incarnation is forgotten: its ack timeout
	// no longer falls back.
	e0.Tick(now.Add(time.Minute))
	if st := e0.Stats()[0]; st.Fallbacks != 0 {
		t.Fatalf("a batch sent to the old incarnation fell back: %+v", st)
	}
}
