package vector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// Property tests: the graph search agrees with a brute-force reference on
// seeded random and clustered data. Every case prints its seed.

// dataset draws n vectors of dimension dim: uniform in the cube
// (clusters 0) or around that many Gaussian centres (tight, so that
// nearest neighbours crowd inside a cluster — where a graph without the
// neighbour heuristic loses recall).
func dataset(rng *rand.Rand, n, dim, clusters int) [][]float32 {
	var centres [][]float32
	for range clusters {
		c := make([]float32, dim)
		for i := range c {
			c[i] = float32(rng.NormFloat64())
		}
		centres = append(centres, c)
	}
	out := make([][]float32, n)
	for j := range out {
		v := make([]float32, dim)
		if clusters == 0 {
			for i := range v {
				v[i] = float32(rng.Float64()*2 - 1)
			}
		} else {
			c := centres[rng.IntN(clusters)]
			for i := range v {
				v[i] = c[i] + float32(0.15*rng.NormFloat64())
			}
		}
		out[j] = v
	}
	return out
}

// bruteForce is the reference: cosine similarity against every live
// vector, best first, ties by key order of insertion (index in vs).
func bruteForce(vs [][]float32, live func(i int) bool, q []float32, k int) []int {
	type c struct {
		sim float64
		i   int
	}
	var all []c
	for i, v := range vs {
		if live(i) {
			all = append(all, c{cosine(q, v), i})
		}
	}
	slices.SortFunc(all, func(a, b c) int {
		if a.sim != b.sim {
			if a.sim > b.sim {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	out := make([]int, 0, k)
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.i)
	}
	return out
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// sized is n, or a third of it under -race or -short, where the distance
// loops run several times slower and the size checks nothing new.
func sized(n int) int {
	if testing.Short() || raceEnabled {
		return n / 3
	}
	return n
}

func key(i int) string { return fmt.Sprintf("k%06d", i) }

func build(t testing.TB, cfg Config, vs [][]float32) *Index {
	ix, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if err := ix.Put(key(i), v); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

// recallAt compares Search with brute force over queries; live says which
// inserted vectors are still there.
func recallAt(t *testing.T, ix *Index, vs, queries [][]float32, live func(int) bool, k int) float64 {
	t.Helper()
	hit, want := 0, 0
	for _, q := range queries {
		got, err := ix.Search(q, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		gotKeys := map[string]bool{}
		for _, r := range got {
			gotKeys[r.Key] = true
		}
		ref := bruteForce(vs, live, q, k)
		want += len(ref)
		for _, i := range ref {
			if gotKeys[key(i)] {
				hit++
			}
		}
		if len(got) != len(ref) {
			t.Fatalf("asked for %d, %d live: got %d results", k, len(ref), len(got))
		}
	}
	return float64(hit) / float64(want)
}

func TestRecallAgainstBruteForce(t *testing.T) {
	type dataCase struct{ dim, clusters, efSearch int }
	// Uniform noise in many dimensions is the worst case (no structure:
	// the nearest are barely nearer than the rest); from about 64
	// dimensions it needs a broader search than the default (doc.go).
	n, cases := 2000, []dataCase{{8, 0, 0}, {32, 0, 0}, {96, 0, 128}, {384, 0, 200},
		{32, 20, 0}, {128, 50, 0}, {384, 10, 0}}
	if testing.Short() || raceEnabled {
		// The race detector makes the distance loops ~5x slower and
		// checks nothing here (one goroutine): a smaller set.
		n, cases = 500, []dataCase{{8, 0, 0}, {96, 0, 128}, {32, 20, 0}, {128, 50, 0}}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("dim%d-clusters%d", c.dim, c.clusters), func(t *testing.T) {
			seed := uint64(c.dim*1000 + c.clusters)
			rng := rand.New(rand.NewPCG(seed, 1))
			vs := dataset(rng, n, c.dim, c.clusters)
			queries := dataset(rng, 100, c.dim, 0)
			if c.clusters > 0 { // queries near the data, as real queries are
				queries = dataset(rand.New(rand.NewPCG(seed, 1)), 100, c.dim, c.clusters)
				for _, q := range queries {
					for i := range q {
						q[i] += float32(0.05 * rng.NormFloat64())
					}
				}
			}
			ix := build(t, Config{Dim: c.dim, Seed: seed, ExactBelow: -1, EfSearch: c.efSearch}, vs)
			r := recallAt(t, ix, vs, queries, func(int) bool { return true }, 10)
			t.Logf("seed %d: recall@10 %.3f (n %d, levels %d)", seed, r, n, ix.Stats().MaxLevel)
			if r < 0.95 {
				t.Fatalf("seed %d: recall@10 %.3f < 0.95", seed, r)
			}
		})
	}
}

func TestSmallIndexIsExact(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100, DefaultExactBelow - 1} {
		rng := rand.New(rand.NewPCG(uint64(n), 2))
		vs := dataset(rng, n, 16, 3)
		ix := build(t, Config{Dim: 16, Seed: 1}, vs)
		for _, q := range dataset(rng, 20, 16, 0) {
			for _, k := range []int{1, 10, n + 5} {
				got, err := ix.Search(q, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				ref := bruteForce(vs, func(int) bool { return true }, q, k)
				if len(got) != len(ref) {
					t.Fatalf("n %d k %d: %d results, want %d", n, k, len(got), len(ref))
				}
				sameAnswer(t, fmt.Sprintf("n %d k %d", n, k), vs, q, got, ref)
			}
		}
	}
}

// sameAnswer requires got to be ref up to float32 rounding: each result
// carries its key's true similarity, and the i-th result is as similar as
// the reference's i-th (so only near-ties may swap places).
func sameAnswer(t *testing.T, what string, vs [][]float32, q []float32, got []Result, ref []int) {
	t.Helper()
	for i := range ref {
		var j int
		fmt.Sscanf(got[i].Key, "k%d", &j)
		if d := math.Abs(float64(got[i].Score) - cosine(q, vs[j])); d > 1e-5 {
			t.Fatalf("%s: result %d %s scored %v, its similarity is %v", what, i, got[i].Key, got[i].Score, cosine(q, vs[j]))
		}
		if d := math.Abs(float64(got[i].Score) - cosine(q, vs[ref[i]])); d > 1e-5 {
			t.Fatalf("%s: result %d is %s (%v), want %s (%v)", what, i, got[i].Key, got[i].Score, key(ref[i]), cosine(q, vs[ref[i]]))
		}
	}
}

// TestDeletesNeverReturned deletes and replaces at random, through enough
// churn to compact several times, and checks after every step that no
// deleted or replaced vector comes back, that recall holds, and that a
// filter is obeyed.
func TestDeletesNeverReturned(t *testing.T) {
	const dim = 24
	n, steps := sized(1200), sized(3000)
	seed := uint64(7)
	rng := rand.New(rand.NewPCG(seed, 3))
	vs := dataset(rng, n, dim, 8)
	ix := build(t, Config{Dim: dim, Seed: seed, ExactBelow: -1}, vs)
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	compactions := 0
	for step := range steps {
		i := rng.IntN(n)
		before := ix.Stats().Tombstones
		switch {
		case alive[i] && rng.IntN(3) > 0:
			if !ix.Delete(key(i)) {
				t.Fatalf("seed %d step %d: delete of live %s said absent", seed, step, key(i))
			}
			alive[i] = false
		case !alive[i] && ix.Delete(key(i)):
			t.Fatalf("seed %d step %d: delete of absent %s said present", seed, step, key(i))
		default: // (re)insert with a new vector
			vs[i] = dataset(rng, 1, dim, 0)[0]
			if err := ix.Put(key(i), vs[i]); err != nil {
				t.Fatal(err)
			}
			alive[i] = true
		}
		if step%50 == 0 {
			q := dataset(rng, 1, dim, 0)[0]
			odd := func(k string) bool { return k[len(k)-1]%2 == 1 }
			got, err := ix.Search(q, 10, odd)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				var j int
				fmt.Sscanf(r.Key, "k%d", &j)
				if !alive[j] || !odd(r.Key) {
					t.Fatalf("seed %d step %d: returned %s (alive %v)", seed, step, r.Key, alive[j])
				}
				if s := float32(cosine(q, vs[j])); math.Abs(float64(s-r.Score)) > 1e-4 {
					t.Fatalf("seed %d step %d: %s scored %v, is %v (a stale vector?)", seed, step, r.Key, r.Score, s)
				}
			}
		}
		if ix.Stats().Tombstones < before {
			compactions++
		}
	}
	live := 0
	for _, a := range alive {
		if a {
			live++
		}
	}
	if ix.Len() != live {
		t.Fatalf("Len %d, want %d", ix.Len(), live)
	}
	r := recallAt(t, ix, vs, dataset(rng, 50, dim, 0), func(i int) bool { return alive[i] }, 10)
	st := ix.Stats()
	t.Logf("seed %d: recall@10 %.3f after churn and %d compactions; %d live, %d tombstones", seed, r, compactions, st.Live, st.Tombstones)
	if compactions == 0 {
		t.Fatalf("seed %d: the churn never compacted; the test misses that path", seed)
	}
	if r < 0.95 {
		t.Fatalf("seed %d: recall@10 %.3f after churn", seed, r)
	}
	ix.Compact()
	if st := ix.Stats(); st.Tombstones != 0 || st.Live != live {
		t.Fatalf("after Compact: %+v", st)
	}
	if r2 := recallAt(t, ix, vs, dataset(rng, 50, dim, 0), func(i int) bool { return alive[i] }, 10); r2 < 0.95 {
		t.Fatalf("seed %d: recall@10 %.3f after Compact", seed, r2)
	}
}

func TestCompactionIsAutomatic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	vs := dataset(rng, 400, 8, 0)
	ix := build(t, Config{Dim: 8, Seed: 5}, vs)
	for i := range 200 {
		ix.Delete(key(i))
	}
	if st := ix.Stats(); st.Tombstones != 200 {
		t.Fatalf("deleting half: %+v", st)
	}
	ix.Delete(key(200)) // tombstones now outnumber the living
	if st := ix.Stats(); st.Tombstones != 0 || st.Live != 199 {
		t.Fatalf("tombstones outnumbering the live should compact: %+v", st)
	}
}

func TestFilterKeepsOnlyAccepted(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	vs := dataset(rng, sized(2000), 16, 10)
	ix := build(t, Config{Dim: 16, Seed: 9, ExactBelow: -1}, vs)
	// A filter accepting one vector in 200: the walk must still find all.
	rare := func(k string) bool { var j int; fmt.Sscanf(k, "k%d", &j); return j%200 == 3 }
	for _, q := range dataset(rng, 10, 16, 0) {
		got, err := ix.Search(q, 10, rare)
		if err != nil {
			t.Fatal(err)
		}
		ref := bruteForce(vs, func(i int) bool { return i%200 == 3 }, q, 10)
		if len(got) != len(ref) {
			t.Fatalf("rare filter: %d results, want %d", len(got), len(ref))
		}
		sameAnswer(t, "rare filter", vs, q, got, ref)
	}
}

// TestDeterministic builds the same sequence twice with one seed and
// requires identical answers (keys and scores), and a different graph
// (almost surely) with another seed.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	n := sized(1500)
	vs := dataset(rng, n, 32, 5)
	qs := dataset(rng, 30, 32, 0)
	answer := func(seed uint64) []Result {
		ix := build(t, Config{Dim: 32, Seed: seed, ExactBelow: -1}, vs)
		for i := 0; i < n; i += 7 {
			ix.Delete(key(i))
		}
		var all []Result
		for _, q := range qs {
			r, err := ix.Search(q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r...)
		}
		return all
	}
	a, b := answer(42), answer(42)
	if !slices.Equal(a, b) {
		t.Fatal("seed 42 gave two different answers")
	}
}

func TestRefusesBadInput(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no Dim: %v", err)
	}
	for _, cfg := range []Config{{Dim: 4, M: 2}, {Dim: 4, M: 100}, {Dim: 4, EfConstruction: 5}, {Dim: 4, EfSearch: -1}, {Dim: MaxDim + 1}, {Dim: 4, ExactBelow: 1 << 20}} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	ix, _ := New(Config{Dim: 3})
	ix.Put("a", []float32{1, 0, 0})
	nan := float32(math.NaN())
	for name, v := range map[string][]float32{
		"short": {1, 2}, "long": {1, 2, 3, 4}, "zero": {0, 0, 0},
		"nan": {1, nan, 0}, "inf": {float32(math.Inf(1)), 0, 0},
	} {
		if err := ix.Put("b", v); !errors.Is(err, ErrInvalid) {
			t.Errorf("Put %s: %v", name, err)
		}
		if _, err := ix.Search(v, 1, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("Search %s: %v", name, err)
		}
	}
	if err := ix.Put("", []float32{1, 0, 0}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty key: %v", err)
	}
	for _, k := range []int{0, -1, maxSearchK + 1} {
		if _, err := ix.Search([]float32{1, 0, 0}, k, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("k %d: %v", k, err)
		}
	}
	if ix.Len() != 1 || ix.Stats().Tombstones != 0 {
		t.Fatalf("refused calls changed the index: %+v", ix.Stats())
	}
	if r, _ := ix.Search([]float32{2, 0, 0}, 1, nil); len(r) != 1 || r[0].Key != "a" || math.Abs(float64(r[0].Score-1)) > 1e-6 {
		t.Fatalf("unnormalised query: %v", r)
	}
}

