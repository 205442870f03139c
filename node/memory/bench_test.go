package memory

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// Benchmarks run on disk (b.TempDir), over Badger as a node does. Each uses
// b.Loop, so its setup runs once however many iterations are timed, and
// reports percentiles from per-operation timings with b.ReportMetric. The README figures come from
//
//	go test -run XXX -bench 'SaveDurable$|Search10k|Search100k$' -benchtime 3000x ./node/memory/
//	go test -run XXX -bench SaveDurableParallel -benchtime 20000x ./node/memory/
//	go test -run XXX -bench Compact200 -benchtime 300x ./node/memory/
//
// and the resident memory of a real node process from TestResidentMemoryNode
// in cmd/mnemo (rss_test.go).

var benchAgent = namespace.MustParse("agent://alice")

func openBench(tb testing.TB, dir string, noSync bool, feats ...Feature) *Service {
	tb.Helper()
	kv, err := badgerkv.Open(dir, badgerkv.Options{NoSync: noSync})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Open(Config{KV: kv, Agent: benchAgent, Features: feats})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// load saves n corpus memories through Service.Save.
func load(tb testing.TB, s *Service, c *corpus, n int) {
	tb.Helper()
	ctx := context.Background()
	caller := Caller{Principal: benchAgent}
	for range n {
		if _, err := s.Save(ctx, caller, c.next()); err != nil {
			tb.Fatal(err)
		}
	}
}

// loaded returns a synced service over dir holding n corpus memories,
// written with NoSync and reopened, as a restarted node would be.
func loaded(tb testing.TB, n int, seed uint64) (*Service, *corpus) {
	tb.Helper()
	dir := tb.TempDir()
	c := newCorpus(seed)
	s := openBench(tb, dir, true)
	start := time.Now()
	load(tb, s, c, n)
	tb.Logf("loaded %d memories in %v", n, time.Since(start).Round(time.Millisecond))
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	start = time.Now()
	s = openBench(tb, dir, false)
	tb.Logf("reopened (index rebuilt) in %v", time.Since(start).Round(time.Millisecond))
	tb.Cleanup(func() { s.Close() })
	return s, c
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func BenchmarkSaveDurable(b *testing.B) {
	s := openBench(b, b.TempDir(), false)
	defer s.Close()
	c := newCorpus(1)
	caller := Caller{Principal: benchAgent}
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		req := c.next()
		t0 := time.Now()
		if _, err := s.Save(ctx, caller, req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(us(percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(us(percentile(lat, 0.99)), "p99-µs")
}

// BenchmarkSaveDurableParallel saves from 32 goroutines at once (durable
// saves share commits: store's group commit); ns/op is wall time per save
// over all of them. The HTTP figures come from "mnemo bench saves".
func BenchmarkSaveDurableParallel(b *testing.B) {
	s := openBench(b, b.TempDir(), false)
	defer s.Close()
	caller := Caller{Principal: benchAgent}
	ctx := context.Background()
	var seed atomic.Uint64
	b.SetParallelism(16) // × GOMAXPROCS goroutines
	b.RunParallel(func(pb *testing.PB) {
		c := newCorpus(seed.Add(1))
		for pb.Next() {
			if _, err := s.Save(ctx, caller, c.next()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchSearch(b *testing.B, n int) {
	s, c := loaded(b, n, 7)
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = c.query()
	}
	caller := Caller{Principal: benchAgent}
	ctx := context.Background()
	var lat []time.Duration
	hits := 0
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		res, err := s.Search(ctx, caller, SearchQuery{Query: q})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		hits += len(res.Results)
	}
	b.ReportMetric(us(percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(us(percentile(lat, 0.95)), "p95-µs")
	b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
}

func BenchmarkSearch10k(b *testing.B)  { benchSearch(b, 10_000) }
func BenchmarkSearch100k(b *testing.B) { benchSearch(b, 100_000) }

// BenchmarkCompact200 soft-deletes 200 memories and writes their summary,
// synced, among 10k others. The 200 are written before each timed
// operation in one transaction (one fsync), outside the timer, so the
// corpus grows by 201 memories per iteration: use a fixed count,
//
//	go test -run XXX -bench Compact200 -benchtime 300x ./node/memory/
func BenchmarkCompact200(b *testing.B) {
	s, c := loaded(b, 10_000, 11)
	caller := Caller{Principal: benchAgent}
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		ids := bulkSave(b, s, caller, c, MaxCompactLimit)
		b.StartTimer()
		t0 := time.Now()
		res, err := s.Compact(ctx, caller, CompactRequest{CompactIDs: ids, SummaryTitle: "Compacted",
			SummaryContent: "Two hundred notes about " + c.query()})
		lat = append(lat, time.Since(t0))
		if err != nil || res.Compacted != MaxCompactLimit {
			b.Fatalf("%+v %v", res, err)
		}
	}
	b.ReportMetric(float64(percentile(lat, 0.50))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.95))/1e6, "p95-ms")
}

// bulkSave writes n corpus memories in the caller's namespace in one
// transaction.
func bulkSave(tb testing.TB, s *Service, caller Caller, c *corpus, n int) []string {
	tb.Helper()
	ids := make([]string, 0, n)
	err := s.write(func(tx *store.Tx) error {
		for range n {
			req := c.next()
			req.Namespace, req.TopicKey = "", ""
			p, err := normaliseSave(&req)
			if err != nil {
				return err
			}
			r, err := s.saveTx(tx, caller, caller.Principal, req, p)
			if err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// TestResidentMemory100k reports the heap and RSS of an idle service and of
// one holding 100k memories, in the test process: the figures include the
// loader's garbage and no memory limit (cmd/mnemo's TestResidentMemoryNode
// measures a real `mnemo node`). It takes a while, so it runs only with
// MNEMO_MEM_TEST=1 (MNEMO_MEM_N changes the count, MNEMO_MEM_PROFILE=FILE
// writes a heap profile at the end):
//
//	MNEMO_MEM_TEST=1 go test -run TestResidentMemory100k -v ./node/memory/
func TestResidentMemory100k(t *testing.T) {
	if os.Getenv("MNEMO_MEM_TEST") != "1" {
		t.Skip("set MNEMO_MEM_TEST=1 to measure resident memory")
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MNEMO_MEM_N")); err == nil && v > 0 {
		n = v
	}
	dir := t.TempDir()
	report := func(label string) {
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss := vmRSS(t)
		line := fmt.Sprintf("%-34s heap+stack in use %6.1f MiB   VmRSS %6.1f MiB", label,
			float64(ms.HeapInuse+ms.StackInuse)/(1<<20), float64(rss)/(1<<20))
		t.Log(line)
		fmt.Println(line)
	}
	report("process, before opening")
	s := openBench(t, dir, true)
	report("idle (fresh service)")
	c := newCorpus(3)
	start := time.Now()
	load(t, s, c, n)
	t.Logf("loaded %d in %v", n, time.Since(start).Round(time.Millisecond))
	report(fmt.Sprintf("%d memories, after loading", n))
	if _, err := s.Search(context.Background(), Caller{Principal: benchAgent}, SearchQuery{Query: c.query()}); err != nil {
		t.Fatal(err)
	}
	report(fmt.Sprintf("%d memories, searched", n))
	s.Close()
	c = nil
	report("closed")
	s = openBench(t, dir, false)
	defer s.Close()
	report(fmt.Sprintf("%d memories, reopened", n))
	if _, err := s.Search(context.Background(), Caller{Principal: benchAgent}, SearchQuery{Query: "database latency"}); err != nil {
		t.Fatal(err)
	}
	report(fmt.Sprintf("%d memories, reopened + searched", n))
	if path := os.Getenv("MNEMO_MEM_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// vmRSS reads the resident set size from /proc/self/status.
func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status: ", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS line")
	return 0
}
