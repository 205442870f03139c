package crdt

import (
	"math/rand/v2"
	"testing"
)

// The implementations of Missing and RemovedDots before they iterated
// intervals: the reference the current ones must equal.

func oldMissing(m *Map, have *Context) (map[string]*Record, *Context) {
	records := map[string]*Record{}
	attached := map[Dot]struct{}{}
	for id, r := range m.records {
		for _, d := range r.Dots() {
			if !have.Contains(d) {
				attached[d] = struct{}{}
			}
		}
		if r.HasDotOutside(have) {
			records[id] = r
		}
	}
	return records, oldRemovedDots(&m.ctx, have, attached)
}

func oldRemovedDots(ctx, have *Context, attached map[Dot]struct{}) *Context {
	removed := NewContext()
	for _, rg := range have.Missing(ctx) {
		for c := rg.From; c <= rg.To; c++ {
			d := Dot{rg.Replica, c}
			if _, ok := attached[d]; !ok && ctx.Contains(d) && !have.Contains(d) {
				removed.Add(d)
			}
		}
	}
	return removed
}

// randomContext draws a context over reps with counters up to top: a few
// intervals per replica, sometimes none.
func randomContext(rng *rand.Rand, reps []ReplicaID, top uint64) *Context {
	c := NewContext()
	for _, r := range reps {
		for range rng.IntN(4) {
			lo := 1 + rng.Uint64N(top)
			hi := lo + rng.Uint64N(top/2+1)
			for x := lo; x <= hi; x++ {
				c.Add(Dot{r, x})
			}
		}
	}
	return c
}

func checkMissingSame(t *testing.T, m *Map, have *Context) {
	t.Helper()
	got, gotRemoved := m.Missing(have)
	want, wantRemoved := oldMissing(m, have)
	if len(got) != len(want) {
		t.Fatalf("Missing: %d records, reference %d", len(got), len(want))
	}
	for id, r := range want {
		if got[id] != r {
			t.Fatalf("Missing: record %s differs from the reference", id)
		}
	}
	if !gotRemoved.Equal(wantRemoved) {
		t.Fatalf("Missing: removed %v, reference %v", gotRemoved.Missing(wantRemoved), wantRemoved.Missing(gotRemoved))
	}
}

// TestMissingMatchesReference compares Missing and RemovedDots with the
// per-dot reference on random histories, against every other replica's
// context, random contexts, and maps whose records hold dots their context
// lacks.
func TestMissingMatchesReference(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		s := newMapSim(t, rng)
		var reps []ReplicaID
		for _, r := range s.reps {
			reps = append(reps, r.id)
		}
		for range 150 {
			s.step()
			if rng.IntN(4) != 0 {
				continue
			}
			a, b := pick(rng, s.reps), pick(rng, s.reps)
			checkMissingSame(t, a.m, b.m.Context())
			checkMissingSame(t, a.m, randomContext(rng, reps, 20))
			checkMissingSame(t, a.m, NewContext())
			checkMissingSame(t, a.m, a.m.Context())
			// RemovedDots with arbitrary attached dots, as the node's store
			// calls it.
			attached := map[Dot]struct{}{}
			for range rng.IntN(30) {
				attached[Dot{pick(rng, reps), uint64(rng.IntN(25))}] = struct{}{}
			}
			have := randomContext(rng, reps, 20)
			ctx := randomContext(rng, reps, 20)
			if got, want := RemovedDots(ctx, have, attached), oldRemovedDots(ctx, have, attached); !got.Equal(want) {
				t.Fatalf("RemovedDots differs from the reference")
			}
			// Records holding dots outside the map's own context.
			recs := map[string]*Record{}
			for id, r := range a.m.records {
				recs[id] = r
			}
			odd := AssembleMap(randomContext(rng, reps, 20), recs, nil)
			checkMissingSame(t, odd, b.m.Context())
			checkMissingSame(t, odd, randomContext(rng, reps, 20))
		}
	})
}
