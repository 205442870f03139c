package vector

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchData is clustered like text embeddings (1000 topics; a document's
// cosine similarity to its topic's centre about 0.9), so recall and walk
// lengths are those of real data rather than of uniform noise.
func benchData(n, dim int, seed uint64) (vs, qs [][]float32) {
	rng := rand.New(rand.NewPCG(seed, 77))
	centres := dataset(rng, 1000, dim, 0)
	draw := func() []float32 {
		c := centres[rng.IntN(len(centres))]
		v := make([]float32, dim)
		for i := range v {
			v[i] = c[i] + float32(0.25*rng.NormFloat64())
		}
		return v
	}
	for range n {
		vs = append(vs, draw())
	}
	for range 500 {
		qs = append(qs, draw())
	}
	return vs, qs
}

// BenchmarkSearch100kDim384 builds 100k vectors of dimension 384 (it takes
// a minute or two; the build's time per insertion and the heap per vector
// are reported), then times single queries (k 10) and reports their
// p50/p95 and recall@10 against brute force on 100 of them.
func BenchmarkSearch100kDim384(b *testing.B) { benchSearch(b, 100_000, 384) }

// BenchmarkSearch10kDim384 is the same at 10k, quick enough to compare
// parameter changes.
func BenchmarkSearch10kDim384(b *testing.B) { benchSearch(b, 10_000, 384) }

// built caches one build per size: the testing package calls a benchmark
// function more than once (b.N = 1 first), and a 100k build takes minutes.
var built = map[[2]int]*builtIndex{}

type builtIndex struct {
	ix                             *Index
	vs, qs                         [][]float32
	perVector, buildµs, buildCPUµs float64
}

func benchSearch(b *testing.B, n, dim int) {
	bi := built[[2]int{n, dim}]
	if bi == nil {
		bi = buildBench(b, n, dim)
		built[[2]int{n, dim}] = bi
	}
	ix, vs, qs := bi.ix, bi.vs, bi.qs
	hit := 0
	for _, q := range qs[:100] {
		got, _ := ix.Search(q, 10, nil)
		ref := bruteForce(vs, func(int) bool { return true }, q, 10)
		in := map[string]bool{}
		for _, r := range got {
			in[r.Key] = true
		}
		for _, i := range ref {
			if in[key(i)] {
				hit++
			}
		}
	}
	var lat []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := ix.Search(qs[i%len(qs)], 10, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64((threadCPU()-cpu0).Nanoseconds())/1e3/float64(len(lat)), "cpu-µs/query")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*95/100].Nanoseconds())/1e3, "p95-µs")
	b.ReportMetric(float64(hit)/1000, "recall@10")
	b.ReportMetric(bi.perVector, "heap-B/vector")
	b.ReportMetric(bi.buildµs, "build-µs/insert")
	b.ReportMetric(bi.buildCPUµs, "build-cpu-µs/insert")
}

func buildBench(b *testing.B, n, dim int) *builtIndex {
	vs, qs := benchData(n, dim, 1)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu0 := time.Now(), threadCPU()
	ix, err := New(Config{Dim: dim, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for i, v := range vs {
		if err := ix.Put(key(i), v); err != nil {
			b.Fatal(err)
		}
	}
	build, buildCPU := time.Since(start), threadCPU()-cpu0
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The input vectors were made before the first reading, so HeapAlloc
	// grows by the index alone.
	return &builtIndex{ix: ix, vs: vs, qs: qs,
		perVector:  float64(after.HeapAlloc-before.HeapAlloc) / float64(n),
		buildµs:    float64(build.Microseconds()) / float64(n),
		buildCPUµs: float64(buildCPU.Microseconds()) / float64(n)}
}
