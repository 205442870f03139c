package store

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// MemKV is a KV in memory for the simulator and for tests that crash a
// node: every committed Update is "on disk", and Crash returns the disk as
// a restarted process finds it, so a node reopened over it runs its real
// reopen path (the index rebuilt from the store, contexts reloaded).
//
// Reads see an immutable snapshot, so a View never blocks a writer and a
// nested View (a Scan's callback reading a record) cannot deadlock. A
// commit copies the snapshot: O(keys) per write, fine for the small
// stores of simulated nodes, not for a 100k-memory node (use Badger).
// Safe for concurrent use.
type MemKV struct {
	mu     sync.Mutex // serialises Update
	snap   atomic.Pointer[memSnap]
	closed atomic.Bool
}

// memSnap is one committed state: sorted keys and their values, never
// changed once published.
type memSnap struct {
	keys []string
	vals map[string][]byte
}

var _ KV = (*MemKV)(nil)

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV {
	k := &MemKV{}
	k.snap.Store(&memSnap{vals: map[string][]byte{}})
	return k
}

// PowerCut is the process dying now: an Update that has not committed
// never will, and every later call fails with ErrClosed. It takes no lock,
// so it may be called from inside an Update's fn (a crash mid-write).
func (k *MemKV) PowerCut() { k.closed.Store(true) }

// Restart returns the KV a restarted process opens: everything committed
// before the cut, nothing else. It waits out an Update in flight (which,
// cut, cannot commit any more). Call it after PowerCut or Close.
func (k *MemKV) Restart() *MemKV {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := &MemKV{}
	n.snap.Store(k.snap.Load())
	return n
}

// Crash is PowerCut then Restart.
func (k *MemKV) Crash() *MemKV {
	k.PowerCut()
	return k.Restart()
}

// Len is the number of keys committed.
func (k *MemKV) Len() int { return len(k.snap.Load().keys) }

func (k *MemKV) View(fn func(r Reader) error) error {
	if k.closed.Load() {
		return ErrClosed
	}
	return fn(memReader{k.snap.Load()})
}

func (k *MemKV) Update(fn func(w Writer) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Load() {
		return ErrClosed
	}
	base := k.snap.Load()
	w := &memWriter{memReader: memReader{base}, pending: map[string][]byte{}, deleted: map[string]bool{}}
	if err := fn(w); err != nil {
		return err
	}
	if k.closed.Load() {
		return ErrClosed // crashed while fn ran: the commit never happened
	}
	if len(w.pending) == 0 && len(w.deleted) == 0 {
		return nil
	}
	next := &memSnap{vals: make(map[string][]byte, len(base.vals)+len(w.pending))}
	for key, v := range base.vals {
		if !w.deleted[key] {
			next.vals[key] = v
		}
	}
	added := false
	for key, v := range w.pending {
		if _, ok := base.vals[key]; !ok {
			added = true
		}
		next.vals[key] = v
	}
	if added || len(w.deleted) > 0 {
		next.keys = make([]string, 0, len(next.vals))
		for key := range next.vals {
			next.keys = append(next.keys, key)
		}
		slices.Sort(next.keys)
	} else {
		next.keys = base.keys
	}
	k.snap.Store(next)
	return nil
}

func (k *MemKV) Close() error {
	k.closed.Store(true)
	return nil
}

type memReader struct{ s *memSnap }

func (r memReader) Get(key []byte) ([]byte, error) {
	if v, ok := r.s.vals[string(key)]; ok {
		return v, nil // committed values are never changed
	}
	return nil, ErrKeyNotFound
}

func (r memReader) Iterate(prefix []byte, fn func(key, value []byte) error) error {
	p := string(prefix)
	for i := sort.SearchStrings(r.s.keys, p); i < len(r.s.keys) && strings.HasPrefix(r.s.keys[i], p); i++ {
		if err := fn([]byte(r.s.keys[i]), r.s.vals[r.s.keys[i]]); err != nil {
			return err
		}
	}
	return nil
}

// memWriter reads its own writes over the snapshot it started from.
type memWriter struct {
	memReader
	pending map[string][]byte
	deleted map[string]bool
}

func (w *memWriter) Get(key []byte) ([]byte, error) {
	k := string(key)
	if v, ok := w.pending[k]; ok {
		return v, nil
	}
	if w.deleted[k] {
		return nil, ErrKeyNotFound
	}
	return w.memReader.Get(key)
}

// Iterate is the snapshot's: the Store never iterates inside its writes.
func (w *memWriter) Iterate(prefix []byte, fn func(key, value []byte) error) error {
	return w.memReader.Iterate(prefix, fn)
}

func (w *memWriter) Set(key, value []byte) error {
	k := string(key)
	w.pending[k] = bytes.Clone(value)
	delete(w.deleted, k)
	return nil
}

func (w *memWriter) Delete(key []byte) error {
	k := string(key)
	delete(w.pending, k)
	if _, ok := w.s.vals[k]; ok {
		w.deleted[k] = true
	}
	return nil
}
