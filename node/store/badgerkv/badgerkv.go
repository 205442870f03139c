package badgerkv

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/mnemohq/mnemo/node/store"
)

// Options tune Badger for a sidecar. Zero values take the documented
// defaults; the rest of the tuning is fixed (see Open).
type Options struct {
	// Logger receives Badger's own log lines (component=badger, its info
	// at debug level). Default: discarded.
	Logger *slog.Logger
	// MemTableSize is the size of each of Badger's two memtables, in
	// bytes. Default 8 MiB.
	MemTableSize int64
	// BlockCacheSize is Badger's block cache, in bytes. Default 0: none
	// (the tables are not compressed, so a cached block is only a view of
	// the mapped file; see Open).
	BlockCacheSize int64
	// NoSync turns off the syncs (benchmarks and bulk loads only: an
	// acknowledged write may then be lost on a crash). Default off: every
	// Update is synced before it returns, and Sync syncs.
	NoSync bool
}

// KV is Badger as a store.KV: in a data directory whose lock it holds, or
// in memory. Safe for concurrent use; Close once.
type KV struct {
	db     *badger.DB
	dir    string   // absolute; "" in memory
	lock   *os.File // the directory's lock file; nil in memory
	noSync bool     // opt.NoSync, or in memory: Sync does nothing

	// Sync's own state (sync.go): one Sync at a time, and the newest
	// memtable log and value log each had seen.
	syncMu    sync.Mutex
	memFid    uint32
	vlogFid   uint32
	fsync     func(path string) error // syncs a file; a seam for tests
	bigValues atomic.Bool             // a value for the value log was written since the last Sync
	threshold int                     // Badger's ValueThreshold: a value this long goes to the value log

	builders *builderShedder // drains Badger's idle table-builder allocators (builders.go); nil if not found
}

var (
	_ store.KV          = (*KV)(nil)
	_ store.Snapshotter = (*KV)(nil)
	_ store.Syncer      = (*KV)(nil)
	_ store.ValueLender = badgerTxn{}
	_ store.Writer      = badgerWriter{}
)

// Open opens (creating if needed) Badger in dir, tuned for a sidecar:
// memtables of opt.MemTableSize (two), no block cache unless
// opt.BlockCacheSize, no index cache, value-log files of 64 MiB,
// values of 64 KiB or more in the value log, no compression, two
// compactors. Every Update is synced unless opt.NoSync; Badger itself
// never syncs a commit (SyncWrites off): the KV does, in Sync (sync.go).
//
// It takes the directory's lock (mnemo.lock, holding the pid) first: a
// directory held by another process fails with store.ErrLocked naming
// that process, before Badger is touched. dir "" keeps Badger in memory,
// without a lock (tests). The KV's Close releases the lock.
func Open(dir string, opt Options) (*KV, error) {
	k := &KV{}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("badgerkv: create %s: %w", dir, err)
		}
		lock, err := acquireLock(dir)
		if err != nil {
			return nil, err
		}
		k.lock = lock
		if k.dir, err = filepath.Abs(dir); err != nil {
			k.releaseLock()
			return nil, fmt.Errorf("badgerkv: %w", err)
		}
	}
	// Badger's own sync per commit is off whatever opt.NoSync says
	// (openBadger turns SyncWrites off for NoSync): the KV syncs, once
	// for many commits (Sync).
	bopt := opt
	bopt.NoSync = true
	db, err := openBadger(dir, bopt)
	if err != nil {
		k.releaseLock()
		return nil, err
	}
	k.db, k.noSync, k.fsync = db, opt.NoSync || dir == "", fdatasync
	k.threshold = int(db.Opts().ValueThreshold)
	if !k.noSync {
		if err := k.findLogs(); err != nil {
			_ = db.Close()
			k.releaseLock()
			return nil, err
		}
	}
	k.builders = startBuilderShedder(db, builderTick, builderQuiet, k.shed)
	return k, nil
}

