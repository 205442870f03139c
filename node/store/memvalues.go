package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
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
type ValueTable struct {
	mu sync.Mutex
	m  map[[32]byte]weak.Pointer[memEntry]
}

// NewValueTable returns an empty table.
func NewValueTable() *ValueTable {
	return &ValueTable{m: map[[32]byte]weak.Pointer[memEntry]{}}
}

// intern returns the shared entry of key and val, making it if none is
// held.
func (t *ValueTable) intern(key, val []byte) *memEntry {
	// Hashed outside the lock: the key's length, the key, the value.
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(key)))
	d := sha256.New()
	d.Write(n[:])
	d.Write(key)
	d.Write(val)
	var h [32]byte
	d.Sum(h[:0])
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
func (t *ValueTable) forget(h [32]byte) {
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
