package badgerkv

import (
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger pools its table builders' allocators (DB.allocPool: up to 8, each
// holding the buffers its biggest table grew it to) and frees one of them
// per 2 s without a builder taken. After a bulk load of 100k memories the
// pool held 8 allocators of 12 MiB each, 96 of the node's 143 MiB of live
// heap (mnemo bench search --memprofile), for the ~16 s after the last
// compaction that the pool took to drain, and the node's soft limit
// (cmd/mnemo/memlimit.go) followed them up: RSS ~2x a settled node's. No
// option bounds the pool or its pace, and the allocators are plain Go
// memory (z.Calloc without the jemalloc tag), so the KV drains the pool
// itself once no builder has been taken for builderQuiet: it reaches
// the pool through reflection (drainer), releases each allocator as
// Badger would, and when that freed builderShedMin or more, collects and
// returns the freed memory to the system at once (debug.FreeOSMemory:
// otherwise an idle node keeps it until its next collections and the
// runtime's scavenger), and hands the tables' mapped pages back. A Badger
// whose fields no longer match finds no pool and is left to drain its own
// (TestBuilderPoolFound fails first).
//
// This is the one place the KV reaches into Badger's private fields, and
// it only does sooner what Badger's own AllocatorPool.freeupAllocators
// does every 2 s: take an idle allocator off the pool's channel (a
// receive, so never one a builder holds) and Release it. The options that
// would shrink the pool instead were measured first (issue 15, eighth
// round; the README): tables of 512 KiB at multiplier 1 left a 68 MiB
// live heap and 4-8x the tables, 4 MiB memtables 138 MiB, and
// NumCompactors is already Badger's least (2); compactions split into
// parallel builders, which is how eight allocators fill the pool.

// builderQuiet is how long no table builder must have been taken
// before the pool is drained: flushes and compactions take builders
// back to back, and a bulk load's imports leave gaps of well under a
// second between its flushes. builderTick is how often the count is read.
const (
	builderTick  = 250 * time.Millisecond
	builderQuiet = 500 * time.Millisecond
)

// builderShedMin is the least a drain must free for the KV to collect and
// hand the memory back at once (a memtable flush alone returns one
// allocator of ~16 MiB; smaller drains wait for the next collection).
const builderShedMin = 8 << 20

// drainer reaches Badger's allocator pool: its channel of idle
// allocators and its count of builders taken.
type drainer struct {
	idle chan *z.Allocator
	gets *int64
}

// builderPool finds db's allocator pool, or ok false if Badger's fields
// are not as this was written against (badger v4.9, ristretto v2.2).
func builderPool(db *badger.DB) (d drainer, ok bool) {
	defer func() {
		if recover() != nil {
			d, ok = drainer{}, false
		}
	}()
	f := reflect.ValueOf(db).Elem().FieldByName("allocPool")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*z.AllocatorPool]() || f.IsNil() {
		return drainer{}, false
	}
	p := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*z.AllocatorPool)
	pv := reflect.ValueOf(p).Elem()
	ch := pv.FieldByName("allocCh")
	gets := pv.FieldByName("numGets")
	if !ch.IsValid() || ch.Type() != reflect.TypeFor[chan *z.Allocator]() ||
		!gets.IsValid() || gets.Kind() != reflect.Int64 {
		return drainer{}, false
	}
	d.idle = reflect.NewAt(ch.Type(), unsafe.Pointer(ch.UnsafeAddr())).Elem().Interface().(chan *z.Allocator)
	d.gets = (*int64)(unsafe.Pointer(gets.UnsafeAddr()))
	return d, d.idle != nil
}

// taken is how many builders' allocators the pool has handed out.
func (d drainer) taken() int64 { return atomic.LoadInt64(d.gets) }

// drain releases every idle allocator and returns the bytes they held.
func (d drainer) drain() (freed int64) {
	for {
		select {
		case a, ok := <-d.idle:
			if !ok || a == nil { // closed: Badger is closing
				return freed
			}
			freed += int64(a.Allocated())
			a.Release()
		default:
			return freed
		}
	}
}

// builderShedder drains the pool once builders have gone quiet. stop
// ends it and waits (before Badger closes).
type builderShedder struct {
	d      drainer
	shed   func(freed int64) // after a drain that freed something
	quiet  time.Duration
	quit   chan struct{}
	done   sync.WaitGroup
	freed  atomic.Int64 // bytes drained so far (tests, bench)
	drains atomic.Int64

	// observe's state: the count of builders taken when last read, and
	// when it last moved. Only the shedder's goroutine (or a test that
	// runs none) touches them.
	last  int64
	since time.Time
}

func startBuilderShedder(db *badger.DB, tick, quiet time.Duration, shed func(int64)) *builderShedder {
	d, ok := builderPool(db)
	if !ok {
		return nil
	}
	s := newBuilderShedder(d, quiet, shed, time.Now())
	t := time.NewTicker(tick)
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case now := <-t.C:
				s.observe(now)
			}
		}
	}()
	return s
}

func newBuilderShedder(d drainer, quiet time.Duration, shed func(int64), now time.Time) *builderShedder {
	return &builderShedder{d: d, shed: shed, quiet: quiet, quit: make(chan struct{}), last: d.taken(), since: now}
}

// observe reads the pool at now (a tick): once no builder has been taken
// for quiet, it drains the idle allocators and hands what they held to
// shed. It returns the bytes drained.
func (s *builderShedder) observe(now time.Time) int64 {
	if n := s.d.taken(); n != s.last {
		s.last, s.since = n, now
		return 0
	}
	if now.Sub(s.since) < s.quiet || len(s.d.idle) == 0 {
		return 0
	}
	freed := s.d.drain()
	if freed > 0 {
		s.freed.Add(freed)
		s.drains.Add(1)
		if s.shed != nil {
			s.shed(freed)
		}
	}
	return freed
}

func (s *builderShedder) stop() {
	if s == nil {
		return
	}
	close(s.quit)
	s.done.Wait()
}

// shed collects and returns freed memory to the system when a drain
// freed at least builderShedMin, and hands back the table pages the
// compactions mapped (they read every table they merged).
func (k *KV) shed(freed int64) {
	if freed >= builderShedMin {
		debug.FreeOSMemory()
		k.ReleaseFilePages()
	}
}
