package similarity

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// The signature's shape. Changing any of these (or the seed) changes every
// signature: stored expectations and cached signatures lose their meaning.
const (
	K     = 3   // words per shingle
	N     = 128 // hash functions, the slots of a Signature
	Bands = 32  // LSH bands of N/Bands rows
	seed  = 0x6d6e656d6f2d6d68
)

// Signature is a MinHash signature: per hash function, the minimum over the
// text's shingles.
type Signature [N]uint64

// seeds returns the per-slot seeds. Derived on each call rather than kept
// in a package variable: it costs N multiplications, next to N per shingle.
func seeds() (s [N]uint64) {
	x := uint64(seed)
	for i := range s {
		x += 0x9e3779b97f4a7c15
		s[i] = mix64(x)
	}
	return s
}

// mix64 is the splitmix64 finaliser.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// shingles hashes the word K-shingles of text (fewer than K words: the
// whole text is one shingle).
func shingles(text string) []uint64 {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return nil
	}
	n := max(1, len(words)-K+1)
	out := make([]uint64, 0, n)
	for i := range n {
		h := fnv.New64a()
		for j := i; j < min(i+K, len(words)); j++ {
			h.Write([]byte(words[j]))
			h.Write([]byte{0})
		}
		out = append(out, h.Sum64())
	}
	return out
}

// MinHash returns text's signature. Empty text (no word) gives the
// all-ones signature, which Similarity treats as similar to nothing.
func MinHash(text string) Signature {
	var sig Signature
	for i := range sig {
		sig[i] = math.MaxUint64
	}
	sh := shingles(text)
	if len(sh) == 0 {
		return sig
	}
	ss := seeds()
	for _, h := range sh {
		for i, sd := range ss {
			if v := mix64(h ^ sd); v < sig[i] {
				sig[i] = v
			}
		}
	}
	return sig
}

func (a *Signature) empty() bool { return a[0] == math.MaxUint64 && a[1] == math.MaxUint64 }

// Similarity estimates the Jaccard similarity of the shingle sets behind
// a and b: the share of equal slots, 0 when either text had no word.
func Similarity(a, b Signature) float64 {
	if a.empty() || b.empty() {
		return 0
	}
	eq := 0
	for i := range a {
		if a[i] == b[i] {
			eq++
		}
	}
	return float64(eq) / N
}

// Band hashes band i (0 <= i < Bands) of the signature: signatures that
// agree on all N/Bands rows of a band have the same band hash.
func (a *Signature) Band(i int) uint64 {
	const rows = N / Bands
	h := uint64(i) * 0x9e3779b97f4a7c15
	for _, v := range a[i*rows : (i+1)*rows] {
		h = mix64(h ^ v)
	}
	return h
}

// Cosine is the cosine similarity of two vectors (0 for mismatched or
// zero vectors).
func Cosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
