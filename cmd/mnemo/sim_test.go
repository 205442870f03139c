package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
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

// --sim-workers changes who runs the nodes, not the run: one seed prints
// the same trace hash and digest with one worker and with three; a
// negative count is refused before anything runs.
func TestSimWorkers(t *testing.T) {
	hashes := map[string]bool{}
	for _, w := range []string{"1", "3"} {
		var out, errb bytes.Buffer
		args := []string{"sim", "--nodes", "6", "--ops", "60", "--seed", "3", "--loss", "0.1", "--crashes", "1", "--json", "--sim-workers", w}
		if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
			t.Fatalf("--sim-workers %s: exit %d: %s%s", w, code, out.String(), errb.String())
		}
		var r struct {
			TraceHash string `json:"trace_hash"`
			Digest    string `json:"digest"`
			Windows   struct {
				Workers int `json:"workers"`
			} `json:"windows"`
		}
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if want, _ := strconv.Atoi(w); r.Windows.Workers != want {
			t.Errorf("--sim-workers %s ran %d workers", w, r.Windows.Workers)
		}
		hashes[r.TraceHash+" "+r.Digest] = true
	}
	if len(hashes) != 1 {
		t.Errorf("one seed, different runs: %v", hashes)
	}
	// A mixed sweep's runs take --sim-workers too (sim.Mixed leaves it
	// unset, which a sweep runs serially).
	var mixed, mixedErr bytes.Buffer
	if code := run(context.Background(), []string{"sim", "--mixed", "--sweep", "1", "--seed", "5000", "--json", "--sim-workers", "2"}, nil, &mixed, &mixedErr); code != exitOK {
		t.Fatalf("--mixed --sweep 1 --sim-workers 2: exit %d: %s", code, mixedErr.String())
	}
	var mr struct {
		Windows struct {
			Workers int `json:"workers"`
		} `json:"windows"`
	}
	if err := json.NewDecoder(&mixed).Decode(&mr); err != nil {
		t.Fatal(err)
	}
	if mr.Windows.Workers != 2 {
		t.Errorf("--mixed --sim-workers 2 ran each seed on %d workers", mr.Windows.Workers)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"sim", "--sim-workers", "-1"}, nil, &out, &errb); code != exitUsage {
		t.Errorf("--sim-workers -1: exit %d, want %d", code, exitUsage)
	}
}
