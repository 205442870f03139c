package sim

import (
	"strings"
	"testing"
)

// A failing run shrinks to a scenario of a few operations that still fails
// the same way when replayed from its text alone.
func TestShrinkKeepsTheFailure(t *testing.T) {
	cfg := Config{Nodes: 4, Ops: 60, Seed: 3, Loss: 0.05, Crashes: 1, Partitions: 1, hooks: hooks{dropAcked: true}}
	text, r, err := Shrink(cfg, 200)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || !strings.HasPrefix(r.FirstViolation(), "lost write:") {
		t.Fatalf("shrunk run: %v", r)
	}
	ops := strings.Count(text, " op ")
	if ops > 3 || strings.Contains(text, " crash n") {
		t.Fatalf("%d operations left (want at most 3) and faults %v:\n%s", ops, strings.Contains(text, " crash n"), text)
	}
	sc, err := ParseScenario(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	again := run(t, Config{Scenario: sc, hooks: cfg.hooks})
	if !strings.HasPrefix(again.FirstViolation(), "lost write:") {
		t.Fatalf("replayed from its text, the scenario gives %q", again.FirstViolation())
	}
	t.Logf("shrunk to %d operations:\n%s", ops, text)
}

// A passing run has nothing to shrink.
func TestShrinkPassingRun(t *testing.T) {
	text, r, err := Shrink(Config{Nodes: 3, Ops: 20, Seed: 1}, 10)
	if err != nil || r != nil || text != "" {
		t.Fatalf("passing run shrunk to %q, %v, %v", text, r, err)
	}
}

// The sweep finds a bug planted in the node's own code: with the loop's
// write check skipped (cluster.Config.SkipWriteCheck), a hostile member's
// forged writes and erasures get applied, and some seed of the first 200
// must show it.
func TestPlantedBugFound(t *testing.T) {
	for seed := uint64(1000); seed < 1200; seed++ {
		cfg := Mixed(seed)
		cfg.hooks.plantBug = true
		r := run(t, cfg)
		if r.Converged {
			continue
		}
		switch k := violationKind(r); k {
		case "write", "lost write", "convergence", "retract":
			t.Logf("found after %d seeds (seed %d): %s", seed-999, seed, r.FirstViolation())
			return
		default:
			t.Fatalf("seed %d failed, but not as a skipped write check would: %s", seed, r.FirstViolation())
		}
	}
	t.Fatal("200 seeds did not find the planted bug")
}
