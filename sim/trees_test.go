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
