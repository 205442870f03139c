package store

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
)

// MemKV is a KV in memory for the simulator and for tests that crash a
// node: an Update is "on disk" once committed, an UpdateNoSync once a Sync
// begun after it returns (it is a Syncer, as Badger is), and Crash returns
// the disk as a restarted process finds it — what was committed but not
// synced is gone — so a node reopened over it runs its real reopen path
// (the index rebuilt from the store, contexts reloaded).
//
// Reads see an immutable snapshot, so a View never blocks a writer and a
// nested View (a Scan's callback reading a record) cannot deadlock. The
// committed state is a copy-on-write B-tree (github.com/google/btree): an
// Update writes into a lazy clone, which copies only the nodes on the paths
// it changes, so a commit costs O(log keys) time and memory per key
// written, and snapshots share everything else; a Get is O(log keys).
// Everything is in memory: for simulated nodes and tests, not for a real
// node (use Badger). Safe for concurrent use.
type MemKV struct {
	mu sync.Mutex // serialises Update
	// head is the committed tree Updates clone; only touched under mu,
	// never published. The tree Views read is a second clone, published
	// once made and then never written nor cloned: btree lets a tree and
	// its clone be used concurrently once Clone returns, but Clone itself
	// writes its receiver, so only head is ever cloned.
	head *btree.BTreeG[*memEntry]
	// durable is what a restart finds: a clone of head made at the last
	// sync (Update, Sync), under mu, never read nor written but by
	// Restart.
	durable *btree.BTreeG[*memEntry]
	snap    atomic.Pointer[btree.BTreeG[*memEntry]] // what Views read
	closed  atomic.Bool
	values  *ValueTable // shares equal entries with other MemKVs; nil: each entry its own
}

// memEntry is one key and its value, never changed once in a tree: a
// write replaces the entry. With a ValueTable, MemKVs holding an equal
// key and value hold one memEntry. A tree holds a pointer per key, not
// the slices themselves: a commit copies the nodes on its paths, and
// nodes of pointers are an eighth of nodes of two slices and two
// pointers (the B-tree nodes were a fifth of a 100-node simulation's
// heap, and their copies the largest share of what its commits allocated).
type memEntry struct{ key, val []byte }

func memLess(a, b *memEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

// probe is the entry a lookup of key compares with.
func probe(key []byte) *memEntry { return &memEntry{key: key} }

// newMemEntry copies key and value into one allocation, each clipped, so
// that a caller appending to a key or value it was handed reallocates
// rather than writing into memory the tree shares.
func newMemEntry(key, val []byte) *memEntry {
	buf := make([]byte, len(key)+len(val))
	copy(buf, key)
	copy(buf[len(key):], val)
	e := &memEntry{key: buf[:len(key):len(key)], val: buf[len(key):]}
	if val == nil {
		e.val = nil
	}
	return e
}

// memDegree is the B-tree's degree (nodes of 15 to 31 items). A commit
// copies one node per level of the paths it changes: a larger degree
// copies more per level over fewer levels, and iterates faster. Of 4 to 64
// (BenchmarkMemKV*), 16 committed about fastest at 1k to 100k keys.
const memDegree = 16

var (
	_ KV          = (*MemKV)(nil)
	_ Snapshotter = (*MemKV)(nil)
	_ Syncer      = (*MemKV)(nil)
	_ ValueLender = memReader{}
	_ ValueLender = (*memWriter)(nil)
)

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return NewSharedMemKV(nil) }

// NewSharedMemKV returns an empty MemKV that keeps each value once in
// values for every MemKV sharing the table (nil: NewMemKV).
func NewSharedMemKV(values *ValueTable) *MemKV {
	k := &MemKV{head: btree.NewG(memDegree, memLess), values: values}
	k.durable = k.head.Clone()
	k.snap.Store(k.head.Clone())
	return k
}

// PowerCut is the process dying now: an Update that has not committed
// never will, and every later call fails with ErrClosed. It takes no lock,
// so it may be called from inside an Update's fn (a crash mid-write).
func (k *MemKV) PowerCut() { k.closed.Store(true) }

// Restart returns the KV a restarted process opens: everything synced
// before the cut (every Update, and every UpdateNoSync a Sync covered),
// nothing else. It waits out an Update in flight (which, cut, cannot
// commit any more). Call it after PowerCut or Close.
func (k *MemKV) Restart() *MemKV {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := &MemKV{head: k.durable.Clone(), values: k.values} // k's and n's writes copy, not share
	n.durable = n.head.Clone()
	n.snap.Store(n.head.Clone())
	return n
}

// Crash is PowerCut then Restart.
func (k *MemKV) Crash() *MemKV {
	k.PowerCut()
	return k.Restart()
}

// Len is the number of keys committed.
func (k *MemKV) Len() int { return k.snap.Load().Len() }

