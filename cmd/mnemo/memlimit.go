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

// liveHeapMetric is the heap the last collection found reachable; the
// others give the runtime's own overhead (runtimeOverhead).
const (
	liveHeapMetric  = "/gc/heap/live:bytes"
	totalMetric     = "/memory/classes/total:bytes"
	releasedMetric  = "/memory/classes/heap/released:bytes"
	objectsMetric   = "/memory/classes/heap/objects:bytes"
	freePagesMetric = "/memory/classes/heap/free:bytes"
)

// A soft memory limit at or below the live heap makes the collector run
// back to back (the runtime caps it at half the CPU), and a node whose live
// heap passes the limit for a while — Badger's table builders after a bulk
// load hold ~100 MiB for the half minute or so its compactions take (they
// are pooled and sized by Badger, which no option bounds: see
// node/store/badgerkv/doc.go) — spends that time collecting instead of
// serving. followLiveHeap therefore keeps the limit at base or at the live
// heap plus a quarter plus the runtime's own overhead (limitFor), whichever
// is larger, rereading them every period until ctx is done: once that is
// past base the collector has a quarter of the live heap as room (looser than
// GOGC=25: part of the overhead is free room in spans the allocator fills
// again), so the process may pass 100 MiB while Badger's buffers drain
// (100-126 MiB for ~16 s after a bulk load, README "Search at 100k", the
// seventh round); once the heap is back down, base binds again.
//
// Measured with mnemo bench search (100k memories bulk-loaded, then
// searched at once; 96 MiB base; the two runs one after the other on this
// shared machine): CPU per search right after the load 3.2 → 1.4 ms, over
// the next 2,000 searches 2.6 → 1.5 ms, p95 10.9 → 6.7 and 19.9 → 7.7 ms;
// the load itself 76 → 63 s; after the compactions the same (1.5 ms, RssAnon
// 80 MiB); the price is the peak while they run, VmHWM 298 → 369 MiB.
func followLiveHeap(ctx context.Context, base int64, period time.Duration) {
	sample := []metrics.Sample{{Name: liveHeapMetric}, {Name: totalMetric}, {Name: releasedMetric}, {Name: objectsMetric}, {Name: freePagesMetric}}
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
			return // no live heap to follow
		}
		var over uint64 // 0 if this runtime lacks a class: the live heap is still followed
		classes := true
		for _, s := range sample[1:] {
			classes = classes && s.Value.Kind() == metrics.KindUint64
		}
		if classes {
			over = runtimeOverhead(sample[1].Value.Uint64(), sample[2].Value.Uint64(), sample[3].Value.Uint64(), sample[4].Value.Uint64())
		}
		want := limitFor(base, sample[0].Value.Uint64(), over)
		if want != set {
			debug.SetMemoryLimit(want)
			set = want
		}
	}
}

// limitFor is the soft limit for a live heap of live bytes under base,
// when the runtime's own overhead (runtimeOverhead) is over bytes: the
// live heap plus a quarter plus the overhead, or base if that is larger.
//
// The overhead counts against the limit as the heap does, and after
// Badger's compactions it grows: the unused room of heap spans and the
// metadata were ~27-29 MiB against ~15-19 settled (mnemo bench search's
// runtime line, issue 15). A limit of the live heap plus a quarter alone
// then left the collector no room while the heap came back down through
// ~55-80 MiB live, as Badger's pool of table-builder buffers drains one
// every 2 s: collections back to back for ~8 s, starting ~8 s after a
// bulk load (searching throughout: 127-219 collections per 4,000
// searches against ~24 settled), or from the start when a node reopens a
// directory closed right after one. Settled, live heap plus a quarter plus
// the overhead is under base (47 MiB live, 15-19 overhead: ~75 < 80 MiB),
// so base binds as before.
func limitFor(base int64, live, over uint64) int64 {
	room := live / 4
	if live > math.MaxInt64-room || over > math.MaxInt64-live-room {
		return math.MaxInt64
	}
	if want := int64(live + room + over); want > base {
		return want
	}
	return base
}

// runtimeOverhead is what the runtime counts against the limit besides
// heap objects and free pages (the unused room in heap spans, metadata,
// stacks): total mapped less released, objects and free, from
// runtime/metrics' memory classes; 0 if they do not add up.
func runtimeOverhead(total, released, objects, free uint64) uint64 {
	if released+objects+free > total {
		return 0
	}
	return total - released - objects - free
}
