package dedup

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/node/similarity"
)

// The band keys find every pair of signatures at a threshold above 0.75,
// whatever slots differ (the pigeonhole argument of bandsFind); at 0.75
// and below, bandsFind says they may not, and a pair that differs in one
// slot of every band shows it.
func TestBandsFindEveryPairAboveTheBound(t *testing.T) {
	if bandsFind(0.75) || !bandsFind(0.76) || !bandsFind(DefaultThreshold) || !bandsFind(1) {
		t.Fatalf("bandsFind: 0.75 %v, 0.76 %v, 0.8 %v, 1 %v; want false, true, true, true",
			bandsFind(0.75), bandsFind(0.76), bandsFind(DefaultThreshold), bandsFind(1))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		a := similarity.MinHash(randomText(rng))
		b := a
		for _, i := range rng.Perm(similarity.N)[:rng.IntN(40)] {
			b[i] = rng.Uint64()
		}
		ka, kb := keysOf(&a), keysOf(&b)
		for _, th := range []float64{0.76, 0.8, 0.9, 1} {
			if similarity.Similarity(a, b) >= th && !ka.sharesBand(&kb) {
				t.Fatalf("similarity %v >= %v but no band shared", similarity.Similarity(a, b), th)
			}
		}
	}
	a := similarity.MinHash("one two three four five")
	b := a
	for i := 0; i < similarity.N; i += similarity.N / similarity.Bands {
		b[i]++
	}
	if ka, kb := keysOf(&a), keysOf(&b); ka.sharesBand(&kb) || similarity.Similarity(a, b) != 0.75 {
		t.Fatalf("a pair at 0.75 differing in every band: shares a band %v, similarity %v", ka.sharesBand(&kb), similarity.Similarity(a, b))
	}
}

func randomText(rng *rand.Rand) string {
	words := []string{"ledger", "orm", "query", "deploy", "friday", "cache", "index", "row", "hotfix", "payments", "sql", "lazy"}
	var out []byte
	for range 5 + rng.IntN(30) {
		out = append(out, words[rng.IntN(len(words))]...)
		out = append(out, ' ')
	}
	return string(out)
}

// A band table behaves as a map from id to keys under any sequence of
// puts and removes: candidates are exactly the other ids whose keys
// share a band.
func TestBandTableIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tab, model := newBandTable(), map[string]bandKeys{}
	key := func() (k bandKeys) {
		for i := range k {
			k[i] = uint32(rng.IntN(4)) // few values: bands are often shared
		}
		return k
	}
	for range 5000 {
		id := string(rune('a' + rng.IntN(20)))
		if rng.IntN(3) == 0 {
			tab.remove(id)
			delete(model, id)
		} else {
			k := key()
			tab.put(id, k)
			model[id] = k
		}
		q, skip := key(), string(rune('a'+rng.IntN(20)))
		var want []string
		for id, k := range model {
			if id != skip && k.sharesBand(&q) {
				want = append(want, id)
			}
		}
		got := tab.candidates(&q, skip)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || tab.len() != len(model) {
			t.Fatalf("candidates %v, want %v; len %d, want %d", got, want, tab.len(), len(model))
		}
	}
}
