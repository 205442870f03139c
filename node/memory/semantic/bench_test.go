package semantic_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/semantic"
)

// wideEmbedder is a bag of words in 384 dimensions, the size of small
// sentence models, so the graph's distance computations cost what they
// would with a real model: each word adds ±1 on 16 dimensions drawn from
// its hash, so vectors are dense and share directions, as embeddings do
// (one dimension per word would make most pairs orthogonal, a graph
// without the structure a real model gives).
type wideEmbedder struct{}

func (wideEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i, t := range texts {
		v := make([]float64, 384)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New64a()
			h.Write([]byte(w))
			r := rand.New(rand.NewPCG(h.Sum64(), 0))
			for range 16 {
				v[r.IntN(384)] += float64(2*r.IntN(2) - 1)
			}
		}
		v[383] += 0.01
		out[i] = v
	}
	return out, nil
}

// BenchmarkSearch10k times Service.Search over 10k memories, lexical only
// and hybrid (the query's vector cached, as for a repeated query: the
// model's round trip is not counted), side by side in one run.
func BenchmarkSearch10k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 2000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	text := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(words[int(rng.ExpFloat64()*200)%len(words)])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	var reqs []memapi.SaveRequest
	for range 10_000 {
		reqs = append(reqs, memapi.SaveRequest{Title: text(5), Content: text(40)})
	}
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = text(1 + i%3)
	}
	open := func(feats []memory.Feature) *memory.Service {
		s, _ := memorytest.Open(b, memory.Config{IsLocal: memorytest.AllLocal, Features: feats})
		for _, r := range reqs {
			if _, err := s.Save(context.Background(), alice, r); err != nil {
				b.Fatal(err)
			}
		}
		return s
	}
	sem, err := semantic.New(semantic.Config{Enabled: true, Model: "wide", Embedder: wideEmbedder{}})
	if err != nil {
		b.Fatal(err)
	}
	hybrid, lexical := open([]memory.Feature{sem}), open(nil)
	sync_(b, sem)
	for name, s := range map[string]*memory.Service{"lexical": lexical, "hybrid": hybrid} {
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if _, err := s.Search(context.Background(), alice, memapi.SearchQuery{Query: queries[i%len(queries)]}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
		})
	}
}
