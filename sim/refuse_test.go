package sim

import (
	"testing"
	"time"
)

// Nodes whose clocks run further ahead than the others tolerate have their
// deltas refused (ApplyRemote's skew check): each refusal goes back to the
// engine, which withholds the batch's ack, and the senders' ack timeouts
// and anti-entropy bring the deltas again once the receivers' clocks have
// caught up with their timestamps. The run still converges.
func TestSkewRefusalsRepaired(t *testing.T) {
	cfg := Config{Nodes: 5, Ops: 200, Seed: 9, Loss: 0.02, SkewedNodes: 5, Skew: 12 * time.Second, MaxSkew: 2 * time.Second}
	r := run(t, cfg)
	if !r.Converged {
		t.Fatalf("%s\nreplay: %s", r.FirstViolation(), r.Replay)
	}
	if r.Rejected == 0 {
		t.Fatal("no delta was refused: the skews exercised nothing")
	}
	t.Logf("%d deltas refused, %d applied, %d fallbacks", r.Rejected, r.DeltasApplied, r.Fallbacks)
}
