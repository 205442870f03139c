package sim

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	sweep  = flag.Int("sweep", 0, "seeds for TestSweep (default 500, or 6 under -race or -short)")
	record = flag.String("record", "", "append TestSweep's result to this log (the cumulative clean-seed figure)")
)

func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeterminism(t *testing.T) {
	cfg := Mixed(42)
	a, b := run(t, cfg), run(t, cfg)
	if a.Digest != b.Digest || a.TraceHash != b.TraceHash || a.Messages != b.Messages || a.Bytes != b.Bytes {
		t.Fatalf("same seed, different runs:\n%+v\n%+v", a, b)
	}
	c := run(t, Mixed(43))
	if c.TraceHash == a.TraceHash {
		t.Fatal("different seeds gave the same trace")
	}
}

func TestConvergenceMixedFaults(t *testing.T) {
	const seeds = 6 // together they exercise every kind of operation and fault
	var total Report
	for seed := uint64(1); seed <= seeds; seed++ {
		r := run(t, Mixed(seed))
		if !r.Converged {
			t.Errorf("seed %d: %s\nreplay: %s", seed, r.FirstViolation(), r.Replay)
		}
		total.Fallbacks += r.Fallbacks
		total.Rejected += r.Rejected
		total.Forged += r.Forged
		total.Attacks += r.Attacks
		total.Crashes += r.Crashes
		total.Revokes += r.Revokes
		total.Shares += r.Shares
		total.CutWrites += r.CutWrites
		total.Capsules += r.Capsules
		total.Edits += r.Edits
	}
	if total.Fallbacks == 0 || total.Rejected == 0 || total.Forged == 0 || total.Attacks == 0 || total.Crashes == 0 || total.Revokes == 0 || total.Shares == 0 ||
		total.CutWrites == 0 || total.Capsules == 0 || total.Edits == 0 {
		t.Errorf("the seeds exercised too little: %+v", total)
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
		{"namespace sent to a non-reader in a window", hooks{leakOnTick: true}, "read:"},
		{"retracted memory visible", hooks{lostRetract: true}, "retract:"},
		{"queue over its bound", hooks{queueBound: 1}, "queue:"},
		{"capsule revoked or not as the checker is told", hooks{capsuleFlipped: true}, "capsule:"},
		{"audit shrank", hooks{auditShrank: true}, "audit:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Two workers, whatever the machine: a check made on a worker
			// inside a window must fire as one made alone.
			cfg := Config{Nodes: 6, Ops: 300, Seed: 7, Loss: 0.05, Stalls: 2, Workers: 2, hooks: c.hook}
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
			// A divergence says what differs: the tampered holder's record.
			if c.hook.tamper && !regexp.MustCompile(`only in the (first|second): 1 \(\w+\)`).MatchString(r.Violations[0]) {
				t.Fatalf("the divergence does not name the record only one holder has: %q", r.Violations[0])
			}
		})
	}
	cfg := Config{Nodes: 6, Ops: 300, Seed: 7, Loss: 0.05, Stalls: 2, Workers: 2}
	cfg.Engine.Window = 1
	if r := run(t, cfg); !r.Converged {
		t.Fatalf("the unbroken run must pass: %v", r.Violations)
	}
}

// A crash between a write's commit and its sync must not leave the write
// acknowledged: with a store whose sync, cut by the power, says it
// succeeded, the checker reports the acknowledgement. Seeds 1015 and 1017
// (1015 and 1038 before a refusal's resync waited for the binding it
// lacked and bindings on demand came to one seed in five; 1037 and 1040
// before a refused delta's bindings were pulled from its sender: each
// moves every later draw of a run) are the first two of the sweep's (mnemo
// sim --mixed --sweep 200 --seed 1000) where a store that acknowledged
// before its sync was caught: most cuts come in a peer's delta or before
// a call's last write.
func TestCheckerCatchesAckBeforeDurable(t *testing.T) {
	for _, seed := range []uint64{1015, 1017} {
		cfg := Mixed(seed)
		cfg.Workers = 2 // cuts in a peer's delta come inside windows, on workers
		if r := run(t, cfg); !r.Converged {
			t.Fatalf("seed %d: the unbroken run must pass: %v", seed, r.Violations)
		}
		cfg.hooks.lyingSync = true
		r := run(t, cfg)
		found := false
		for _, v := range r.Violations {
			found = found || strings.HasPrefix(v, "durability:")
		}
		if !found {
			t.Errorf("seed %d: no durability violation in %q (%d writes cut)", seed, r.Violations, r.CutWrites)
		}
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
	for _, in := range []string{"bogus 1", "at 5s explode n1", "at x heal", "at 1s partition n0", "at 1s stall n1 for", "nodes many", "at 1s op x", "skew -3s", "at 1s op"} {
		if _, err := ParseScenario(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestSweep is the CI sweep: many seeds of Mixed (every kind of fault on
// 4–10 real nodes), as many at once as there are CPUs.
func TestSweep(t *testing.T) {
	n := *sweep
	if n == 0 {
		n = 500
		if raceEnabled || testing.Short() {
			n = 6
		}
	}
	res, err := Sweep(context.Background(), Mixed, 1000, n, time.Time{}, runtime.GOMAXPROCS(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d seeds, %d clean, %d failed, worst virtual time to converge %d ms, wall %v (%.2f seeds/s)",
		res.Seeds, res.Clean, len(res.Failed), res.WorstVirtualMS, res.Wall.Round(time.Millisecond), res.SeedsPerSecond())
	if *record != "" {
		if err := RecordSweep(*record, fmt.Sprintf("TestSweep Mixed from seed 1000 (%d workers)", runtime.GOMAXPROCS(0)), res); err != nil {
			t.Error(err)
		}
	}
	for _, r := range res.Failed {
		t.Errorf("%s\n  replay: %s", r.FirstViolation(), r.Replay)
	}
}
