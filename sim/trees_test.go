package sim

import "testing"

// The engines carry live deltas of large replica sets over broadcast
// trees in the simulator too: the same workload and faults converge with
// every invariant held (the read checker sees every relayed delta a
// node sends), whether the trees carry them or direct sends do.
func TestTreesCarryLiveDeltas(t *testing.T) {
	base := Config{Nodes: 10, Ops: 100, Seed: 3, Loss: 0.05, Partitions: 1, Crashes: 1, Teams: 1, Projects: 1}
	on := run(t, base)
	if !on.Converged {
		t.Fatalf("with trees: %s\nreplay: %s", on.FirstViolation(), on.Replay)
	}
	if on.Trees.Broadcasts == 0 || on.Trees.Relayed == 0 || on.TreeMessages == 0 {
		t.Fatalf("no live delta went over a tree: %+v", on.Trees)
	}
	if raceEnabled || testing.Short() {
		return // the direct half is every other simulator test's
	}
	base.Engine.TreeThreshold = -1
	off := run(t, base)
	if !off.Converged {
		t.Fatalf("without trees: %s\nreplay: %s", off.FirstViolation(), off.Replay)
	}
	if off.TreeMessages != 0 || off.DeltaMessages == 0 {
		t.Fatalf("trees off, yet %d tree frames and %d delta frames", off.TreeMessages, off.DeltaMessages)
	}
	t.Logf("10 nodes: with trees %d bytes (%d tree frames, %d broadcasts, %d relayed, %d fallbacks); direct %d bytes (%d delta frames, %d fallbacks)",
		on.Bytes, on.TreeMessages, on.Trees.Broadcasts, on.Trees.Relayed, on.Fallbacks, off.Bytes, off.DeltaMessages, off.Fallbacks)
}

// The malicious member relays with trees on (trees.go, "hostile relay"):
// it alters or drops what it forwards, and the honest nodes refuse the
// altered payloads, distrust it, route around it, and every invariant
// holds. With the altered claims also written into their receivers (as a
// receiver that skipped the author's signature would apply them), the
// checkers fire: the run's verdict depends on the relay check.
func TestTreesHostileRelays(t *testing.T) {
	base := Config{Nodes: 10, Ops: 300, Seed: 5, Loss: 0.05, Teams: 1, Projects: 1, Workers: 2}
	base.Engine.TreeThreshold = 4
	base.hooks.relayOnly = true
	r := run(t, base)
	if !r.Converged {
		t.Fatalf("with hostile relays: %s\nreplay: %s", r.FirstViolation(), r.Replay)
	}
	a := r.Relays
	t.Logf("hostile relays %d: %d altered, %d dropped (%d sent by another member since), %d replayed; %d relays distrusted, %d grafts, %d wants, %d relayed deltas applied",
		a.Armed, a.Altered, a.Dropped, a.Rerouted, a.Replayed, r.Trees.Distrusted, r.Trees.Node.Grafts, r.Trees.Node.Wants, r.Trees.Relayed)
	if a.Altered == 0 || a.Dropped == 0 || a.Replayed == 0 {
		t.Fatalf("the attacks did not all happen: %+v", a)
	}
	if r.Trees.Distrusted == 0 {
		t.Fatalf("%d altered payloads and no relay distrusted", a.Altered)
	}
	if a.Rerouted == 0 || r.Trees.Node.Grafts == 0 {
		t.Fatalf("%d payloads dropped, %d sent again by another member, %d grafts", a.Dropped, a.Rerouted, r.Trees.Node.Grafts)
	}

	base.hooks.bypassRelay = true
	bad := run(t, base)
	if bad.Converged {
		t.Fatalf("altered claims applied (%d payloads), yet the run passed", bad.Relays.Altered)
	}
	t.Logf("altered claims applied: %.160s", bad.FirstViolation())
}
