package store

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// badgerKV is the KV of a node: Badger in dir, or in memory for dir "".
type badgerKV struct{ db *badger.DB }

var _ KV = badgerKV{}

// openBadger opens Badger tuned for a sidecar (see Options).
func openBadger(dir string, opt Options) (badgerKV, error) {
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
	cache := opt.BlockCacheSize
	if cache <= 0 {
		cache = 8 << 20
	}
	// Values over 64 KiB go to the value log on disk; smaller ones (every
	// memory short of a maximal one) stay in the LSM tree, whose blocks are
	// compressed (zstd level 1): 100k memories take ~50 MB on disk instead
	// of ~69 MB with the value log over 1 KiB and snappy. In memory there
	// is no value log, so every value stays in the LSM tree (Badger caps the
	// threshold at 15% of the memtable).
	threshold := min(int64(64<<10), mem*15/100)
	if dir == "" {
		threshold = min(mem*15/100, 1<<20)
	}
	bo = bo.WithMemTableSize(mem).WithNumMemtables(2).
		WithNumLevelZeroTables(2).WithNumLevelZeroTablesStall(4).
		WithBlockCacheSize(cache).WithIndexCacheSize(4 << 20).
		WithValueLogFileSize(64 << 20).WithValueThreshold(threshold).
		WithCompression(options.ZSTD).WithZSTDCompressionLevel(1).
		WithNumCompactors(2).WithMetricsEnabled(false).
		WithLogger(badgerLogger{opt.Logger})
	db, err := badger.Open(bo)
	if err != nil {
		return badgerKV{}, fmt.Errorf("store: open badger in %q: %w", dir, err)
	}
	return badgerKV{db}, nil
}

func (k badgerKV) View(fn func(r Reader) error) error {
	return k.db.View(func(txn *badger.Txn) error { return fn(badgerTxn{txn}) })
}

func (k badgerKV) Update(fn func(w Writer) error) error {
	txn := k.db.NewTransaction(true)
	defer txn.Discard()
	if err := fn(badgerTxn{txn}); err != nil {
		return err
	}
	return tooBig(txn.Commit())
}

func (k badgerKV) Close() error { return k.db.Close() }

// badgerTxn is a Badger transaction as a Reader and Writer.
type badgerTxn struct{ txn *badger.Txn }

func (t badgerTxn) Get(key []byte) ([]byte, error) {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
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

func (t badgerTxn) Set(key, value []byte) error { return tooBig(t.txn.Set(key, value)) }
func (t badgerTxn) Delete(key []byte) error     { return tooBig(t.txn.Delete(key)) }

// tooBig maps Badger's transaction limit to ErrTxnTooBig.
func tooBig(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("%w: %w", ErrTxnTooBig, err)
	}
	return err
}

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