// openBadger opens Badger tuned for a sidecar (see Open).
func openBadger(dir string, opt Options) (*badger.DB, error) {
	bo := badger.DefaultOptions(dir)
	if dir == "" {
		bo = badger.DefaultOptions("").WithInMemory(true)
	} else {
		bo = bo.WithSyncWrites(!opt.NoSync)
	}
	mem := opt.MemTableSize
	if mem <= 0 {
		mem = 8 << 20
	}
	cache := max(opt.BlockCacheSize, 0)
	// Values of 64 KiB or more go to the value log on disk; smaller ones (every
	// memory short of a maximal one) stay in the LSM tree, whose blocks are
	// not compressed. Every search hit is a point read of a block. With
	// zstd level 1 its decompression was 17% of the CPU of GET /v1/search
	// at 100k memories, and snappy cut the CPU per search by 17% (mnemo
	// bench search, 1,234–1,246 → 1,017–1,029 µs, alternately twice) for
	// 8% more table bytes. Uncompressed blocks go further: a compressed
	// block is decompressed into a new heap buffer per read (and held by
	// the block cache), garbage that under the node's soft memory limit
	// kept the collector busy — in a CPU profile of 2,000 searches the
	// collector's mark workers were 28% of the CPU with snappy tables and
	// 14% without, allocation 14% and 7%, decompression 5% and 0. The same
	// binary on two fresh 100k loads, alternately 3×: 2,618 → 1,402 µs of
	// CPU per search (medians), for 20% more table bytes (135 MiB against
	// 114: records of short random-ish words and signatures compress
	// little) and so 20 MiB more of mapped tables while searching. Table
	// builders hold a table once instead of twice (heap in use after a
	// bulk load 129 against 176–196 MiB), and flushes and compactions skip
	// the compression. Tables written before keep their compression:
	// Badger records it per table and reads either; the block cache stays
	// for theirs (for uncompressed blocks it holds references into the
	// mapped file, not copies).
	//
	// So neither cache is kept (issue 15, fourth round). An uncompressed
	// block read from the mapped file is a slice of it: caching it saves
	// parsing its footer, and the cache's bookkeeping (ristretto's admission
	// policy, run by its own goroutine, an item allocated per block set)
	// cost more than that, with few hits for searches whose ten records are
	// spread over 137 MiB at 100k memories: mnemo bench search, one 100k
	// directory, alternately 3× (load ~17), CPU per search 663 → 585 µs
	// (the 2,000; medians), 667 → 610 µs (500 after 1 s idle), p95 3.3–5.2
	// → 1.4–1.8 ms. Tables written compressed before round two are
	// decompressed on every read of them (with an 8 MiB cache over
	// ~110 MiB of them, most reads missed it anyway), until a compaction
	// rewrites them. The index cache only ever holds the indexes of
	// encrypted tables (an unencrypted table's index is read in place from
	// the mapping), and nothing is encrypted. In memory there is no value log, so every
	// value stays in the LSM tree (Badger caps the threshold at 15% of the
	// memtable).
	threshold := min(int64(64<<10), mem*15/100)
	if dir == "" {
		threshold = min(mem*15/100, 1<<20)
	}
	bo = bo.WithMemTableSize(mem).WithNumMemtables(2).
		WithNumLevelZeroTables(2).WithNumLevelZeroTablesStall(4).
		WithBlockCacheSize(cache).WithIndexCacheSize(0).
		WithValueLogFileSize(64 << 20).WithValueThreshold(threshold).
		WithCompression(options.None).
		WithNumCompactors(2).WithMetricsEnabled(false).
		WithLogger(badgerLogger{opt.Logger})
	db, err := badger.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("badgerkv: open badger in %q: %w", dir, err)
	}
	return db, nil
}

func (k *KV) View(fn func(r store.Reader) error) error {
	return k.db.View(func(txn *badger.Txn) error { return fn(badgerTxn{txn}) })
}

