package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/mnemohq/mnemo/crdt"
)

// ErrLocked reports a data directory held by another process.
var ErrLocked = errors.New("store: data directory in use")

// Options tune the store. Zero values take the documented defaults.
type Options struct {
	Limits crdt.Limits // decoding limits for stored bytes; default crdt.DefaultLimits
	Logger *slog.Logger
	// Badger memory: MemTableSize 8 MiB × NumMemtables 2, BlockCacheSize 8 MiB,
	// IndexCacheSize 4 MiB, ValueLogFileSize 64 MiB, ValueThreshold 64 KiB,
	// zstd level 1 compression.
	MemTableSize   int64
	BlockCacheSize int64
	// NoSync turns off the fsync per commit (benchmarks only: an
	// acknowledged write may then be lost on a crash).
	NoSync bool
	// Signer seals every Update's deltas (crdt.Map.Seal) before they are
	// stored, so the dots this node writes can be verified wherever they
	// are relayed. Zero: deltas are stored unsealed (tools and tests).
	Signer crdt.Signer
}

// Change is one record entry touched by an Apply.
type Change struct {
	Namespace string
	ID        string
	Record    *crdt.Record // nil when the id was retracted
}

// Store is the persistent replicated state of one node.
type Store struct {
	db     *badger.DB
	dir    string // absolute; "" in memory
	lock   *os.File
	lim    crdt.Limits
	signer crdt.Signer
	mu     sync.Mutex // serialises writers
	ctxMu  sync.RWMutex
	ctxs   map[string]*crdt.Context
	closed bool
}

// Open opens (creating if needed) the store in dir; dir "" keeps it in memory.
func Open(dir string, opt Options) (*Store, error) {
	s := &Store{lim: opt.Limits, signer: opt.Signer, ctxs: make(map[string]*crdt.Context)}
	if s.lim == (crdt.Limits{}) {
		s.lim = crdt.DefaultLimits()
	}
	bo := badger.DefaultOptions(dir)
	if dir == "" {
		bo = badger.DefaultOptions("").WithInMemory(true)
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create %s: %w", dir, err)
		}
		lock, err := acquireLock(dir)
		if err != nil {
			return nil, err
		}
		s.lock = lock
		if s.dir, err = filepath.Abs(dir); err != nil {
			s.releaseLock()
			return nil, fmt.Errorf("store: %w", err)
		}
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
		s.releaseLock()
		return nil, fmt.Errorf("store: open badger in %q: %w", dir, err)
	}
	s.db = db
	if err := s.loadContexts(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func acquireLock(dir string) (*os.File, error) {
	path := filepath.Join(dir, "mnemo.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 64))
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "unknown"
		}
		return nil, fmt.Errorf("%w: %s is held by process %s (another mnemo node); stop it or attach to it", ErrLocked, dir, pid)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func (s *Store) releaseLock() {
	if s.lock != nil {
		_ = s.lock.Truncate(0)
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		_ = s.lock.Close()
		s.lock = nil
	}
}

// Close flushes and closes the store and releases the directory lock.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.db != nil {
		err = s.db.Close()
	}
	s.releaseLock()
	return err
}

func ctxKey(ns string) []byte     { return []byte("n/" + ns) }
func recKey(ns, id string) []byte { return []byte("r/" + ns + "\x00" + id) }
func retKey(ns, id string) []byte { return []byte("x/" + ns + "\x00" + id) }
func metaKey(name string) []byte  { return []byte("m/" + name) }
func recPrefix(ns string) []byte  { return []byte("r/" + ns + "\x00") }
func splitNSID(k []byte) (ns, id string) {
	ns, id, _ = strings.Cut(string(k[2:]), "\x00")
	return ns, id
}

func (s *Store) loadContexts() error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("n/"), PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			ns := string(it.Item().Key()[2:])
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			c, err := crdt.DecodeContext(v, s.lim)
			if err != nil {
				return fmt.Errorf("store: context of %s: %w", ns, err)
			}
			s.ctxs[ns] = c
		}
		return nil
	})
}

// Namespaces lists the namespaces this store holds state for, sorted.
func (s *Store) Namespaces() []string {
	s.ctxMu.RLock()
	defer s.ctxMu.RUnlock()
	out := make([]string, 0, len(s.ctxs))
	for ns := range s.ctxs {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// Context returns a copy of a namespace's causal context (empty if unknown).
func (s *Store) Context(ns string) *crdt.Context {
	s.ctxMu.RLock()
	defer s.ctxMu.RUnlock()
	if c, ok := s.ctxs[ns]; ok {
		return c.Clone()
	}
	return crdt.NewContext()
}

// Record returns the stored entry for id (nil if none).
func (s *Store) Record(ns, id string) (*crdt.Record, error) {
	var rec *crdt.Record
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		rec, err = s.readRecord(txn, ns, id)
		return err
	})
	return rec, err
}

