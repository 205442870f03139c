package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The default limit (defaultMemoryLimit, node_cmd.go) is 80 MiB since issue
// 15's fifth round, 96 before. Settled, the heap fills the limit between
// collections (RssAnon is the limit less ~17 MiB of the runtime's own and
// of heap never touched), so the limit sets the anonymous part of the
// resident size, and the collections it costs are what a search pays:
// each search makes ~100 KB of garbage in the bench (~75 in the node),
// ~55 of it Badger copying each hit's value three times, and a
// collection of a 100k node's ~45 MiB live heap costs ~4.5 ms of CPU.
// mnemo bench search at 100k (one kept directory, a fresh copy each run,
// the same binary, load 7-10), limit 96 / 84 / 80 MiB, 6 / 3 / 6 runs
// alternately: collections during the 3,000 searches 11-12 / 20-22 /
// 30-33; CPU per search over the 2,000, medians, 605 / 639 / 614 µs
// (ranges 569-625 / 586-647 / 595-666: the cost, ~30 µs by the
// collections' count, is within this machine's noise); RssAnon after
// 2,500 searches 77.4-78.2 / 66.2-66.8 / 62.4-63.0 MiB. With the
// executable's pages (~15 MiB in use) and the table pages searches may
// map before a hand-back (node.FilePagesBudget, 16 MiB), 80 MiB keeps a
// searching node under 100 MiB; 96 did not (102-114 MiB). Below 80 the
// collections multiply: 72 MiB 127 collections and +19% CPU, 64 MiB 426
// and +120% (one run each, load ~2).

// applyMemoryLimit sets the soft memory limit (0: leave the runtime's,
// as $GOMEMLIMIT set it), returns the garbage made so far to the system
// now rather than at the next collections, and keeps the limit following
// a live heap that outgrows it (followLiveHeap) until the returned stop is
// called or ctx is done.
func applyMemoryLimit(ctx context.Context, limit int64) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	debug.FreeOSMemory()
	if limit == math.MaxInt64 {
		return func() {}
	}
	fctx, cancel := context.WithCancel(ctx)
	go followLiveHeap(fctx, limit, followPeriod)
	return cancel
}

// followPeriod is how often followLiveHeap rereads the live heap.
const followPeriod = 500 * time.Millisecond

// liveHeapMetric is the heap the last collection found reachable.
const liveHeapMetric = "/gc/heap/live:bytes"

// A soft memory limit at or below the live heap makes the collector run
// back to back (the runtime caps it at half the CPU), and a node whose live
// heap passes the limit for a while — Badger's table builders after a bulk
// load hold ~100 MiB for the half minute or so its compactions take (they
// are pooled and sized by Badger, which no option bounds: see
// node/store/badgerkv/doc.go) — spends that time collecting instead of
// serving. followLiveHeap therefore keeps the limit at base or at the live
// heap plus a quarter, whichever is larger, rereading the live heap every
// period until ctx is done: past four fifths of base the collector paces
// itself as with GOGC=25, the process growing by at most a quarter of what
// it really holds; once the heap is back down, base binds again.
//
// Measured with mnemo bench search (100k memories bulk-loaded, then
// searched at once; 96 MiB base; the two runs one after the other on this
// shared machine): CPU per search right after the load 3.2 → 1.4 ms, over
// the next 2,000 searches 2.6 → 1.5 ms, p95 10.9 → 6.7 and 19.9 → 7.7 ms;
// the load itself 76 → 63 s; after the compactions the same (1.5 ms, RssAnon
// 80 MiB); the price is the peak while they run, VmHWM 298 → 369 MiB.
func followLiveHeap(ctx context.Context, base int64, period time.Duration) {
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	t := time.NewTicker(period)
	defer t.Stop()
	set := base
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		want := limitFor(base, sample[0].Value.Uint64())
		if want != set {
			debug.SetMemoryLimit(want)
			set = want
		}
	}
}

// limitFor is the soft limit for a live heap of live bytes under base.
func limitFor(base int64, live uint64) int64 {
	if live > math.MaxInt64/5*4 {
		return math.MaxInt64
	}
	if want := int64(live + live/4); want > base {
		return want
	}
	return base
}
