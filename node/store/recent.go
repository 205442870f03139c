package store

import (
	"hash/maphash"
	"sync"
)

// recentMax is how many of the last committed entry writes the store
// remembers for WrittenAfter.
const recentMax = 4096

// recentWrites remembers which entries the last recentMax committed writes
// touched, so that a writer updating derived state after its commit (the
// search index) learns whether its Change is still the entry as committed
// without reading it back: a read through Badger waits for the commit in
// flight (doc.go, "Writes"), and under the index's lock it stalls every
// other writer's indexing too.
//
// An entry is remembered by a 64-bit hash of its namespace and id, not by
// its key (a string per write: with the map's slots 0.5 MB a store, 43 MB
// of a 100-node simulation's live heap of 644 MB). Two entries whose
// hashes collide share one last write, the later of theirs, which can only
// make writtenAfter report a write that did not happen to one of them: the
// caller then reads the entry back, as for one it does not know.
type recentWrites struct {
	mu   sync.Mutex
	seed maphash.Seed
	hash func(ns, id string) uint64 // maphash with seed; tests make collisions
	last map[uint64]uint64          // entry's hash → seq of the last write remembered to touch it
	ring []recentWrite              // circular, in commit order
	next int                        // where the next write goes once ring is full
	// horizon: the writes up to it may be forgotten.
	horizon uint64
}

type recentWrite struct {
	key uint64 // the entry's hash
	seq uint64
}

// maphash hashes ns, a NUL (never in a namespace) and id.
func (r *recentWrites) maphash(ns, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(ns)
	h.WriteByte(0)
	h.WriteString(id)
	return h.Sum64()
}

// keyOf is the hash entry id of ns is remembered by. Call with mu held.
func (r *recentWrites) keyOf(ns, id string) uint64 {
	if r.hash == nil {
		r.seed = maphash.MakeSeed()
		r.hash = r.maphash
	}
	return r.hash(ns, id)
}

// add notes, in commit order, that the write seq touched entry id of ns.
func (r *recentWrites) add(ns, id string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = make(map[uint64]uint64)
	}
	w := recentWrite{r.keyOf(ns, id), seq}
	if len(r.ring) < recentMax {
		r.ring = append(r.ring, w)
	} else {
		old := r.ring[r.next]
		if r.last[old.key] == old.seq {
			delete(r.last, old.key)
		}
		r.horizon = max(r.horizon, old.seq)
		r.ring[r.next] = w
		r.next = (r.next + 1) % recentMax
	}
	r.last[w.key] = seq
}

// writtenAfter reports whether a remembered write later than seq touched
// key; known is false when writes after seq may have been forgotten.
func (r *recentWrites) writtenAfter(ns, id string, seq uint64) (written, known bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seq < r.horizon {
		return false, false
	}
	return r.last[r.keyOf(ns, id)] > seq, true
}

// WrittenAfter reports whether a committed write later than seq (a
// Change's Seq) touched the entry id of ns: if not, that Change's Record is
// still the entry as committed. known is false when the store no longer
// remembers every write after seq (it keeps the last few thousand); the
// caller then reads the entry (Record). Any goroutine may call it.
func (s *Store) WrittenAfter(ns, id string, seq uint64) (written, known bool) {
	if seq >= s.committed.Load() {
		return false, true
	}
	return s.recent.writtenAfter(ns, id, seq)
}
