package sim

import (
	"testing"
	"time"
)

// A node's trees send what they owe at its time, not at the node's next
// tick: with ticks 2s apart and 10% of frames lost, the tracked updates of
// a namespace every node holds still reach every holder in well under a
// tick on average (announcement, want and answer take a few link
// latencies and the waits of sync/epidemic), as they would not if the
// announcements and wants of a lost push waited for the tick.
func TestTreesFlushBetweenTicks(t *testing.T) {
	cfg := Config{Seed: 3, Nodes: 30, Ops: 120, Loss: 0.1, Teams: 0, Projects: 1, Track: 40, TickInterval: 2 * time.Second}
	r := run(t, cfg)
	if r.Trees.Node.Wants == 0 {
		t.Fatal("no wants: no push was lost and repaired over the tree")
	}
	t.Logf("mean %.0f ms, worst %.0f ms to reach every holder; %d wants", r.MeanReachMS, r.WorstReachMS, r.Trees.Node.Wants)
	if tick := float64(cfg.TickInterval / time.Millisecond); r.MeanReachMS >= tick/2 {
		t.Fatalf("tracked updates reached every holder in %.0f ms on average (worst %.0f); want under half a tick (%.0f ms)", r.MeanReachMS, r.WorstReachMS, tick/2)
	}
}
