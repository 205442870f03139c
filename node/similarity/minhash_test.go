package similarity

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// duplicateThreshold is node/memory/dedup's DefaultThreshold, the
// estimate at which testdata/duplicates.json labels a pair a duplicate.
const duplicateThreshold = 0.8

func TestMinHash(t *testing.T) {
	text := "the quick brown fox jumps over the lazy dog near the river bank"
	if got := Similarity(MinHash(text), MinHash(text)); got != 1 {
		t.Fatalf("identical: %v", got)
	}
	if got := Similarity(MinHash(text), MinHash("completely unrelated words about database replication protocols and clocks")); got > 0.05 {
		t.Fatalf("disjoint: %v", got)
	}
	if MinHash(text) != MinHash(text) {
		t.Fatal("not deterministic")
	}
	if sig := MinHash("alpha beta gamma"); sig[0] != MinHash("Alpha, BETA gamma!")[0] {
		t.Fatal("normalisation: case and punctuation must not matter")
	}
	if Similarity(MinHash(""), MinHash("")) != 0 {
		t.Fatal("empty texts are similar to nothing")
	}
	var pairs []struct {
		A, B string
		Dup  bool
	}
	b, err := os.ReadFile("testdata/duplicates.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pairs); err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		sim := Similarity(MinHash(p.A), MinHash(p.B))
		if (sim >= duplicateThreshold) != p.Dup {
			t.Errorf("pair %d: similarity %.3f, want duplicate=%v", i, sim, p.Dup)
		}
	}
}

// TestPinned: a change of seeds, hashing or banding changes these values
// (taken from the implementation in node/memory before it moved here), and
// with them every cached signature and stored expectation.
func TestPinned(t *testing.T) {
	s := MinHash("alpha beta gamma delta")
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"slot 0", s[0], 0x61c2b940dcf1a100},
		{"slot 1", s[1], 0x7260e4bbe471a1bb},
		{"slot 127", s[127], 0x2ccf7d0ca95f8105},
		{"band 0", s.Band(0), 0x55b97ba2df397eb1},
		{"band 31", s.Band(31), 0x5966abac44bf8a9},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if got := Similarity(MinHash("the quick brown fox jumps over the lazy dog"), MinHash("the quick brown fox jumps over the lazy cat")); got != 0.71875 {
		t.Errorf("one word of nine changed: %v, want 0.71875", got)
	}
}

func TestShingles(t *testing.T) {
	for _, c := range []struct {
		text string
		n    int
	}{
		{"", 0}, {" ,.; ", 0}, {"one", 1}, {"one two", 1}, {"one two three", 1},
		{"one two three four", 2}, {"a-b c_d e", 3}, // '-' and '_' split words: a b c d e
	} {
		if got := len(shingles(c.text)); got != c.n {
			t.Errorf("shingles(%q): %d, want %d", c.text, got, c.n)
		}
	}
	if a, b := shingles("Ünïcode Wörds here"), shingles("ünïcode wörds HERE"); len(a) != 1 || a[0] != b[0] {
		t.Errorf("letters beyond ASCII are words, case-folded: %v %v", a, b)
	}
}

// TestBands: equal signatures share every band; signatures that differ in
// one slot differ in exactly that slot's band.
func TestBands(t *testing.T) {
	a := MinHash("retry payments with exponential backoff and jitter")
	b := a
	b[5]++ // row 5 is in band 5/(N/Bands) = 1
	for i := range Bands {
		same := a.Band(i) == b.Band(i)
		if same != (i != 5/(N/Bands)) {
			t.Errorf("band %d: same=%v", i, same)
		}
	}
	var z Signature // every row equal: bands still hash apart by their index
	if z.Band(0) == z.Band(1) {
		t.Error("two bands with equal rows have the same hash")
	}
}

func TestCosine(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 0}, []float64{1, 0}, 1},
		{[]float64{1, 0}, []float64{0, 1}, 0},
		{[]float64{1, 0}, []float64{-1, 0}, -1},
		{[]float64{3, 4}, []float64{6, 8}, 1},
		{[]float64{1, 0}, []float64{1, 0, 0}, 0}, // mismatched
		{nil, nil, 0},
		{[]float64{0, 0}, []float64{1, 0}, 0}, // zero vector
	} {
		if got := Cosine(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
