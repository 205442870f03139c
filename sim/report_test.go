package sim

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The scale figures of the report (report.go, spread.go) each move with
// what they measure: a run made to inflate one shows it inflated.

// Connections: with direct sends every node talks to every other holder
// (N−1 peers, over the goal of 16 at N=20); with trees on, tree frames
// alone go to fewer.
func TestConnectionsFigure(t *testing.T) {
	base := Config{Nodes: 20, Ops: 200, Seed: 3, Teams: 0, Projects: 1}
	base.Engine.TreeThreshold = -1
	direct := run(t, base)
	if !direct.Converged {
		t.Fatalf("direct: %s", direct.FirstViolation())
	}
	if c := direct.Connections; c.Max != 19 || c.Mean != 19 || c.Tree[1] != 0 || c.WindowMax != 19 {
		t.Fatalf("direct sends, one namespace all 20 hold: connections %+v, want 19 each, no tree frames", c)
	}
	// Window by window, and by what the frames carried: the direct deltas
	// and their acks reach every holder within the windows, no tree frame
	// does, and no window's mean or most passes the run's.
	if c := direct.Connections; len(c.Windows) == 0 || len(c.Windows) != len(c.WindowMaxes) || c.WindowBy[0] != 0 || c.WindowBy[4] == 0 ||
		slices.Max(c.Windows) > float64(c.WindowMax) || slices.Max(c.WindowMaxes) != c.WindowMax ||
		c.WindowBy[1]+c.WindowBy[2]+c.WindowBy[3]+c.WindowBy[4] < c.WindowMean {
		t.Fatalf("direct sends: windows %+v", c)
	}
	if testing.Short() || raceEnabled {
		return
	}
	base.Engine.TreeThreshold = 0
	trees := run(t, base)
	if c := trees.Connections; c.Tree[0] == 0 || c.Tree[0] > c.Mean || c.WindowMax > c.Max {
		t.Fatalf("trees: connections %+v", c)
	}
	t.Logf("connections direct %+v, trees %+v", direct.Connections, trees.Connections)
}

// Rounds: loss makes updates take longer to reach their holders, and the
// model's rounds grow with it.
func TestRoundsFigure(t *testing.T) {
	base := Config{Nodes: 20, Ops: 200, Seed: 4, Teams: 0, Projects: 1, Track: 30}
	clean := run(t, base)
	if clean.Rounds.Updates == 0 || clean.Rounds.Hops < 1 || clean.Rounds.Latencies <= 0 {
		t.Fatalf("no loss: rounds %+v", clean.Rounds)
	}
	base.Loss = 0.3
	lossy := run(t, base)
	if !lossy.Converged {
		t.Fatalf("30%% loss: %s", lossy.FirstViolation())
	}
	t.Logf("rounds: no loss %+v; 30%% loss %+v", clean.Rounds, lossy.Rounds)
	if lossy.Rounds.Latencies <= clean.Rounds.Latencies || lossy.Rounds.Model <= clean.Rounds.Model {
		t.Fatalf("30%% loss took no longer than none: %+v vs %+v", lossy.Rounds, clean.Rounds)
	}
}

// The model matches sync/epidemic's figures (doc.go, "Measured": 13.7
// rounds at N=100, 10% loss) and grows with N and loss.
func TestEpidemicModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r100 := epidemicRounds(rng, 100, 0.1, 400)
	if math.Abs(r100-13.7) > 0.6 {
		t.Fatalf("N=100, 10%% loss: %.2f rounds, want about 13.7", r100)
	}
	if r := epidemicRounds(rng, 100, 0, 400); r >= r100 {
		t.Fatalf("no loss %.2f rounds, not fewer than 10%% loss's %.2f", r, r100)
	}
	if r := epidemicRounds(rng, 1000, 0.1, 100); r <= r100 {
		t.Fatalf("N=1000 %.2f rounds, not more than N=100's %.2f", r, r100)
	}
}

// The rounds of a tracked update: the first 99.99% of its holders by
// time, the most hops among them, the time of the last of them.
func TestRoundsOfSpread(t *testing.T) {
	s := &Sim{cfg: Config{LatencyMin: 10 * time.Millisecond, LatencyMax: 50 * time.Millisecond, Seed: 1}}
	s.tracked = []*spread{
		{target: 3, got: map[int]time.Duration{0: 0, 1: 40 * time.Millisecond, 2: 80 * time.Millisecond},
			hops: map[int]int{0: 0, 1: 1, 2: 4}},
		{target: 3, got: map[int]time.Duration{0: 0, 1: 40 * time.Millisecond}, hops: map[int]int{0: 0, 1: 1}}, // short
		{target: 1, got: map[int]time.Duration{0: 0}, hops: map[int]int{0: 0}},                                 // no holder but its writer
	}
	r := s.rounds()
	// mean latency 30ms + 10ms of jitter: 80ms is 2 latencies
	if r.Updates != 1 || r.Short != 1 || r.Hops != 4 || r.Latencies != 2 || r.Holders != 3 || r.Model <= 0 {
		t.Fatalf("rounds %+v", r)
	}
}

