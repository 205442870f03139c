package sim

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var sweep = flag.Int("sweep", 0, "seeds for TestSweep (default 200, or 40 under -race)")

// mixed is a run with every kind of fault.
func mixed(seed uint64) Config {
	return Config{
		Nodes: 5 + int(seed%16), Ops: 300, Seed: seed,
		Loss: 0.1, Dup: 0.05, Reorder: 0.1,
		Partitions: 2, Crashes: 2, Stalls: 2, Churn: 1, Joins: 1,
		SkewedNodes: 2, Skew: 8 * time.Second, // within and beyond the 5s bound
	}
}

func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeterminism(t *testing.T) {
	cfg := mixed(42)
	a, b := run(t, cfg), run(t, cfg)
	if a.Digest != b.Digest || a.TraceHash != b.TraceHash || a.Messages != b.Messages || a.Bytes != b.Bytes {
		t.Fatalf("same seed, different runs:\n%+v\n%+v", a, b)
	}
	c := run(t, mixed(43))
	if c.TraceHash == a.TraceHash {
		t.Fatal("different seeds gave the same trace")
	}
}

func TestConvergenceMixedFaults(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := run(t, mixed(seed))
		if !r.Converged {
			t.Errorf("seed %d: %s\nreplay: %s", seed, r.FirstViolation(), r.Replay)
		}
		if r.Fallbacks == 0 || r.Rejected == 0 || r.Forged == 0 || r.Attacks == 0 {
			t.Errorf("seed %d exercised too little: fallbacks %d, rejected %d, forged %d, attacks %d", seed, r.Fallbacks, r.Rejected, r.Forged, r.Attacks)
		}
	}
}

// Each checker must catch a violation injected on purpose.
func TestCheckersCatchViolations(t *testing.T) {
	cases := []struct {
		name   string
		hook   hooks
		prefix string
	}{
		{"lost acknowledged write", hooks{dropAcked: true}, "lost write:"},
		{"divergent replica", hooks{tamper: true}, "convergence:"},
		{"unauthorised write applied", hooks{bypassWrite: true}, "write:"},
		{"namespace sent to a non-reader", hooks{leak: true}, "read:"},
		{"retracted memory visible", hooks{lostRetract: true}, "retract:"},
		{"queue over its bound", hooks{queueBound: 1}, "queue:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Nodes: 6, Ops: 300, Seed: 7, Loss: 0.05, Stalls: 2, hooks: c.hook}
			cfg.Engine.Window = 1 // so a stalled peer's queue grows
			r := run(t, cfg)
			if r.Converged {
				t.Fatal("checker missed the violation")
			}
			found := false
			for _, v := range r.Violations {
				found = found || strings.HasPrefix(v, c.prefix)
			}
			if !found {
				t.Fatalf("no %q violation in %q", c.prefix, r.Violations)
			}
		})
	}
	cfg := Config{Nodes: 6, Ops: 300, Seed: 7, Loss: 0.05, Stalls: 2}
	cfg.Engine.Window = 1
	if r := run(t, cfg); !r.Converged {
		t.Fatalf("the unbroken run must pass: %v", r.Violations)
	}
}

func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := LoadScenario(f)
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, Config{Seed: 1, Scenario: sc})
			if !r.Converged {
				t.Fatalf("%s\nreplay: %s", r.FirstViolation(), r.Replay)
			}
		})
	}
}

func TestScenarioErrors(t *testing.T) {
	for _, in := range []string{"bogus 1", "at 5s explode n1", "at x heal", "at 1s partition n0", "at 1s stall n1", "nodes many"} {
		if _, err := ParseScenario(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestSweep is the CI sweep: many seeds of mixed faults on 5–20 nodes.
func TestSweep(t *testing.T) {
	n := *sweep
	if n == 0 {
		n = 200
		if raceEnabled || testing.Short() {
			n = 24
		}
	}
	start := time.Now()
	var failed []string
	worst := int64(0)
	for seed := uint64(1000); seed < 1000+uint64(n); seed++ {
		r := run(t, mixed(seed))
		worst = max(worst, r.VirtualMS)
		if !r.Converged {
			failed = append(failed, r.FirstViolation()+"\n  replay: "+r.Replay+"")
		}
	}
	t.Logf("%d seeds, %d failed, worst virtual time to converge %d ms, wall %v", n, len(failed), worst, time.Since(start).Round(time.Millisecond))
	for _, f := range failed {
		t.Error(f)
	}
}
