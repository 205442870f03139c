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
		{"", 96 << 20, false}, {"96MiB", 96 << 20, false}, {"1 GiB", 1 << 30, false}, {"512KiB", 512 << 10, false},
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
