package badgerkv

import (
	"testing"
	"time"

	"github.com/dgraph-io/ristretto/v2/z"
)

// TestBuilderPoolFound fails when Badger's allocator pool is no longer
// where builders.go finds it: idle builders would then drain at Badger's
// pace again (one per 2 s), and a freshly bulk-loaded node would hold
// ~96 MiB more than a settled one for a quarter of a minute.
func TestBuilderPoolFound(t *testing.T) {
	k, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.builders == nil {
		t.Fatal("Badger's table-builder pool not found")
	}
}

// The shedder drains the idle allocators only once no builder has been
// taken for quiet; a builder taken meanwhile starts the quiet period
// again. Driven tick by tick on a pool of our own (no goroutine, no
// wall clock).
func TestBuildersDrainOnlyWhenQuiet(t *testing.T) {
	var gets int64
	d := drainer{idle: make(chan *z.Allocator, 8), gets: &gets}
	var shed []int64
	t0 := time.Unix(1000, 0)
	s := newBuilderShedder(d, 500*time.Millisecond, func(n int64) { shed = append(shed, n) }, t0)
	idle := func() {
		a := z.NewAllocator(1<<20, "test")
		a.Allocate(1 << 20)
		d.idle <- a
	}
	idle()
	idle()
	if n := s.observe(t0.Add(250 * time.Millisecond)); n != 0 {
		t.Fatalf("drained %d bytes a quarter of a second after the start", n)
	}
	gets++ // a builder taken: the quiet period starts again
	if n := s.observe(t0.Add(600 * time.Millisecond)); n != 0 {
		t.Fatalf("drained %d bytes at the tick that saw a builder taken", n)
	}
	if n := s.observe(t0.Add(1000 * time.Millisecond)); n != 0 {
		t.Fatalf("drained %d bytes 0.4 s after a builder was taken", n)
	}
	n := s.observe(t0.Add(1100 * time.Millisecond))
	if n < 2<<20 || len(d.idle) != 0 {
		t.Fatalf("quiet for 0.5 s: drained %d bytes, %d allocators left idle; want both (2 MiB), none", n, len(d.idle))
	}
	if len(shed) != 1 || shed[0] != n {
		t.Fatalf("shed calls %v, want one of %d", shed, n)
	}
	if n := s.observe(t0.Add(2 * time.Second)); n != 0 || len(shed) != 1 {
		t.Fatalf("an empty pool drained %d bytes, shed %v", n, shed)
	}
}
