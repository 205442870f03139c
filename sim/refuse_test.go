package sim

import "testing"

// Nodes that refuse a fifth of the deltas they are handed to apply (a
// passing gate, as a clock ahead) still converge: each refusal goes back to
// the engine (Advance), which withholds the batch's ack, and the senders'
// ack timeouts and anti-entropy bring the deltas again.
func TestRefusalsRepaired(t *testing.T) {
	s, err := New(Config{Nodes: 5, Ops: 200, Seed: 9, Loss: 0.02, hooks: hooks{refuse: 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run()
	if !r.Converged {
		t.Fatalf("%s\nreplay: %s", r.FirstViolation(), r.Replay)
	}
	if s.stats.refused == 0 || r.Rejected < s.stats.refused {
		t.Fatalf("%d refused, %d rejections reported: every refusal must be reported", s.stats.refused, r.Rejected)
	}
	t.Logf("%d deltas refused, %d applied, %d fallbacks", s.stats.refused, r.DeltasApplied, r.Fallbacks)
}
