package node

import (
	"sync"
)

// FilePagesBudget is how many bytes of mapped file pages searches may add
// to the process's resident set before the node hands Badger's table
// pages back (they stay in the kernel's page cache), on top of the
// minute's hand-back (SweepInterval). Badger reads its tables only through
// mmap, and the kernel maps a whole page-cache folio per record read: at
// 100k memories a search maps ~1 MiB of tables, so 2,000 searches left
// all of them (132 of 137 MiB) resident until the next minute, VmRSS 231
// MiB. Bounded, the pages a search needs are mapped again after each
// hand-back (minor faults: the page cache keeps them), which is what the
// bound costs. mnemo bench search at 100k, 2,500 searches, alternately 3×
// against the minute alone (load 11-13): VmRSS sampled after them 99-114
// MiB with 16 MiB (floor ~99: 77 anonymous + the binary's 22), 99-108
// with 8 MiB; CPU per search +6 to +17% with 16 MiB, +20% with 8.
//
// The executable's pages are handed back too, at start and with the
// minute's hand-back (not with the budget's: what serving runs would be
// mapped again each time). Start-up runs code and reads tables serving
// never touches again; of the binary's ~22 MiB resident after start-up,
// ~15 stay in use over 2,500 searches (releaseExecutable, pages_linux.go).
// mnemo bench search at 100k, 76c8503 against this, alternately 3× (load
// 6-8): VmRSS right after the bench's hand-back 98.9-99.7 → 92.7-93.1 MiB
// (RssFile 21.6-21.9 → 14.9-15.3), CPU per search over the 2,000 596 →
// 571 µs (medians; within the noise).
const FilePagesBudget = 16 << 20

// filePages hands Badger's mapped table pages back whenever the process's
// resident file pages have grown by more than budget since the last
// hand-back. note is called after each search: it reads the figure
// (/proc/self/statm, one read of a kept descriptor) and, when over, starts
// one hand-back in the background, so that the search that crossed the
// budget does not wait for it (~0.3 ms at 100k memories). Safe for
// concurrent use.
type filePages struct {
	budget  int64
	release func() int64  // store.Store.ReleaseFilePages; nil: nothing to hand back
	exe     func() int64  // releaseExecutable, at handBack only; nil: none (tests)
	read    func() int64  // resident file bytes; < 0: unknown (the budget never triggers)
	stat    *residentStat // what read reads, closed by close; nil in tests

	mu      sync.Mutex
	floor   int64 // resident file bytes right after the last hand-back
	running bool  // a hand-back is under way
	closed  bool
	done    sync.WaitGroup
}

func newFilePages(budget int64, release func() int64) *filePages {
	stat := openResidentStat()
	p := &filePages{budget: budget, release: release, exe: releaseExecutable, read: stat.fileBytes, stat: stat}
	p.floor = p.read()
	return p
}

// note starts a hand-back in the background if the resident file pages
// have grown past the budget and none is under way. It never blocks on a
// hand-back.
func (p *filePages) note() {
	if p == nil || p.release == nil {
		return
	}
	now := p.read()
	if now < 0 {
		return
	}
	p.mu.Lock()
	over := now-p.floor > p.budget
	p.mu.Unlock()
	if over && p.begin() {
		go func() {
			defer p.end()
			p.releaseNow()
		}()
	}
}

// handBack hands the pages back now, the executable's too (at start and
// every minute: housekeeping.go), unless a hand-back is under way or close
// was called: after close the store may be closed.
func (p *filePages) handBack() {
	if p == nil || p.release == nil || !p.begin() {
		return
	}
	defer p.end()
	if p.exe != nil {
		p.exe()
	}
	p.releaseNow()
}

// begin claims the one hand-back at a time, counted for close to wait
// for; false if one is under way or close was called.
func (p *filePages) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running || p.closed {
		return false
	}
	p.running = true
	p.done.Add(1)
	return true
}

func (p *filePages) end() {
	p.mu.Lock()
	p.running = false
	p.mu.Unlock()
	p.done.Done()
}

// releaseNow hands the pages back and takes the figure after it as the
// new floor (between begin and end).
func (p *filePages) releaseNow() {
	p.release()
	after := p.read()
	p.mu.Lock()
	p.floor = after
	p.mu.Unlock()
}

// close waits for a hand-back under way and starts no other: the store
// may be closed after it returns.
func (p *filePages) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.done.Wait()
	p.stat.close()
}
