package sim

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// runKey is r without what may differ between runs of one seed: its
// wall figures and the number of workers.
func runKey(t *testing.T, r *Report) string {
	t.Helper()
	c := *r
	c.WallMS = 0
	c.Windows.Workers = 0
	c.Windows.Parallel = 0
	c.Windows.PopMS, c.Windows.NodesMS, c.Windows.MergeMS, c.Windows.BarrierMS = 0, 0, 0, 0
	c.Windows.BusyMS, c.Windows.BoundMS, c.Windows.CheckMS = 0, 0, 0
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unreplayed is what a run's printed trace holds that no seed fixes: the
// wall time a node's warning was logged at (slog's), and which of a
// record's unsealed dots a refusal names (crdt.Record.VerifySeals walks
// the record's fields, a map, and names the first it meets).
var unreplayed = regexp.MustCompile(`time=\S+ |dot [0-9a-f]+:[0-9]+ (is not sealed|does not match)`)

func printed(trace string) string { return unreplayed.ReplaceAllString(trace, "") }

// A seed means the same run whatever the number of workers running its
// nodes (window.go): the same trace, digests and report. The configs
// have every kind of fault (Mixed: crashes, in the middle of writes too,
// stalls, churn, a joiner, skewed clocks, split sync answers, hostile
// relays on trees) and a 30-node lossy cluster whose windows hold many
// nodes. Under -race this is also the proof that the workers share
// nothing unguarded.
func TestWorkersSameRun(t *testing.T) {
	cfgs := []Config{Mixed(1), Mixed(3), Mixed(1037),
		{Nodes: 30, Ops: 300, Seed: 7, Loss: 0.1, Dup: 0.02, Reorder: 0.05, Partitions: 2, Crashes: 3, Stalls: 1, Churn: 1, Joins: 1}}
	if testing.Short() {
		cfgs = cfgs[2:]
	}
	var cut, parallel, relays int
	for _, cfg := range cfgs {
		cfg.Workers = 1
		var trace strings.Builder
		cfg.Trace = &trace
		serial := run(t, cfg)
		text := printed(trace.String())
		// The power cut while a loop applied a peer's delta or ticked: in
		// a window, where the crash goes through the outbox.
		cut += strings.Count(text, "in the middle of a write\n")
		if serial.Windows.Parallel != 0 {
			t.Fatalf("seed %d: one worker, yet %d windows ran on several", cfg.Seed, serial.Windows.Parallel)
		}
		want := runKey(t, serial)
		for _, w := range []int{2, 3} {
			cfg.Workers = w
			trace.Reset()
			r := run(t, cfg)
			if r.TraceHash != serial.TraceHash || r.Digest != serial.Digest {
				t.Fatalf("seed %d, %d nodes: %d workers gave trace %.16s digest %.16s, one gave %.16s %.16s",
					cfg.Seed, cfg.Nodes, w, r.TraceHash, r.Digest, serial.TraceHash, serial.Digest)
			}
			if got := runKey(t, r); got != want || !reflect.DeepEqual(r.Spreads, serial.Spreads) {
				t.Fatalf("seed %d: same trace, different reports with %d workers:\n%s\n%s", cfg.Seed, w, got, want)
			}
			if printed(trace.String()) != text {
				t.Fatalf("seed %d: same trace hash, different printed traces with %d workers", cfg.Seed, w)
			}
			parallel += r.Windows.Parallel
		}
		if !serial.Converged {
			t.Errorf("seed %d: %s\nreplay: %s", cfg.Seed, serial.FirstViolation(), serial.Replay)
		}
		relays += serial.Relays.Altered + serial.Relays.Dropped
		t.Logf("seed %d, %d nodes: trace %.16s; %d windows, %.1f events each, %d crashes (%d in writes), %d relayed payloads tampered",
			cfg.Seed, cfg.Nodes, serial.TraceHash, serial.Windows.Windows, float64(serial.Windows.Events)/float64(serial.Windows.Windows),
			serial.Crashes, serial.CutWrites, serial.Relays.Altered+serial.Relays.Dropped)
	}
	if parallel == 0 {
		t.Fatal("no window ran on more than one worker: the comparison proved nothing")
	}
	if !testing.Short() && (cut == 0 || relays == 0) {
		t.Fatalf("the configs exercised too little: %d writes cut in a window, %d relayed payloads tampered", cut, relays)
	}
}
