package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSoakShort runs the soak verb end to end for 12 seconds: five real
// nodes, writers on each, a fault every 1.5 s (seed 4 draws a SIGSTOP
// then a kill -9 first), then the checks. The RSS bound is not judged here
// (a node's RSS grows in its first minute, and 12 s holds none of it): the
// bound is raised out of the way and the figures are only printed. Each
// agent keeps 5 memories (--keep), so most writes are overwrites, checked
// on every node as saves are. Skipped with -short; it takes about 15 s on
// the shared machine.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five real nodes for 12 s")
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"soak", "--bin", binPath, "--dir", t.TempDir(),
		"--for", "12s", "--fault-every", "1500ms", "--down-max", "1s", "--pause-min", "1s", "--pause-max", "2s",
		"--rss-every", "1s", "--rss-warmup", "4s", "--rss-drift", "100", "--settle", "90s", "--keep", "5", "--seed", "4"}, nil, &out, &errb)
	t.Log(out.String())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		`(?m)^  lost writes +0 `,
		`(?m)^  digests agree +yes`,
		`(?m)^  faults injected .*SIGSTOP, SIGCONT`,
		`(?m)^  faults injected .*kill -9, restart on new ports`,
		`(?m)^    s0 #1 .* MiB \(.* anon\), max .* MiB \(.* anon\), drift`,
		`(?m)^          live heap [0-9.]+ MiB, max [0-9.]+ MiB, drift`,
		`(?m)^result: PASS$`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks %s", want)
		}
	}
	m := regexp.MustCompile(`saves acknowledged +(\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no count of acknowledged saves")
	}
	if n, _ := strconv.Atoi(m[1]); n < 100 {
		t.Errorf("want at least 100 acknowledged saves from 15 agents in 12 s")
	}
	k := regexp.MustCompile(`\(\d+ acknowledged writes, to (\d+) memories`).FindStringSubmatch(out.String())
	if k == nil {
		t.Fatal("no count of memories written")
	}
	if n, _ := strconv.Atoi(k[1]); n > 15*5 || n == 0 {
		t.Errorf("%d memories written; want at most 5 for each of 15 agents", n)
	}
}

// An overwrite acknowledged is lost on a node whose copy holds an earlier
// write; a copy holding a later one (applied, its answer lost) has it.
func TestSoakOverwritesLost(t *testing.T) {
	acks := []soakAck{{"m1", "a", 0}, {"m2", "a", 1}, {"m1", "a", 2}, {"m2", "a", 3}, {"m3", "a", 4}}
	latest := lastAcked(acks)
	if len(latest) != 3 || latest[0].version != 2 || latest[1].version != 3 || latest[2].version != 4 {
		t.Fatalf("lastAcked = %+v", latest)
	}
	if lost := lostOn(latest, map[string]int{"m1": 2, "m2": 5, "m3": 4}); len(lost) != 0 {
		t.Errorf("a node holding every last write, one later, lacks %+v", lost)
	}
	lost := lostOn(latest, map[string]int{"m1": 0, "m2": 3, "x": 9})
	if len(lost) != 2 || lost[0].id != "m1" || lost[1].id != "m3" {
		t.Errorf("stale m1 and missing m3: lostOn = %+v", lost)
	}
	if k, ok := soakVersion(soakTitle("agent://s0b", 17, "a title: with a colon")); !ok || k != 17 {
		t.Errorf("soakVersion = %d, %v; want 17", k, ok)
	}
	if _, ok := soakVersion("imported by hand"); ok {
		t.Error("a title without a write number gave one")
	}
}

// TestSoakReportFails proves the checks can fail: a missing acknowledged
// id, digests that never agreed and an RSS past its bound each mark a
// failure.
func TestSoakReportFails(t *testing.T) {
	var out bytes.Buffer
	s := newSoak(soakConfig{Nodes: 2, Agents: 1, RSSWarm: time.Minute, RSSDrift: 0.2, Settle: time.Second}, &out)
	now := time.Now()
	s.start = now.Add(-5 * time.Minute)
	for _, name := range []string{"s0", "s1"} {
		s.nodes = append(s.nodes, &soakNode{name: name, incs: []*soakIncarnation{{started: s.start, rss: []rssSample{
			{time.Minute, 40 << 10, 30 << 10, 20 << 10}, {2 * time.Minute, 44 << 10, 34 << 10, 0}, {3 * time.Minute, 47 << 10, 37 << 10, 21 << 10},
		}}}})
	}
	s.nodes[1].incs[0].rss[2].kib = 52 << 10  // +30%
	s.nodes[1].incs[0].rss[2].live = 26 << 10 // +30%
	acks := []soakAck{{id: "m1", agent: "agent://s0"}, {id: "m2", agent: "agent://s1"}}
	missing := [][]soakAck{nil, acks[1:]}
	s.report(acks, now, now, now, "", false, []int{2, 1}, missing)
	if s.failures != 3 {
		t.Errorf("failures = %d, want 3 (lost, digests, RSS of s1; the live heap is not judged):\n%s", s.failures, out.String())
	}
	for _, want := range []string{"lost writes         1 ", "s1 lacks 1, e.g. m2 by agent://s1", "digests agree       no", "drift +30.0%   <- FAIL", "drift +17.5%\n",
		"live heap 20.0 MiB, max 21.0 MiB, drift +5.0%; floor 20.0 -> 21.0 MiB (+5.0%)\n", "live heap 20.0 MiB, max 26.0 MiB, drift +30.0%; floor 20.0 -> 26.0 MiB (+30.0%)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRSSDrift(t *testing.T) {
	samples := []rssSample{{10 * time.Second, 100, 50, 0}, {time.Minute, 200, 100, 0}, {2 * time.Minute, 230, 130, 0}, {3 * time.Minute, 150, 50, 0}}
	base, peak, drift, ok := rssDrift(samples, time.Minute)
	if !ok || base != 200 || peak != 230 || drift != -0.25 {
		t.Errorf("rssDrift = %d, %d, %v, %v; want 200, 230, -0.25 (the farthest sample, below), true", base, peak, drift, ok)
	}
	if _, _, _, ok := rssDrift(samples[:1], time.Minute); ok {
		t.Error("a process younger than the warm-up was judged")
	}
}

// The live heap is judged over the samples that read it, from the first
// one past the warm-up; the metric is found in the node's /metrics text.
func TestLiveHeapDrift(t *testing.T) {
	samples := []rssSample{{time.Minute, 100, 50, 0}, {2 * time.Minute, 120, 60, 40}, {3 * time.Minute, 90, 40, 0}, {4 * time.Minute, 140, 70, 44}}
	base, peak, drift, ok := liveDrift(samples, time.Minute)
	if !ok || base != 40 || peak != 44 || drift < 0.0999 || drift > 0.1001 {
		t.Errorf("liveDrift = %d, %d, %v, %v; want 40, 44, +0.10, true", base, peak, drift, ok)
	}
	text := "# HELP go_gc_heap_live_bytes Heap memory occupied by live objects.\n# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes 2.097152e+07\ngo_goroutines 12\n"
	if k := liveHeapOf(text); k != 20480 {
		t.Errorf("liveHeapOf = %d KiB, want 20480", k)
	}
	// The floor: the least of the first and of the last minute past the
	// warm-up; a peak in between (a memtable flushed) does not move it.
	long := []rssSample{{time.Minute, 1, 1, 20}, {90 * time.Second, 1, 1, 30}, {2 * time.Minute, 1, 1, 18}, {3 * time.Minute, 1, 1, 40},
		{4 * time.Minute, 1, 1, 21}, {270 * time.Second, 1, 1, 19}, {5 * time.Minute, 1, 1, 25}}
	if first, last, ok := liveFloor(long, time.Minute, time.Minute); !ok || first != 20 || last != 19 {
		t.Errorf("liveFloor = %d, %d, %v; want 20, 19, true", first, last, ok)
	}
	if _, _, ok := liveFloor(long[:3], time.Minute, time.Minute); ok {
		t.Error("a floor of two minutes that overlap")
	}
	if k := liveHeapOf("go_goroutines 12\n"); k != 0 {
		t.Errorf("no live heap in the text, got %d", k)
	}
}
