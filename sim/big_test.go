package sim

import (
	"flag"
	"runtime/debug"
	"testing"
)

var bigOps = flag.Int("big-ops", 10000, "operations for TestFigureBig (smaller to profile)")

// TestFigureBig is the 100-node, 10k-op figure (run with -figures).
func TestFigureBig(t *testing.T) {
	if !*figures {
		t.Skip("run with -figures")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(GCPercent)) // as mnemo sim runs it
	r := run(t, Config{Nodes: 100, Ops: *bigOps, Seed: 1, Loss: 0.1, Partitions: 3})
	t.Logf("converged=%v wall %d ms, virtual %d ms after the last fault, messages %d, bytes %d, fallbacks %d, max queue %d: %v",
		r.Converged, r.WallMS, r.VirtualMS, r.Messages, r.Bytes, r.Fallbacks, r.MaxQueue, r.Violations)
}
