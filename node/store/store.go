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
	// KV, when set, is the storage to use instead of Badger (the simulator's
	// MemKV); dir, NoSync and the Badger sizes are then ignored, and Close
	// closes it.
	KV KV
}

// Change is one record entry touched by an Apply.
type Change struct {
	Namespace string
	ID        string
	Record    *crdt.Record // nil when the id was retracted
}

// Store is the persistent replicated state of one node.
type Store struct {
	kv     KV
	dir    string // absolute; "" in memory
	lock   *os.File
	lim    crdt.Limits
	signer crdt.Signer
	mu     sync.Mutex // serialises writers
	ctxMu  sync.RWMutex
	ctxs   map[string]*crdt.Context
	closed bool
}

// Open opens (creating if needed) the store in dir; dir "" keeps it in
// memory. With opt.KV it opens over that storage instead.
func Open(dir string, opt Options) (*Store, error) {
	s := &Store{lim: opt.Limits, signer: opt.Signer, ctxs: make(map[string]*crdt.Context)}
	if s.lim == (crdt.Limits{}) {
		s.lim = crdt.DefaultLimits()
	}
	if opt.KV != nil {
		s.kv = opt.KV
	} else {
		if dir != "" {
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
		}
		kv, err := openBadger(dir, opt)
		if err != nil {
			s.releaseLock()
			return nil, err
		}
		s.kv = kv
	}
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
	if s.kv != nil {
		err = s.kv.Close()
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
	return s.kv.View(func(r Reader) error {
		return r.Iterate([]byte("n/"), func(k, v []byte) error {
			ns := string(k[2:])
			c, err := crdt.DecodeContext(v, s.lim)
			if err != nil {
				return fmt.Errorf("store: context of %s: %w", ns, err)
			}
			s.ctxs[ns] = c
			return nil
		})
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
	err := s.kv.View(func(r Reader) error {
		var err error
		rec, err = s.readRecord(r, ns, id)
		return err
	})
	return rec, err
}

func (s *Store) readRecord(r Reader, ns, id string) (*crdt.Record, error) {
	v, err := r.Get(recKey(ns, id))
	if errors.Is(err, ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := crdt.DecodeRecord(v, s.lim)
	if err != nil {
		return nil, fmt.Errorf("store: record %s in %s: %w", id, ns, err)
	}
	return rec, nil
}

// Retracted reports whether id was retracted in ns.
func (s *Store) Retracted(ns, id string) (bool, error) {
	var gone bool
	err := s.kv.View(func(r Reader) error {
		_, err := r.Get(retKey(ns, id))
		if errors.Is(err, ErrKeyNotFound) {
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
	return s.kv.View(func(r Reader) error {
		return r.Iterate(prefix, func(k, v []byte) error {
			rns, id := splitNSID(k)
			rec, err := crdt.DecodeRecord(v, s.lim)
			if err != nil {
				return fmt.Errorf("store: record %s in %s: %w", id, rns, err)
			}
			return fn(rns, id, rec)
		})
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
	retracted, err := s.RetractedIDs(ns)
	if err != nil {
		return nil, err
	}
	return crdt.AssembleMap(s.Context(ns), recs, retracted), nil
}

// RetractedIDs lists the retracted ids of ns, sorted.
func (s *Store) RetractedIDs(ns string) ([]string, error) {
	var out []string
	err := s.kv.View(func(r Reader) error {
		return r.Iterate([]byte("x/"+ns+"\x00"), func(k, _ []byte) error {
			_, id := splitNSID(k)
			out = append(out, id)
			return nil
		})
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
	nss := make([]string, 0, len(deltas))
	for ns := range deltas {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	err := s.kv.Update(func(w Writer) error {
		for _, ns := range nss {
			d := deltas[ns]
			cur := s.Context(ns)
			for _, id := range d.RetractedIDs() {
				if err := w.Delete(recKey(ns, id)); err != nil {
					return err
				}
				if err := w.Set(retKey(ns, id), nil); err != nil {
					return err
				}
				changes = append(changes, Change{Namespace: ns, ID: id})
			}
			var err error
			d.Records(func(id string, drec *crdt.Record) bool {
				if d.Retracted(id) {
					return true
				}
				if _, gerr := w.Get(retKey(ns, id)); gerr == nil {
					return true // retracted here: final
				} else if !errors.Is(gerr, ErrKeyNotFound) {
					err = gerr
					return false
				}
				var local *crdt.Record
				if local, err = s.readRecord(w, ns, id); err != nil {
					return false
				}
				merged := crdt.JoinRecord(local, cur, drec, d.Context())
				if err = w.Set(recKey(ns, id), crdt.EncodeRecord(merged)); err != nil {
					return false
				}
				changes = append(changes, Change{Namespace: ns, ID: id, Record: merged})
				return true
			})
			if err != nil {
				return err
			}
			cur.Join(d.Context())
			if err := w.Set(ctxKey(ns), cur.Encode()); err != nil {
				return err
			}
			newCtx[ns] = cur
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrTxnTooBig) {
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
	err := s.kv.View(func(r Reader) error {
		var err error
		v, err = r.Get(metaKey(name))
		if errors.Is(err, ErrKeyNotFound) {
			return nil
		}
		return err
	})
	return v, err
}

// SetMeta writes a metadata value, synced.
func (s *Store) SetMeta(name string, v []byte) error {
	return s.kv.Update(func(w Writer) error { return w.Set(metaKey(name), bytes.Clone(v)) })
}