func (s *Store) readRecord(txn *badger.Txn, ns, id string) (*crdt.Record, error) {
	item, err := txn.Get(recKey(ns, id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec *crdt.Record
	err = item.Value(func(v []byte) error {
		var derr error
		rec, derr = crdt.DecodeRecord(v, s.lim)
		return derr
	})
	if err != nil {
		return nil, fmt.Errorf("store: record %s in %s: %w", id, ns, err)
	}
	return rec, nil
}

// Retracted reports whether id was retracted in ns.
func (s *Store) Retracted(ns, id string) (bool, error) {
	var gone bool
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(retKey(ns, id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		gone = err == nil
		return err
	})
	return gone, err
}

// Scan calls fn for every record entry of ns (all namespaces if ns is "")
// in key order, from one consistent snapshot.
func (s *Store) Scan(ns string, fn func(ns, id string, rec *crdt.Record) error) error {
	prefix := []byte("r/")
	if ns != "" {
		prefix = recPrefix(ns)
	}
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			rns, id := splitNSID(it.Item().Key())
			var rec *crdt.Record
			err := it.Item().Value(func(v []byte) error {
				var derr error
				rec, derr = crdt.DecodeRecord(v, s.lim)
				return derr
			})
			if err != nil {
				return fmt.Errorf("store: record %s in %s: %w", id, rns, err)
			}
			if err := fn(rns, id, rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// State assembles the full crdt state of ns (for state sync and tests).
func (s *Store) State(ns string) (*crdt.Map, error) {
	recs := map[string]*crdt.Record{}
	if err := s.Scan(ns, func(_, id string, rec *crdt.Record) error {
		recs[id] = rec
		return nil
	}); err != nil {
		return nil, err
	}
	var retracted []string
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := []byte("x/" + ns + "\x00")
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_, id := splitNSID(it.Item().Key())
			retracted = append(retracted, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return crdt.AssembleMap(s.Context(ns), recs, retracted), nil
}

// RetractedIDs lists the retracted ids of ns, sorted.
func (s *Store) RetractedIDs(ns string) ([]string, error) {
	var out []string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("x/" + ns + "\x00")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_, id := splitNSID(it.Item().Key())
			out = append(out, id)
		}
		return nil
	})
	return out, err
}

// Missing calls fn for each record entry of ns holding a dot outside have
// and returns the dots of ns's context outside have that no record holds:
// what a replica whose context is have lacks. Entries whose id starts with
// first come before the others (records that authorise the rest, such as
// signed grants, should arrive no later than what they authorise); within
// each group, id order. It scans the namespace.
func (s *Store) Missing(ns string, have *crdt.Context, first string, fn func(id string, rec *crdt.Record) error) (*crdt.Context, error) {
	ctx := s.Context(ns)
	attached := map[crdt.Dot]struct{}{}
	visit := func(wantFirst bool) error {
		return s.Scan(ns, func(_, id string, rec *crdt.Record) error {
			if first != "" && strings.HasPrefix(id, first) != wantFirst {
				return nil
			}
			outside := false
			for _, d := range rec.Dots() {
				if !have.Contains(d) {
					attached[d] = struct{}{}
					outside = true
				}
			}
			if outside {
				return fn(id, rec)
			}
			return nil
		})
	}
	if first != "" {
		if err := visit(true); err != nil {
			return nil, err
		}
	}
	if err := visit(false); err != nil {
		return nil, err
	}
	return crdt.RemovedDots(ctx, have, attached), nil
}

// Apply joins deltas (namespace → delta) into the stored state in one
// transaction, synced before it returns. It returns every entry touched.
func (s *Store) Apply(deltas map[string]*crdt.Map) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(deltas)
}

func (s *Store) applyLocked(deltas map[string]*crdt.Map) ([]Change, error) {
	if s.closed {
		return nil, errors.New("store: closed")
	}
	var changes []Change
	newCtx := make(map[string]*crdt.Context, len(deltas))
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	nss := make([]string, 0, len(deltas))
	for ns := range deltas {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	for _, ns := range nss {
		d := deltas[ns]
		cur := s.Context(ns)
		for _, id := range d.RetractedIDs() {
			if err := txn.Delete(recKey(ns, id)); err != nil {
				return nil, err
			}
			if err := txn.Set(retKey(ns, id), nil); err != nil {
				return nil, err
			}
			changes = append(changes, Change{Namespace: ns, ID: id})
		}
		var err error
		d.Records(func(id string, drec *crdt.Record) bool {
			if d.Retracted(id) {
				return true
			}
			var gone bool
			if _, gerr := txn.Get(retKey(ns, id)); gerr == nil {
				gone = true
			} else if !errors.Is(gerr, badger.ErrKeyNotFound) {
				err = gerr
				return false
			}
			if gone {
				return true
			}
			var local *crdt.Record
			if local, err = s.readRecord(txn, ns, id); err != nil {
				return false
			}
			merged := crdt.JoinRecord(local, cur, drec, d.Context())
			if err = txn.Set(recKey(ns, id), crdt.EncodeRecord(merged)); err != nil {
				return false
			}
			changes = append(changes, Change{Namespace: ns, ID: id, Record: merged})
			return true
		})
		if err != nil {
			return nil, err
		}
		cur.Join(d.Context())
		if err := txn.Set(ctxKey(ns), cur.Encode()); err != nil {
			return nil, err
		}
		newCtx[ns] = cur
	}
	if err := txn.Commit(); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return nil, fmt.Errorf("store: delta too large for one transaction: %w", err)
		}
		return nil, fmt.Errorf("store: commit: %w", err)
	}
	s.ctxMu.Lock()
	for ns, c := range newCtx {
		s.ctxs[ns] = c
	}
	s.ctxMu.Unlock()
	return changes, nil
}

// Meta reads a metadata value (nil if absent).
func (s *Store) Meta(name string) ([]byte, error) {
	var v []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey(name))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	return v, err
}

// SetMeta writes a metadata value, synced.
func (s *Store) SetMeta(name string, v []byte) error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(metaKey(name), bytes.Clone(v)) })
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
