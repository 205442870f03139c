package dedup

import (
	"math"

	"github.com/mnemohq/mnemo/node/similarity"
)

// bandKeys are a signature's LSH band hashes (similarity.Signature.Band),
// each cut to 32 bits: 128 bytes stand for the 1 KiB signature. Two
// signatures that agree on a band have equal keys there; unequal bands
// collide on a key once in 2^32, which costs one needless comparison.
type bandKeys [similarity.Bands]uint32

func keysOf(sig *similarity.Signature) (k bandKeys) {
	for i := range k {
		k[i] = uint32(sig.Band(i))
	}
	return k
}

// sharesBand reports whether a and b agree on some band.
func (a *bandKeys) sharesBand(b *bandKeys) bool {
	for i := range a {
		if a[i] == b[i] {
			return true
		}
	}
	return false
}

// bandsFind is whether the band keys find every pair at threshold t: two
// signatures whose Similarity is >= t differ in at most N − ⌈t·N⌉ slots,
// and fewer differing slots than bands leave one band whole (pigeonhole),
// so for t > 1 − Bands/N (0.75) no pair is missed. Below it, a check
// compares with the namespace's memories one by one.
func bandsFind(t float64) bool {
	return similarity.N-int(math.Ceil(t*similarity.N)) < similarity.Bands
}

// bandTable holds the band keys of one shared namespace's memories that
// take part in merging on save, so a check finds its candidates by
// comparing 128 bytes per memory in memory instead of loading every
// memory of the namespace. Entries are hints: a candidate is loaded and
// compared in full before it is merged, so an entry left behind by a
// change the worker never saw costs a load, never a wrong merge. Used by
// the worker goroutine only.
type bandTable struct {
	ids  []string
	keys []bandKeys
	at   map[string]int // id → index in ids and keys
}

func newBandTable() *bandTable { return &bandTable{at: map[string]int{}} }

// put sets id's band keys.
func (t *bandTable) put(id string, k bandKeys) {
	if i, ok := t.at[id]; ok {
		t.keys[i] = k
		return
	}
	t.at[id] = len(t.ids)
	t.ids = append(t.ids, id)
	t.keys = append(t.keys, k)
}

// remove drops id, moving the last entry into its place.
func (t *bandTable) remove(id string) {
	i, ok := t.at[id]
	if !ok {
		return
	}
	last := len(t.ids) - 1
	t.ids[i], t.keys[i] = t.ids[last], t.keys[last]
	t.at[t.ids[i]] = i
	t.ids, t.keys = t.ids[:last], t.keys[:last]
	delete(t.at, id)
}

// candidates lists the ids other than skip whose keys share a band with k.
func (t *bandTable) candidates(k *bandKeys, skip string) []string {
	var out []string
	for i := range t.keys {
		if t.keys[i].sharesBand(k) && t.ids[i] != skip {
			out = append(out, t.ids[i])
		}
	}
	return out
}

func (t *bandTable) len() int { return len(t.ids) }
