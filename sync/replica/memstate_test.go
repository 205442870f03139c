package replica

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
)

// checkIndexed compares MemState.Missing (through its index) with
// crdt.Map.Missing (a scan) for one have.
func checkIndexed(t *testing.T, s *MemState, ns string, have *crdt.Context) {
	t.Helper()
	wantRecs, wantRemoved := s.Map(ns).Missing(have)
	var got []string
	removed, err := s.Missing(ns, have, func(id string, r *crdt.Record) error {
		if wantRecs[id] != r {
			t.Fatalf("Missing: record %s not the one crdt.Map.Missing reports", id)
		}
		got = append(got, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, 0, len(wantRecs))
	for id := range wantRecs {
		want = append(want, id)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Missing ids %v, crdt.Map.Missing %v", got, want)
	}
	if ret, _ := s.Retracted(ns); !slices.Equal(ret, s.Map(ns).RetractedIDs()) {
		t.Fatalf("Retracted %v, crdt.Map.RetractedIDs %v", ret, s.Map(ns).RetractedIDs())
	}
	if !removed.Equal(wantRemoved) {
		t.Fatalf("Missing removed differs: extra %v, lacking %v", wantRemoved.Missing(removed), removed.Missing(wantRemoved))
	}
}

func randomHave(rng *rand.Rand, reps []crdt.ReplicaID) *crdt.Context {
	c := crdt.NewContext()
	for _, r := range reps {
		for range rng.IntN(4) {
			lo := 1 + rng.Uint64N(30)
			for x := lo; x <= lo+rng.Uint64N(10); x++ {
				c.Add(crdt.Dot{Replica: r, Counter: x})
			}
		}
	}
	return c
}

// TestMemStateMissingMatchesMap drives MemStates through random local edits
// (in place and through Apply), deliveries, lost deltas, sync-like deltas,
// retracts and clones, and checks after each step that the indexed Missing
// reports exactly what crdt.Map.Missing does.
func TestMemStateMissingMatchesMap(t *testing.T) {
	runs := 200
	if testing.Short() || raceEnabled {
		runs = 40
	}
	for seed := range uint64(runs) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { memStateHistory(t, seed) })
	}
}

func memStateHistory(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const ns = "team://a"
	now := time.Unix(1_800_000_000, 0)
	n := 2 + rng.IntN(4)
	sts := make([]*MemState, n)
	clocks := make([]*crdt.Clock, n)
	reps := make([]crdt.ReplicaID, n)
	for i := range sts {
		sts[i], clocks[i], reps[i] = NewMemState(), crdt.NewClock(0), crdt.ReplicaID(i+1)
		sts[i].Map(ns)
	}
	var deltas []*crdt.Map
	ids := []string{"m1", "m2", "m3", "m4", "m5", "m6"}
	for range 120 {
		i := rng.IntN(n)
		s := sts[i]
		switch x := rng.IntN(10); {
		case x < 4: // a local edit
			m := s.Map(ns)
			id := ids[rng.IntN(len(ids))]
			var d *crdt.Map
			if rng.IntN(15) == 0 {
				d = crdt.RetractDelta(m.Entry(id), id)
			} else {
				e, err := m.Edit(reps[i], id, crdt.DefaultLimits())
				if err != nil {
					continue // retracted
				}
				clocks[i].Observe(m.MaxTimestamp(), now)
				ts := clocks[i].Now(now)
				for range 1 + rng.IntN(3) {
					switch rng.IntN(3) {
					case 0:
						_ = e.Set(ts, []string{"title", "content", "type"}[rng.IntN(3)], []byte(fmt.Sprint(rng.IntN(100))))
					case 1:
						_ = e.Add("tags", fmt.Sprint("t", rng.IntN(3)))
					default:
						e.Remove("tags", fmt.Sprint("t", rng.IntN(3)))
					}
				}
				ts = clocks[i].Now(now)
				_ = e.Set(ts, "ua", []byte(now.String()))
				d = e.Delta()
			}
			if rng.IntN(2) == 0 {
				s.Map(ns).Join(d) // in place: the index goes stale
			} else {
				s.Apply(Apply{Namespace: ns, Delta: d})
			}
			deltas = append(deltas, d)
		case x < 7: // a delivery (some deltas are never delivered: lost)
			if len(deltas) > 0 {
				s.Apply(Apply{Namespace: ns, Delta: deltas[rng.IntN(len(deltas))]})
			}
		case x < 8: // a sync-like answer from another replica
			o := sts[rng.IntN(n)]
			recs, removed := o.Map(ns).Missing(s.Map(ns).Context())
			ctx := o.Map(ns).Context().Intersect(s.Map(ns).Context())
			if rng.IntN(2) == 0 {
				ctx.Join(removed)
			}
			var ret []string
			if rng.IntN(2) == 0 {
				ret = o.Map(ns).RetractedIDs()
			}
			s.Apply(Apply{Namespace: ns, Delta: crdt.AssembleMap(ctx, recs, ret)})
		case x < 9: // a whole state
			s.Apply(Apply{Namespace: ns, Delta: sts[rng.IntN(n)].Map(ns).Clone()})
		default: // a crash keeps a copy
			sts[i] = s.Clone()
		}
		for _, s := range sts {
			for _, o := range sts {
				checkIndexed(t, s, ns, o.Map(ns).Context())
			}
			checkIndexed(t, s, ns, crdt.NewContext())
			checkIndexed(t, s, ns, randomHave(rng, reps))
		}
		now = now.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
}

// A map assembled with records whose dots its context lacks: the index
// must still report them.
func TestMemStateMissingDotsOutsideContext(t *testing.T) {
	src := crdt.NewMap()
	if _, err := src.Set(1, 5, "m1", "title", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Set(2, 6, "m2", "title", []byte("y")); err != nil {
		t.Fatal(err)
	}
	recs := map[string]*crdt.Record{"m1": src.Entry("m1"), "m2": src.Entry("m2")}
	ctx := crdt.NewContext()
	ctx.Add(crdt.Dot{Replica: 1, Counter: 1})
	s := NewMemState()
	s.Apply(Apply{Namespace: "ns", Delta: crdt.AssembleMap(ctx, recs, nil)})
	for _, have := range []*crdt.Context{crdt.NewContext(), ctx, src.Context()} {
		checkIndexed(t, s, "ns", have)
	}
}
