package store

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"runtime"
	"sync"
	"weak"
)

// ValueTable lets many MemKVs in one process share equal entries (a key
// and its value): the simulator's nodes, which hold the same records under
// the same keys (and the same index keys naming them) as each other once
// they converge, where real nodes would each hold their own copy. An
// entry is kept once while any MemKV's tree still holds it (the table
// points to it weakly, and forgets it once it is collected). Safe for
// concurrent use.
//
// An entry is found by a 64-bit hash of its key and value (maphash, seeded
// per table), then compared whole: of two entries whose hashes collide the
// later is the one shared from then on, and both stay correct. A SHA-256
// here was 1.5% of a 100-node simulation's CPU (each store write hashed
// what it wrote).
type ValueTable struct {
	mu   sync.Mutex
	m    map[uint64]weak.Pointer[memEntry]
	seed maphash.Seed
	hash func(key, val []byte) uint64 // tests set it to make collisions
}

// NewValueTable returns an empty table.
func NewValueTable() *ValueTable {
	t := &ValueTable{m: map[uint64]weak.Pointer[memEntry]{}, seed: maphash.MakeSeed()}
	t.hash = t.maphash
	return t
}

// maphash hashes the key's length, the key and the value.
func (t *ValueTable) maphash(key, val []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(key)))
	h.Write(n[:])
	h.Write(key)
	h.Write(val)
	return h.Sum64()
}

// intern returns the shared entry of key and val, making it if none is
// held.
func (t *ValueTable) intern(key, val []byte) *memEntry {
	h := t.hash(key, val) // outside the lock
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[h].Value(); e != nil && bytes.Equal(e.key, key) && bytes.Equal(e.val, val) {
		return e
	}
	e := newMemEntry(key, val)
	t.m[h] = weak.Make(e)
	runtime.AddCleanup(e, t.forget, h)
	return e
}

// forget drops the entry of h if it was collected (and not made again
// since).
func (t *ValueTable) forget(h uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wp, ok := t.m[h]; ok && wp.Value() == nil {
		delete(t.m, h)
	}
}

// Len is the number of distinct entries held.
func (t *ValueTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