// TestConcurrentUse runs searches beside writers that insert, then delete
// enough to compact while the searches go on; -race checks the locking,
// and every answer must be a key that was inserted.
func TestConcurrentUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	vs := dataset(rng, sized(1200), 16, 4)
	ix, _ := New(Config{Dim: 16, Seed: 13, ExactBelow: -1})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < len(vs); i += 2 {
				if err := ix.Put(key(i), vs[i]); err != nil {
					t.Error(err)
				}
			}
			for i := w; i < len(vs)*3/4; i += 2 {
				ix.Delete(key(i))
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for _, q := range vs[:200] {
				res, err := ix.Search(q, 5, nil)
				if err != nil {
					t.Error(err)
				}
				for _, r := range res {
					var j int
					if _, err := fmt.Sscanf(r.Key, "k%d", &j); err != nil || j >= len(vs) {
						t.Errorf("answer %q was never inserted", r.Key)
					}
				}
			}
		})
	}
	wg.Wait()
	if st := ix.Stats(); st.Live != len(vs)-len(vs)*3/4 || st.Tombstones >= st.Live {
		t.Fatalf("after inserting %d and deleting 3/4: %+v (a compaction was due)", len(vs), st)
	}
}

// Vector gives back what Put indexed, normalised, as a copy; nothing for
// a deleted or unknown key.
func TestVectorReturnsTheIndexedCopy(t *testing.T) {
	ix, err := New(Config{Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Put("a", []float32{3, 4}); err != nil {
		t.Fatal(err)
	}
	v, ok := ix.Vector("a")
	if !ok || len(v) != 2 || math.Abs(float64(v[0])-0.6) > 1e-6 || math.Abs(float64(v[1])-0.8) > 1e-6 {
		t.Fatalf("Vector(a) = %v, %v; want [0.6 0.8]", v, ok)
	}
	v[0] = 100
	if w, _ := ix.Vector("a"); w[0] == 100 {
		t.Fatal("changing the returned vector changed the index")
	}
	ix.Delete("a")
	if _, ok := ix.Vector("a"); ok {
		t.Fatal("a deleted key still has a vector")
	}
	if _, ok := ix.Vector("b"); ok {
		t.Fatal("an unknown key has a vector")
	}
}
