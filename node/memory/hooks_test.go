package memory

import (
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/store"
)

// Hooks for this directory's external tests (package memory_test,
// features_test.go), which attach feature packages (surgery, capsule) that
// the internal tests cannot import: feature packages import this one.

// KVIn is kvIn: Badger in dir, or nil (a MemKV) for "".
func KVIn(t testing.TB, dir string) store.KV { return badgerkvtest.In(t, dir) }

// BenchAgent owns the benchmark services.
var BenchAgent = benchAgent

// LoadedWith is loaded with feats() attached at each open (a feature holds
// one Service's state, so each open gets new ones): the service over its
// directory holding n corpus memories, reopened as a restarted node, and
// a generator of corpus queries.
func LoadedWith(tb testing.TB, n int, seed uint64, feats func() []Feature) (*Service, string, func() string) {
	tb.Helper()
	dir := tb.TempDir()
	c := newCorpus(seed)
	s := openBench(tb, dir, true, feats()...)
	load(tb, s, c, n)
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	s = openBench(tb, dir, false, feats()...)
	tb.Cleanup(func() { s.Close() })
	return s, dir, c.query
}

// OpenBenchWith is openBench with features.
func OpenBenchWith(tb testing.TB, dir string, noSync bool, feats ...Feature) *Service {
	return openBench(tb, dir, noSync, feats...)
}

// Percentile and Micros report latencies as the benchmarks here do.
func Percentile(d []time.Duration, p float64) time.Duration { return percentile(d, p) }
func Micros(d time.Duration) float64                        { return us(d) }
