package main

import (
	"math"
	"testing"
)

// mnemo sim runs under its own soft memory limit unless told otherwise:
// the flag, "off", or $GOMEMLIMIT (which the runtime applied at start).
func TestSimMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		flag string
		want int64
	}{{"", 1536 << 20}, {"2GiB", 2 << 30}, {"off", math.MaxInt64}, {"0", math.MaxInt64}} {
		if got, err := simMemoryLimitOf(c.flag); err != nil || got != c.want {
			t.Errorf("--memory-limit %q: %d, %v; want %d", c.flag, got, err, c.want)
		}
	}
	if _, err := simMemoryLimitOf("lots"); err == nil {
		t.Error("--memory-limit lots accepted")
	}
	t.Setenv("GOMEMLIMIT", "3GiB")
	if got, err := simMemoryLimitOf(""); err != nil || got != 0 {
		t.Errorf("with $GOMEMLIMIT set: %d, %v; want 0 (the runtime's)", got, err)
	}
}
