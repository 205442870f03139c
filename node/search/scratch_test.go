package search

import (
	"runtime"
	"testing"
)

// The pool hands back what it kept, keeps at most scratchKept, and a
// collection does not empty it (a sync.Pool's does).
func TestScratchPoolKeepsAFew(t *testing.T) {
	var p scratchPool
	made := make([]*scratch, scratchKept+2)
	for i := range made {
		made[i] = p.get()
	}
	for _, sc := range made {
		p.put(sc)
	}
	if len(p.free) != scratchKept {
		t.Fatalf("%d kept, want %d", len(p.free), scratchKept)
	}
	runtime.GC()
	runtime.GC()
	kept := map[*scratch]bool{}
	for range scratchKept {
		sc := p.get()
		if kept[sc] || sc != made[0] && sc != made[1] {
			t.Fatal("the pool handed out a scratch it did not keep, or one twice")
		}
		kept[sc] = true
	}
	if sc := p.get(); kept[sc] {
		t.Fatal("an empty pool handed out a kept scratch")
	}
}