func (k *MemKV) View(fn func(r Reader) error) error {
	if k.closed.Load() {
		return ErrClosed
	}
	return fn(memReader{k.snap.Load()})
}

// Update commits fn's writes durably: a restart finds them, and every
// UpdateNoSync before them.
func (k *MemKV) Update(fn func(w Writer) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.commit(fn); err != nil {
		return err
	}
	k.durable = k.head.Clone()
	return nil
}

// UpdateNoSync commits fn's writes, visible at once, durable (found by
// Restart) only once a Sync begun after it returns.
func (k *MemKV) UpdateNoSync(fn func(w Writer) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.commit(fn)
}

// Sync makes every commit before it durable.
func (k *MemKV) Sync() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Load() {
		return ErrClosed // cut: what was not synced is lost
	}
	k.durable = k.head.Clone()
	return nil
}

// commit runs fn and commits it (under mu).
func (k *MemKV) commit(fn func(w Writer) error) error {
	if k.closed.Load() {
		return ErrClosed
	}
	w := &memWriter{memReader: memReader{k.snap.Load()}, head: k.head, values: k.values}
	if err := fn(w); err != nil {
		return err // w.work, never published, is dropped
	}
	if k.closed.Load() {
		return ErrClosed // crashed while fn ran: the commit never happened
	}
	if w.work == nil {
		return nil
	}
	k.head = w.work
	k.snap.Store(w.work.Clone())
	return nil
}

// Snapshot is the committed state now: an immutable tree, so it needs no
// release and may be read by any goroutine.
func (k *MemKV) Snapshot() (Reader, func()) { return memReader{k.snap.Load()}, func() {} }

// Close makes what was committed durable, as Badger's Close does (it
// writes its memtables to tables), unless the power was cut before.
func (k *MemKV) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed.Swap(true) {
		k.durable = k.head.Clone()
	}
	return nil
}

type memReader struct{ t *btree.BTreeG[*memEntry] }

func (r memReader) Get(key []byte) ([]byte, error) {
	if it, ok := r.t.Get(probe(key)); ok {
		return it.val, nil // committed values are never changed
	}
	return nil, ErrKeyNotFound
}

// GetFunc lends the committed value itself (never changed).
func (r memReader) GetFunc(key []byte, fn func(value []byte) error) error {
	v, err := r.Get(key)
	if err != nil {
		return err
	}
	return fn(v)
}

func (r memReader) Iterate(prefix []byte, fn func(key, value []byte) error) error {
	return r.IterateFrom(prefix, prefix, fn)
}

func (r memReader) IterateFrom(prefix, start []byte, fn func(key, value []byte) error) error {
	if bytes.Compare(start, prefix) < 0 {
		start = prefix
	}
	var err error
	r.t.AscendGreaterOrEqual(probe(start), func(it *memEntry) bool {
		if !bytes.HasPrefix(it.key, prefix) {
			return false
		}
		err = fn(it.key, it.val)
		return err == nil
	})
	return err
}

// memWriter writes into a clone of the committed tree, made at its first
// write, and reads its own writes from it.
type memWriter struct {
	memReader // the snapshot the Update started from
	head      *btree.BTreeG[*memEntry]
	work      *btree.BTreeG[*memEntry] // nil until the first write
	values    *ValueTable
}

func (w *memWriter) Get(key []byte) ([]byte, error) {
	if w.work == nil {
		return w.memReader.Get(key)
	}
	return memReader{w.work}.Get(key)
}

// GetFunc lends what Get returns: the transaction's own writes too.
func (w *memWriter) GetFunc(key []byte, fn func(value []byte) error) error {
	v, err := w.Get(key)
	if err != nil {
		return err
	}
	return fn(v)
}

// Iterate is the snapshot's, as it was when the Update started: the Store
// never iterates inside its writes. fn may write.
func (w *memWriter) Iterate(prefix []byte, fn func(key, value []byte) error) error {
	return w.memReader.Iterate(prefix, fn)
}

// IterateFrom is the snapshot's too, as Iterate.
func (w *memWriter) IterateFrom(prefix, start []byte, fn func(key, value []byte) error) error {
	return w.memReader.IterateFrom(prefix, start, fn)
}

func (w *memWriter) Set(key, value []byte) error {
	if w.work == nil {
		w.work = w.head.Clone()
	}
	var e *memEntry
	if w.values != nil {
		e = w.values.intern(key, value)
	} else {
		e = newMemEntry(key, value)
	}
	w.work.ReplaceOrInsert(e)
	return nil
}

func (w *memWriter) Delete(key []byte) error {
	if w.work == nil {
		if _, ok := w.memReader.t.Get(probe(key)); !ok {
			return nil
		}
		w.work = w.head.Clone()
	}
	w.work.Delete(probe(key))
	return nil
}
