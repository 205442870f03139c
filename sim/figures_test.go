package sim

import (
	"flag"
	"testing"
)

var figures = flag.Bool("figures", false, "run the figures reported in doc.go")

// TestFigures prints the figures quoted in doc.go:
//
//	go test ./sim -run TestFigures -figures -v
func TestFigures(t *testing.T) {
	if !*figures {
		t.Skip("run with -figures")
	}
	// Rounds: N=100, 10% loss, one namespace everyone holds.
	r := run(t, Config{Nodes: 100, Ops: 300, Seed: 1, Loss: 0.1, Teams: 0, Projects: 1, Track: 40})
	t.Logf("rounds (N=100, 10%% loss): converged=%v, mean max hops %.2f, mean %.0f ms / worst %.0f ms to reach every holder (link latency 2–40 ms, anti-entropy 10s)",
		r.Converged, r.MeanHops, r.MeanReachMS, r.WorstReachMS)
	r0 := run(t, Config{Nodes: 100, Ops: 300, Seed: 1, Teams: 0, Projects: 1, Track: 40})
	t.Logf("rounds (N=100, no loss): mean max hops %.2f, mean %.0f ms to reach every holder", r0.MeanHops, r0.MeanReachMS)
	// Bytes: K concurrent updates on N nodes, no loss.
	for _, c := range []struct{ n, k int }{{20, 2000}, {50, 2000}} {
		cfg := Config{Nodes: c.n, Ops: c.k, Seed: 2, Teams: 0, Projects: 1, measureState: true}
		r := run(t, cfg)
		t.Logf("bytes N=%d K=%d: converged=%v total %d, delta frames %d, minimum K·(N−1)·delta %d → %.2fx total, %.2fx delta frames; state-based %d → %.3fx",
			c.n, c.k, r.Converged, r.Bytes, r.DeltaBytes, r.MinDeltaBytes,
			float64(r.Bytes)/float64(r.MinDeltaBytes), float64(r.DeltaBytes)/float64(r.MinDeltaBytes),
			r.StateBytes, float64(r.Bytes)/float64(r.StateBytes))
	}
}