// Update commits fn's writes and syncs them (unless NoSync).
func (k *KV) Update(fn func(w store.Writer) error) error {
	if err := k.UpdateNoSync(fn); err != nil {
		return err
	}
	return k.Sync()
}

// UpdateNoSync commits fn's writes without syncing them: they are
// durable once a Sync begun after it returns.
func (k *KV) UpdateNoSync(fn func(w store.Writer) error) error {
	txn := k.db.NewTransaction(true)
	defer txn.Discard()
	var big bool
	if err := fn(badgerWriter{badgerTxn{txn}, k, &big}); err != nil {
		return err
	}
	if err := txn.Commit(); err != nil {
		return tooBig(err)
	}
	if big {
		// Noted once committed, not at Set: a Sync running meanwhile
		// would take the note for its own and leave this value unsynced.
		k.bigValues.Store(true)
	}
	return nil
}

// Snapshot is a read-only Badger transaction: the state committed when it
// began. The Store builds writes on one while the last group syncs (a new
// transaction would wait for that sync). One goroutine at a time; release
// discards it.
func (k *KV) Snapshot() (store.Reader, func()) {
	txn := k.db.NewTransaction(false)
	return badgerTxn{txn}, txn.Discard
}

// Close closes Badger, then releases the directory's lock.
func (k *KV) Close() error {
	k.builders.stop()
	err := k.db.Close()
	k.releaseLock()
	return err
}

// badgerTxn is a Badger transaction as a Reader and Writer.
type badgerTxn struct{ txn *badger.Txn }

func (t badgerTxn) Get(key []byte) ([]byte, error) {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, store.ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// GetFunc lends the value Item.Value reads, without ValueCopy's copy of it.
func (t badgerTxn) GetFunc(key []byte, fn func(value []byte) error) error {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return store.ErrKeyNotFound
	}
	if err != nil {
		return err
	}
	return item.Value(fn)
}

func (t badgerTxn) Iterate(prefix []byte, fn func(key, value []byte) error) error {
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if err := item.Value(func(v []byte) error { return fn(item.Key(), v) }); err != nil {
			return err
		}
	}
	return nil
}

// IterateFrom seeks to start without prefetching values: the Store uses
// it for short walks (a few index keys), where prefetching a batch of
// values would read more than the walk does.
func (t badgerTxn) IterateFrom(prefix, start []byte, fn func(key, value []byte) error) error {
	if bytes.Compare(start, prefix) < 0 {
		start = prefix
	}
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(start); it.Valid(); it.Next() {
		item := it.Item()
		if err := item.Value(func(v []byte) error { return fn(item.Key(), v) }); err != nil {
			return err
		}
	}
	return nil
}

// badgerWriter is a read-write transaction: it notes a value that goes to
// the value log (big), which Sync then syncs too once it is committed.
type badgerWriter struct {
	badgerTxn
	k   *KV
	big *bool
}

func (t badgerWriter) Set(key, value []byte) error {
	if len(value) >= t.k.threshold {
		*t.big = true
	}
	return tooBig(t.txn.Set(key, value))
}

func (t badgerWriter) Delete(key []byte) error { return tooBig(t.txn.Delete(key)) }

// tooBig maps Badger's transaction limit to store.ErrTxnTooBig.
func tooBig(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("%w: %w", store.ErrTxnTooBig, err)
	}
	return err
}

// badgerLogger passes Badger's log lines to a slog.Logger (nil: dropped).
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) log(level slog.Level, f string, a ...any) {
	if b.l != nil {
		b.l.Log(nil, level, strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}
func (b badgerLogger) Errorf(f string, a ...any)   { b.log(slog.LevelError, f, a...) }
func (b badgerLogger) Warningf(f string, a ...any) { b.log(slog.LevelWarn, f, a...) }
func (b badgerLogger) Infof(f string, a ...any)    { b.log(slog.LevelDebug, f, a...) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.log(slog.LevelDebug-4, f, a...) }
