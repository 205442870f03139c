package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	trace := filepath.Join(t.TempDir(), "trace.tsv")
	args := []string{"bench", "search", "--memories", "300", "--batch", "100", "--queries", "20", "--searches", "30", "--settle", "0s", "--data", dir, "--trace", trace}
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
		if !strings.Contains(out.String(), "the runtime then: soft limit ") {
			t.Errorf("run %d: no line of the runtime's memory:\n%s", i, out.String())
		}
		checkSearchTrace(t, trace, 20+30+20)
	}
}

// checkSearchTrace checks that a --trace file has its header and one line
// per search: the row, the search's number within it, and its start,
// latency and collections, the starts never going back.
func checkSearchTrace(t *testing.T, path string, searches int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != searches+1 || lines[0] != "row\tsearch\tstart_us\tlatency_us\tgcs" {
		t.Fatalf("trace: want a header and %d lines, got %d:\n%s", searches, len(lines), b)
	}
	last := int64(-1)
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 5 || f[0] == "" {
			t.Fatalf("trace line %q: want 5 tab-separated fields", l)
		}
		var v [4]int64
		for j := range v {
			if v[j], err = strconv.ParseInt(f[j+1], 10, 64); err != nil || v[j] < 0 {
				t.Fatalf("trace line %q: field %d: %v", l, j+2, err)
			}
		}
		if v[1] < last {
			t.Fatalf("trace line %q: starts %d µs, before the line before (%d)", l, v[1], last)
		}
		last = v[1]
	}
}
