package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestBenchSaves runs the bench verb briefly against a real node: both
// client counts must report saves (a failed save fails the command).
func TestBenchSaves(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "saves", "--clients", "1,3", "--duration", "200ms", "--warmup", "0", "--data", t.TempDir()}, nil, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a heading, a header and two rows, got:\n%s", out.String())
	}
	for _, l := range lines[2:] {
		if f := strings.Fields(l); len(f) != 8 || f[1] == "0" {
			t.Errorf("row %q: want 8 columns and some saves", l)
		}
	}
	if code := run(context.Background(), []string{"bench", "loads"}, nil, &out, &errb); code != exitUsage {
		t.Errorf("unknown workload: exit %d, want %d", code, exitUsage)
	}
}
