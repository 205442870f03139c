package store

import (
	"bytes"
	"crypto/sha256"
	"runtime"
	"slices"
	"sync"
	"weak"
)

// ValueTable lets many MemKVs in one process share the bytes of equal
// values and of equal keys: the simulator's nodes, which hold the same
// records (and the same index keys naming them) as each other once they
// converge, where real nodes would each hold their own copy. A value or key
// is kept once while any MemKV's tree still holds it (the table points to
// it weakly, and forgets it once it is collected). Safe for concurrent use.
type ValueTable struct {
	mu sync.Mutex
	m  map[[32]byte]weak.Pointer[sharedValue]
}

// sharedValue is one value's bytes; every tree item holding them points to
// it, which keeps it alive.
type sharedValue struct{ b []byte }

// NewValueTable returns an empty table.
func NewValueTable() *ValueTable {
	return &ValueTable{m: map[[32]byte]weak.Pointer[sharedValue]{}}
}

// intern returns the shared copy of v, making it if none is held.
func (t *ValueTable) intern(v []byte) *sharedValue {
	h := sha256.Sum256(v)
	t.mu.Lock()
	defer t.mu.Unlock()
	if sv := t.m[h].Value(); sv != nil && bytes.Equal(sv.b, v) {
		return sv
	}
	sv := &sharedValue{slices.Clip(bytes.Clone(v))}
	t.m[h] = weak.Make(sv)
	runtime.AddCleanup(sv, t.forget, h)
	return sv
}

// forget drops the entry of h if its value was collected (and not made
// again since).
func (t *ValueTable) forget(h [32]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wp, ok := t.m[h]; ok && wp.Value() == nil {
		delete(t.m, h)
	}
}

// Len is the number of distinct values held.
func (t *ValueTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
