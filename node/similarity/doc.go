// Package similarity estimates how alike two texts are, for duplicate
// detection (node/memory/dedup's Find). It is pure: no I/O, no clock,
// no shared state; the same inputs give the same answers on every node and
// in every release, so a stored expectation keeps its meaning.
//
// MinHash: a text is lower-cased and split into words (runs of letters and
// digits), the words into overlapping K-word shingles (a text shorter than
// K words is one shingle), and each shingle is hashed (FNV-1a 64). N seeded
// 64-bit hash functions (splitmix64 over the shingle hash xor a fixed seed)
// each keep their minimum over the shingles: that is the Signature.
// Similarity, the share of equal slots of two signatures, estimates the
// Jaccard similarity of their shingle sets. A text with no word has the
// all-ones signature, similar to nothing.
//
// Banding (locality-sensitive hashing): the N slots form Bands bands of
// N/Bands rows; Signature.Band hashes one band. Two signatures with a
// Jaccard similarity s share at least one band hash with probability
// 1-(1-s^r)^b, so comparing only signatures that share a band finds nearly
// every pair above 0.8 without comparing all pairs.
//
// Cosine compares embedding vectors (from an embeddings endpoint; see
// node/embeddings).
//
//	a, b := similarity.MinHash(textA), similarity.MinHash(textB)
//	if similarity.Similarity(a, b) >= 0.8 { ... near-duplicates ... }
package similarity