// The tracked updates are the workload's writes, one an operation at
// most: none of the set-up's, which all go at t=0 before any node holds
// the namespace (they measured a join's syncs, not the spread).
func TestTrackedUpdatesAreWorkloadWrites(t *testing.T) {
	s, err := New(Config{Nodes: 100, Ops: 300, Loss: 0.1, Seed: 1, Teams: 0, Projects: 1, Track: 40})
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	if len(s.tracked) == 0 {
		t.Fatal("no update tracked")
	}
	seen := map[time.Duration]bool{}
	for _, sp := range s.tracked {
		if sp.at == 0 {
			t.Fatalf("tracked %v of %s, written at t=0: a set-up write", sp.dot, sp.ns)
		}
		if seen[sp.at] {
			t.Fatalf("two tracked updates written at %v: one operation's deltas", sp.at)
		}
		seen[sp.at] = true
	}
}

// A relay that alters what it forwards, turned hostile before the update
// was made, is not counted among its holders (its neighbours distrust it,
// so it gets the update late from a sync); one that drops is counted, and
// so is one turned hostile after the update.
func TestRoundsLeaveOutDistrustedRelays(t *testing.T) {
	const ns = "project://p0"
	for _, c := range []struct {
		name      string
		relay     hostileRelay
		latencies float64
		holders   float64
	}{
		{"altering, before", hostileRelay{at: 100 * time.Millisecond}, 2, 3},
		{"dropping, before", hostileRelay{at: 100 * time.Millisecond, drop: true}, 125, 4},
		{"altering, after", hostileRelay{at: 2 * time.Second}, 125, 4},
	} {
		s := &Sim{cfg: Config{LatencyMin: 10 * time.Millisecond, LatencyMax: 50 * time.Millisecond, Seed: 1},
			nsIdx: map[string]int{ns: 0}}
		s.relay.hostile = map[[2]int]*hostileRelay{{3, 0}: &c.relay}
		s.tracked = []*spread{{ns: ns, at: time.Second, target: 4,
			got:  map[int]time.Duration{0: 0, 1: 40 * time.Millisecond, 2: 80 * time.Millisecond, 3: 5 * time.Second},
			hops: map[int]int{0: 0, 1: 1, 2: 2, 3: 1}}}
		// mean latency 30ms + 10ms of jitter: 80ms is 2 latencies, 5s 125
		if r := s.rounds(); r.Updates != 1 || r.Latencies != c.latencies || r.Holders != c.holders {
			t.Errorf("%s: rounds %+v, want %v latencies over %v holders", c.name, r, c.latencies, c.holders)
		}
	}
}

// Tree frames by kind add up to the tree frames.
func TestTreeKindsAddUp(t *testing.T) {
	r := run(t, Config{Nodes: 10, Ops: 100, Seed: 3, Loss: 0.05, Teams: 1, Projects: 1})
	var msgs, bytes uint64
	for _, k := range r.TreeKinds {
		msgs += k.Messages
		bytes += k.Bytes
	}
	if r.TreeMessages == 0 || msgs != r.TreeMessages || bytes != r.TreeBytes {
		t.Fatalf("tree frames %d (%d bytes), by kind %d (%d bytes): %+v", r.TreeMessages, r.TreeBytes, msgs, bytes, r.TreeKinds)
	}
	if r.SyncRequestMsgs == 0 || r.SyncRequestMsgs >= r.SyncMessages {
		t.Fatalf("sync requests %d of %d sync frames", r.SyncRequestMsgs, r.SyncMessages)
	}
}

var (
	scale         = flag.String("scale", "", "run the scale figures of issue 14: NODES/OPS/LOSS, e.g. 1000/100/0.1")
	scaleOnDemand = flag.Int("bindings-on-demand", 0, "with -scale: the nodes' BindingsOnDemandAt (0: never)")
	scaleSpan     = flag.Duration("span", 0, "with -scale: the virtual time the operations are spread over (default Config.Span's)")
)

// TestScaleFigures prints the report's scale figures for one namespace
// every node holds (the rounds and connections of issue 14):
//
//	go test ./sim -run TestScaleFigures -scale 1000/100/0.1 -v
//
// (-bindings-on-demand 2 sends the bindings on demand; -span 3m spreads the
// operations over three minutes, so the connections' windows show a node
// once the overlays have formed, under writes.)
func TestScaleFigures(t *testing.T) {
	if *scale == "" {
		t.Skip("run with -scale NODES/OPS/LOSS")
	}
	var cfg Config
	if _, err := fmt.Sscanf(*scale, "%d/%d/%g", &cfg.Nodes, &cfg.Ops, &cfg.Loss); err != nil {
		t.Fatalf("-scale %q: %v", *scale, err)
	}
	cfg.Seed, cfg.Teams, cfg.Projects, cfg.Track = 1, 0, 1, 40
	cfg.BindingsOnDemandAt = *scaleOnDemand
	cfg.Span = *scaleSpan
	r := run(t, cfg)
	var b strings.Builder
	r.WriteText(&b)
	t.Logf("%s", b.String())
}
