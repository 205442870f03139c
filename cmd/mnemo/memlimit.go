package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

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
