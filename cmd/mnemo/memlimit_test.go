package main

import (
	"math"
	"testing"
)

func TestMemoryLimitFlag(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 80 << 20, false}, {"96MiB", 96 << 20, false}, {"1 GiB", 1 << 30, false}, {"512KiB", 512 << 10, false},
		{"1000", 1000, false}, {"1000B", 1000, false}, {"off", math.MaxInt64, false}, {"0", math.MaxInt64, false},
		{"-1", 0, true}, {"12MB", 0, true}, {"lots", 0, true}, {"99999999999GiB", 0, true},
	} {
		got, err := memoryLimit(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("memoryLimit(%q) = %d, %v; want %d (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
	t.Setenv("GOMEMLIMIT", "200MiB")
	if got, err := memoryLimit(""); got != 0 || err != nil {
		t.Errorf("with GOMEMLIMIT set, the default must leave the runtime's limit: %d %v", got, err)
	}
}

// TestLimitFollowsALargeLiveHeap: under four fifths of the base the base
// binds; above, the limit is a quarter over the live heap, so a heap that
// outgrows the base (Badger's compactions after a bulk load) is not
// collected back to back, and the limit comes back down with the heap.
func TestLimitFollowsALargeLiveHeap(t *testing.T) {
	const base = 96 << 20
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, base}, {40 << 20, base}, {76 << 20, base}, {base * 4 / 5, base},
		{80 << 20, 100 << 20}, {200 << 20, 250 << 20}, {math.MaxUint64, math.MaxInt64},
	} {
		if got := limitFor(base, c.live, 0); got != c.want {
			t.Errorf("limitFor(96 MiB, %d MiB live) = %.1f MiB, want %.1f MiB", c.live>>20, float64(got)/(1<<20), float64(c.want)/(1<<20))
		}
	}
}

// TestLimitCountsTheRuntimesOverhead: the runtime's own overhead counts
// against the limit, so the limit that follows the live heap leaves the
// quarter as room above both; settled (47 MiB live, 16 overhead, under
// 80 MiB) base still binds.
func TestLimitCountsTheRuntimesOverhead(t *testing.T) {
	const base = 80 << 20
	for _, c := range []struct {
		live, over uint64
		want       int64
	}{
		{47 << 20, 16 << 20, base},
		{56 << 20, 28 << 20, 98 << 20},
		{72 << 20, 28 << 20, 118 << 20},
		{200 << 20, 20 << 20, 270 << 20},
		{40 << 20, math.MaxUint64, math.MaxInt64},
		// each under its old bound, their sum past MaxInt64 (wrapped to base)
		{math.MaxInt64 / 5 * 4, math.MaxInt64 / 5, math.MaxInt64},
	} {
		if got := limitFor(base, c.live, c.over); got != c.want {
			t.Errorf("limitFor(80 MiB, %d MiB live, %d MiB overhead) = %.1f MiB, want %.1f MiB", c.live>>20, c.over>>20, float64(got)/(1<<20), float64(c.want)/(1<<20))
		}
	}
	if got := runtimeOverhead(100, 10, 60, 5); got != 25 {
		t.Errorf("runtimeOverhead(100 total, 10 released, 60 objects, 5 free) = %d, want 25", got)
	}
	if got := runtimeOverhead(100, 50, 60, 5); got != 0 {
		t.Errorf("runtimeOverhead of classes adding to more than the total = %d, want 0", got)
	}
}
