package node

import (
	"sync"
	"sync/atomic"
	"testing"
)

// fakePages is a filePages over a resident figure the test sets, whose
// release records its calls and may be held until the test lets it go.
type fakePages struct {
	mu       sync.Mutex
	resident int64
	released int
	hold     chan struct{} // nil: releases return at once
}

func (f *fakePages) pages(budget int64) *filePages {
	return &filePages{budget: budget, read: f.read, release: f.release, floor: f.read()}
}

func (f *fakePages) read() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resident
}

func (f *fakePages) set(v int64) {
	f.mu.Lock()
	f.resident = v
	f.mu.Unlock()
}

func (f *fakePages) release() int64 {
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released++
	f.resident = 120 // what the process keeps: the binary's pages, hot tables
	return 1
}

func (f *fakePages) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released
}

// TestFilePagesBudget: searches that keep the resident file pages within
// the budget of the last hand-back's figure start none; the first that
// finds them past it starts one, whose figure becomes the new floor.
func TestFilePagesBudget(t *testing.T) {
	f := &fakePages{resident: 100}
	p := f.pages(50)
	f.set(150) // exactly the budget: within it
	p.note()
	p.close() // waits for a hand-back under way
	if n := f.count(); n != 0 {
		t.Fatalf("within the budget: %d hand-backs", n)
	}

	f.set(100)
	p = f.pages(50)
	f.set(151)
	p.note()
	p.close()
	if n := f.count(); n != 1 {
		t.Fatalf("past the budget: %d hand-backs, want 1", n)
	}
	if p.floor != 120 {
		t.Fatalf("floor %d after the hand-back, want the figure after it (120)", p.floor)
	}
}

// TestFilePagesOneAtATime: while a hand-back is under way, searches past
// the budget start no other; after close none starts at all.
func TestFilePagesOneAtATime(t *testing.T) {
	f := &fakePages{resident: 0, hold: make(chan struct{})}
	p := f.pages(10)
	f.set(1000)
	p.note()
	p.note()
	p.note()
	close(f.hold)
	p.close()
	if n := f.count(); n != 1 {
		t.Fatalf("%d hand-backs from three searches while one ran, want 1", n)
	}
	f.set(1000)
	p.note() // closed
	p.close()
	if n := f.count(); n != 1 {
		t.Fatalf("a hand-back started after close (%d in all)", n)
	}
}

// TestFilePagesUnknown: where the figure cannot be read (outside Linux),
// nothing is started; a nil filePages (a node not open) is a no-op.
func TestFilePagesUnknown(t *testing.T) {
	f := &fakePages{resident: -1}
	p := f.pages(0)
	p.note()
	p.close()
	if n := f.count(); n != 0 {
		t.Fatalf("%d hand-backs on an unknown figure", n)
	}
	var none *filePages
	none.note()
	none.handBack()
	none.close()
}

// TestFilePagesNoHandBackAfterClose: the minute's hand-back, like the
// searches', starts none once close was called (the store may be closed:
// advising pages of tables Badger unmapped could hit reused memory).
func TestFilePagesNoHandBackAfterClose(t *testing.T) {
	f := &fakePages{}
	p := f.pages(16)
	p.handBack()
	if n := f.count(); n != 1 {
		t.Fatalf("%d hand-backs before close, want 1", n)
	}
	p.close()
	p.handBack()
	if n := f.count(); n != 1 {
		t.Fatalf("a hand-back ran after close (%d in all)", n)
	}
}

// TestFilePagesExecutableAtHandBackOnly: the minute's hand-back hands the
// executable's pages back too; one a search starts past the budget does
// not (re-reading what serving runs costs more, that often, than the few
// pages it keeps out).
func TestFilePagesExecutableAtHandBackOnly(t *testing.T) {
	f := &fakePages{resident: 100}
	p := f.pages(10)
	var exe atomic.Int32
	p.exe = func() int64 { exe.Add(1); return 1 }
	f.set(200)
	p.note()
	p.close() // waits for the hand-back the search started
	if n, e := f.count(), exe.Load(); n != 1 || e != 0 {
		t.Fatalf("past the budget: %d hand-backs, %d of the executable; want 1, 0", n, e)
	}
	p = f.pages(10)
	p.exe = func() int64 { exe.Add(1); return 1 }
	p.handBack()
	if n, e := f.count(), exe.Load(); n != 2 || e != 1 {
		t.Fatalf("the minute's: %d hand-backs, %d of the executable; want 2, 1", n, e)
	}
}
