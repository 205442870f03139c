package replica

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

func syncRequests(r Ready) int {
	n := 0
	for _, env := range r.Messages {
		if env.Msg.Kind == wire.KindSyncRequest {
			n++
		}
	}
	return n
}

// An unacknowledged batch falls back to digest sync, unless the engine has
// answered a sync of that namespace from the peer since the batch left.
func TestAckTimeoutSkipsSyncAnsweredSince(t *testing.T) {
	for _, answered := range []bool{false, true} {
		const ns = "team://a"
		now := time.Unix(1_800_000_000, 0)
		st0, st1 := NewMemState(), NewMemState()
		st0.Map(ns)
		st1.Map(ns)
		e0 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n0", 0), st0, openPolicy{})
		e1 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n1", 1), st1, openPolicy{})
		peers := []Peer{testPeer("n0", 0), testPeer("n1", 1)}
		e0.SetPeers(peers)
		e1.SetPeers(peers)
		e0.Tick(now)
		e1.Tick(now)
		e0.Ready() // the join syncs: dropped, they do not matter here
		e1.Ready()

		s0, r0 := testSigner(0)
		d, err := st0.Map(ns).Set(r0, 5, "m1", "title", []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		sealInto(st0.Map(ns), ns, d, s0)
		e0.LocalDelta(ns, d) // the batch is lost
		if r := e0.Ready(); len(r.Messages) != 1 || r.Messages[0].Msg.Kind != wire.KindDeltas {
			t.Fatalf("want one batch, got %+v", r.Messages)
		}
		now = now.Add(time.Second)
		if answered {
			// n1 asks for a sync; n0 answers with what n1 lacks (m1).
			if err := e1.RequestSync("n0", ns); err != nil {
				t.Fatal(err)
			}
			for _, env := range e1.Ready().Messages {
				e0.Tick(now)
				if err := e0.Step("n1", env.Msg); err != nil {
					t.Fatal(err)
				}
			}
			sent := false
			for _, env := range e0.Ready().Messages {
				for _, nd := range env.Msg.Deltas {
					m, _ := crdt.DecodeMap(nd.Delta, crdt.DefaultLimits())
					_, ok := m.Get("m1")
					sent = sent || ok
				}
			}
			if !sent {
				t.Fatal("the sync answer did not carry m1")
			}
		}
		before := e0.Stats()[0].Fallbacks
		e0.Tick(now.Add(10 * time.Second)) // the batch's ack timed out
		got := syncRequests(e0.Ready())
		fell := e0.Stats()[0].Fallbacks - before
		if answered && (got != 0 || fell != 0) {
			t.Fatalf("answered since the batch left: %d sync requests, %d fallbacks; want none", got, fell)
		}
		if !answered && (got != 1 || fell != 1) {
			t.Fatalf("not answered: %d sync requests, %d fallbacks; want 1", got, fell)
		}
	}
}
