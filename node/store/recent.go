package store

import "sync"

// recentMax is how many of the last committed entry writes the store
// remembers for WrittenAfter.
const recentMax = 4096

// recentWrites remembers which entries the last recentMax committed writes
// touched, so that a writer updating derived state after its commit (the
// search index) learns whether its Change is still the entry as committed
// without reading it back: a read through Badger waits for the commit in
// flight (doc.go, "Writes"), and under the index's lock it stalls every
// other writer's indexing too.
type recentWrites struct {
	mu   sync.Mutex
	last map[string]uint64 // entry key → seq of the last write remembered to touch it
	ring []recentWrite     // circular, in commit order
	next int               // where the next write goes once ring is full
	// horizon: the writes up to it may be forgotten.
	horizon uint64
}

type recentWrite struct {
	key string
	seq uint64
}

// add notes, in commit order, that the write seq touched key.
func (r *recentWrites) add(key string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = make(map[string]uint64)
	}
	w := recentWrite{key, seq}
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
	r.last[key] = seq
}

// writtenAfter reports whether a remembered write later than seq touched
// key; known is false when writes after seq may have been forgotten.
func (r *recentWrites) writtenAfter(key string, seq uint64) (written, known bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seq < r.horizon {
		return false, false
	}
	return r.last[key] > seq, true
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
	return s.recent.writtenAfter(entryKey(ns, id), seq)
}

func entryKey(ns, id string) string { return ns + "\x00" + id }
