package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
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
	// The wait and allocation profiles are written when named (the 32 clients queue for
	// their groups, so the block profile holds samples).
	dir := t.TempDir()
	block, mutex, mem := dir+"/block.prof", dir+"/mutex.prof", dir+"/mem.prof"
	out.Reset()
	if code := run(context.Background(), []string{"bench", "saves", "--clients", "32", "--duration", "200ms", "--warmup", "0",
		"--blockprofile", block, "--mutexprofile", mutex, "--memprofile", mem, "--data", t.TempDir()}, nil, &out, &errb); code != exitOK {
		t.Fatalf("with profiles: exit %d: %s", code, errb.String())
	}
	for _, f := range []string{block, mutex, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v, want a written file", f, err)
		}
	}
	if code := run(context.Background(), []string{"bench", "loads"}, nil, &out, &errb); code != exitUsage {
		t.Errorf("unknown workload: exit %d, want %d", code, exitUsage)
	}
}

// TestBenchSearch loads a small corpus through the import route and
// searches it: three timed runs with hits, resident memory read; a second
// run on the same directory searches it without loading again.
func TestBenchSearch(t *testing.T) {
	dir := t.TempDir()
	args := []string{"bench", "search", "--memories", "300", "--batch", "100", "--queries", "20", "--searches", "30", "--settle", "0s", "--data", dir}
	for i, want := range []string{"loaded 300 memories", "searching the node in"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("run %d: want %q in:\n%s", i, want, out.String())
		}
		rows := 0
		for _, l := range strings.Split(out.String(), "\n") {
			f := strings.Fields(l)
			if len(f) >= 9 && strings.HasSuffix(f[len(f)-3], "µs") {
				rows++
				if hits := f[len(f)-2]; hits == "0" {
					t.Errorf("run %d: row %q: no hits", i, l)
				}
				if _, err := strconv.ParseUint(f[len(f)-1], 10, 64); err != nil {
					t.Errorf("run %d: row %q: collections: %v", i, l, err)
				}
			}
		}
		if rows != 3 {
			t.Fatalf("run %d: want 3 timed rows, got %d:\n%s", i, rows, out.String())
		}
		if _, err := os.Stat("/proc/self/status"); err == nil && (!strings.Contains(out.String(), "VmRSS") || !strings.Contains(out.String(), "after the node's hand-back")) {
			t.Errorf("run %d: no resident memory lines (after the searches, after the hand-back):\n%s", i, out.String())
		}
	}
}
