package crdt

import (
	"errors"
	"math"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_763_700_000_000) // an HLC of the current era

func TestTimestampPacking(t *testing.T) {
	ts := MakeTimestamp(t0.UnixMilli(), 7)
	if ts.WallMillis() != t0.UnixMilli() || ts.Logical() != 7 || !ts.Time().Equal(t0) {
		t.Fatalf("%v does not unpack to %v.7", ts, t0.UnixMilli())
	}
	if MakeTimestamp(-5, 1) != MakeTimestamp(0, 1) {
		t.Fatal("negative wall time not clamped")
	}
	if !(MakeTimestamp(1, 0) > MakeTimestamp(0, math.MaxUint16)) {
		t.Fatal("timestamps do not order by wall time first")
	}
}

func TestClockMonotonicWhenWallStepsBack(t *testing.T) {
	c := NewClock(0)
	if c.MaxSkew() != DefaultMaxSkew {
		t.Fatalf("default skew %v", c.MaxSkew())
	}
	walls := []time.Time{t0, t0, t0.Add(-time.Hour), t0.Add(5 * time.Millisecond), t0.Add(-time.Second), t0.Add(6 * time.Millisecond)}
	var prev Timestamp
	for i, w := range walls {
		ts := c.Now(w)
		if ts <= prev {
			t.Fatalf("step %d: Now(%v) = %v, not after %v", i, w.UnixMilli(), ts, prev)
		}
		if ts.WallMillis() < w.UnixMilli() {
			t.Fatalf("step %d: %v behind the wall clock", i, ts)
		}
		prev = ts
	}
	if want := MakeTimestamp(t0.UnixMilli()+6, 0); prev != want {
		t.Fatalf("after the wall clock caught up: %v, want %v", prev, want)
	}
	if c.Last() != prev {
		t.Fatalf("Last %v, want %v", c.Last(), prev)
	}
}

func TestClockObserveAdvancesPastRemote(t *testing.T) {
	c := NewClock(time.Minute)
	local := c.Now(t0)
	remote := MakeTimestamp(t0.UnixMilli()+30_000, 3) // 30 s ahead: within skew
	got, err := c.Observe(remote, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got <= remote || got <= local || c.Last() != got {
		t.Fatalf("Observe = %v, want after %v and %v", got, remote, local)
	}
	if next := c.Now(t0); next <= remote {
		t.Fatalf("Now after Observe = %v, not after the remote %v", next, remote)
	}
	// A remote behind the local clock still moves it forward by one.
	before := c.Last()
	if got, _ := c.Observe(MakeTimestamp(1, 0), t0); got != before+1 {
		t.Fatalf("Observe of an old timestamp: %v, want %v", got, before+1)
	}
	// The wall clock ahead of both wins.
	later := t0.Add(time.Hour)
	if got, _ := c.Observe(remote, later); got != MakeTimestamp(later.UnixMilli(), 0) {
		t.Fatalf("Observe behind the wall clock: %v", got)
	}
}

func TestClockObserveRejectsSkew(t *testing.T) {
	for _, remote := range []Timestamp{
		MakeTimestamp(t0.Add(time.Minute+time.Millisecond).UnixMilli(), 0),
		MakeTimestamp(t0.Add(24*time.Hour).UnixMilli(), 0),
		MakeTimestamp(t0.UnixMilli()+math.MaxInt64/int64(time.Millisecond)+1, 0), // the ns difference overflows int64
		MakeTimestamp(1<<47, 0),
		Timestamp(math.MaxUint64),
	} {
		c := NewClock(time.Minute)
		c.Now(t0)
		before := *c
		got, err := c.Observe(remote, t0)
		if !errors.Is(err, ErrClockSkew) {
			t.Fatalf("Observe(%v) = %v, %v; want ErrClockSkew", remote, got, err)
		}
		if *c != before || got != before.last {
			t.Fatalf("clock changed on a rejected Observe: %+v, was %+v", *c, before)
		}
		if err := c.Check(remote, t0); !errors.Is(err, ErrClockSkew) {
			t.Fatalf("Check(%v) = %v", remote, err)
		}
	}
	c := NewClock(time.Minute)
	edge := MakeTimestamp(t0.Add(time.Minute).UnixMilli(), math.MaxUint16) // exactly at the bound
	if _, err := c.Observe(edge, t0); err != nil {
		t.Fatalf("timestamp exactly MaxSkew ahead: %v", err)
	}
}

func TestClockLogicalCarry(t *testing.T) {
	c := NewClock(time.Minute)
	c.Restore(MakeTimestamp(t0.UnixMilli(), math.MaxUint16-1))
	if got := c.Now(t0); got != MakeTimestamp(t0.UnixMilli(), math.MaxUint16) {
		t.Fatalf("Now = %v", got)
	}
	if got := c.Now(t0); got != MakeTimestamp(t0.UnixMilli()+1, 0) {
		t.Fatalf("logical counter did not carry into the wall part: %v", got)
	}
	if got, _ := c.Observe(MakeTimestamp(t0.UnixMilli()+1, math.MaxUint16), t0); got != MakeTimestamp(t0.UnixMilli()+2, 0) {
		t.Fatalf("Observe did not carry: %v", got)
	}
	c.Restore(1) // never moves back
	if c.Last() != MakeTimestamp(t0.UnixMilli()+2, 0) {
		t.Fatalf("Restore moved the clock back to %v", c.Last())
	}
}
