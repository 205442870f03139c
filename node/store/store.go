package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemohq/mnemo/crdt"
)

// Options tune the store. Zero values take the documented defaults.
type Options struct {
	Limits crdt.Limits // decoding limits for stored bytes; default crdt.DefaultLimits
	// Signer seals every Update's deltas (crdt.Map.Seal) before they are
	// stored, so the dots this node writes can be verified wherever they
	// are relayed. Zero: deltas are stored unsealed (tools and tests).
	Signer crdt.Signer
	// MaxPending bounds the writes (Update, Apply) waiting for their group
	// or in it; one more waits for a place. Default DefaultMaxPending.
	MaxPending int
	// GroupBytes is the soft bound on the bytes one group writes to the KV,
	// in bytes: a group takes no more requests once it wrote this much.
	// Keep it well under what the KV commits at once (Badger: 15% of its
	// memtable, 1.2 MiB with badgerkv's defaults). Default DefaultGroupBytes.
	GroupBytes int
	// GroupMax bounds the requests in one group. Default DefaultGroupMax.
	GroupMax int
}

// Defaults of Options.
const (
	DefaultMaxPending = 1024
	DefaultGroupBytes = 256 << 10
	DefaultGroupMax   = 256
)

// Change is one record entry touched by an Apply.
type Change struct {
	Namespace string
	ID        string
	Record    *crdt.Record // nil when the id was retracted
	// Seq is the write's place in the store's commit order (every change
	// of one Update or Apply has the same). Record is the entry as that
	// write left it: when CommittedSeq has passed Seq, a later write may
	// have changed it again (Store.Record reads what is committed now).
	Seq uint64
}

// Store is the persistent replicated state of one node.
type Store struct {
	kv     KV
	lim    crdt.Limits
	signer crdt.Signer
	ctxMu  sync.RWMutex
	ctxs   map[string]*crdt.Context // as committed to the KV, for writers; changed only by a leader
	dctxs  map[string]*crdt.Context // as durable, for readers (Context); changed only by a sync

	// Group commit (group.go). build is held (a value in it) while a
	// write is built, and guards pend, snap and seq. lead is held by the
	// one goroutine that commits a group. Close holds both (lead first);
	// closed is written under both. slots bounds the writes in flight.
	build       chan struct{}
	pend        pending
	snap        Reader // the committed state writes are built on
	snapRelease func()
	seq         uint64
	committed   atomic.Uint64 // seq of the last durable write; moved under dmu
	recent      recentWrites  // the entries the last writes touched (recent.go)
	lead        chan struct{}
	slots       chan struct{}
	qmu         sync.Mutex
	queue       []*request // guarded by qmu; built, in build order
	closed      bool
	groupBytes  int
	groupMax    int

	// Syncing (group.go). A group is committed to the KV unsynced, under
	// lead, then acknowledged by a sync begun after its commit, run
	// holding syncing (a channel, as build and lead are: a writer waiting
	// there is durably blocked for testing/synctest).
	skv      Syncer        // kv, or kv committing synced (syncedKV)
	visible  atomic.Uint64 // seq of the last write a reader may find in the KV: set before its commit
	kvSeq    atomic.Uint64 // seq of the last write committed to the KV
	folded   uint64        // under build: the kvSeq pend and snap were last brought to
	syncing  chan struct{} // held (a value in it) while syncing
	syncs    atomic.Uint64 // syncs begun
	smu      sync.Mutex
	unsynced []*group // guarded by smu: committed, not yet synced, in commit order
	dmu      sync.Mutex
	durCh    chan struct{} // guarded by dmu: closed when committed moves or broken is set
	broken   error         // guarded by dmu: the failed sync that stopped every write
}

// Open opens the store over kv (badgerkv on a node, MemKV in the simulator
// and in tests), loading every namespace's causal context. The Store owns
// kv from then on: its Close closes kv, and so does Open when it fails.
func Open(kv KV, opt Options) (*Store, error) {
	if kv == nil {
		return nil, errors.New("store: Open needs a KV (node/store/badgerkv on disk, NewMemKV in memory)")
	}
	s := &Store{kv: kv, lim: opt.Limits, signer: opt.Signer, ctxs: make(map[string]*crdt.Context),
		build: make(chan struct{}, 1), lead: make(chan struct{}, 1), groupBytes: opt.GroupBytes, groupMax: opt.GroupMax,
		durCh: make(chan struct{}), syncing: make(chan struct{}, 1)}
	if sk, ok := kv.(Syncer); ok {
		s.skv = sk
	} else {
		s.skv = syncedKV{kv}
	}
	if s.lim == (crdt.Limits{}) {
		s.lim = crdt.DefaultLimits()
	}
	if s.groupBytes <= 0 {
		s.groupBytes = DefaultGroupBytes
	}
	if s.groupMax <= 0 {
		s.groupMax = DefaultGroupMax
	}
	pending := opt.MaxPending
	if pending <= 0 {
		pending = DefaultMaxPending
	}
	s.slots = make(chan struct{}, pending)
	if err := s.loadContexts(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.migrate(); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.dctxs = maps.Clone(s.ctxs)
	s.pend.reset()
	s.renewSnapshot()
	return s, nil
}

// Close syncs what is committed, then closes the store and its KV (which
// flushes it and, for badgerkv, releases the directory lock). Later calls
// return nil.
func (s *Store) Close() error {
	s.lead <- struct{}{}
	defer func() { <-s.lead }()
	if !s.closed {
		s.settle() // acknowledges the groups committed; releases readers of what never will be
	}
	s.build <- struct{}{}
	defer func() { <-s.build }()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.snapRelease != nil {
		s.snapRelease()
		s.snapRelease = nil
	}
	return s.kv.Close()
}

// filePager is a KV whose files the process maps (badgerkv.KV).
type filePager interface {
	// ReleaseFilePages takes the mapped pages of the KV's tables out of
	// the process (they stay in the kernel's page cache), and those of its
	// logs that are synced out of the page cache too, and returns how many
	// bytes it advised. Safe to call
	// at any time; it never changes what the KV holds.
	ReleaseFilePages() int64
}

// ReleaseFilePages takes out of the process the pages of the KV's tables
// that reading them left resident (they stay in the page cache) and the
// synced pages of its logs (see badgerkv.KV.ReleaseFilePages), and
// returns how many bytes of mappings it advised: 0 for a KV without files.
func (s *Store) ReleaseFilePages() int64 {
	if p, ok := s.kv.(filePager); ok {
		return p.ReleaseFilePages()
	}
	return 0
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

// Namespaces lists the namespaces this store holds durable state for,
// sorted.
func (s *Store) Namespaces() []string {
	s.ctxMu.RLock()
	defer s.ctxMu.RUnlock()
	out := make([]string, 0, len(s.dctxs))
	for ns := range s.dctxs {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// Context returns a copy of a namespace's causal context as durable
// (empty if unknown): a write committed and not yet synced is not in it.
func (s *Store) Context(ns string) *crdt.Context {
	s.ctxMu.RLock()
	defer s.ctxMu.RUnlock()
	if c, ok := s.dctxs[ns]; ok {
		return c.Clone()
	}
	return crdt.NewContext()
}

// CommittedSeq is the Seq of the last write that is durable: a Change
// whose Seq is lower may no longer be the record as committed.
func (s *Store) CommittedSeq() uint64 { return s.committed.Load() }

// committedContext is ns's context as committed to the KV (durable or
// not: what writes build on) itself, not a copy: callers
// must not change it. A committed context is never changed in place (a
// commit stores a new one), so it may be read after ctxMu is released.
// The store's own reads (building a write, joining a group) take it so
// instead of copying it once more before they copy it to build the next.
func (s *Store) committedContext(ns string) *crdt.Context {
	s.ctxMu.RLock()
	defer s.ctxMu.RUnlock()
	if c, ok := s.ctxs[ns]; ok {
		return c
	}
	return crdt.NewContext()
}

// Record returns the stored entry for id (nil if none).
func (s *Store) Record(ns, id string) (*crdt.Record, error) {
	var rec *crdt.Record
	err := s.view(func(r Reader) error {
		var err error
		rec, err = s.readRecord(r, ns, id)
		return err
	})
	return rec, err
}

// RecordView is Record decoded for reading only (crdt.DecodeRecordView):
// the same checks and content, without the seals, so it must not be
// joined, encoded or passed on (that panics). For reads that show a
// memory: a get, the index's view of it.
func (s *Store) RecordView(ns, id string) (*crdt.Record, error) {
	var rec *crdt.Record
	err := s.view(func(r Reader) error {
		var err error
		rec, err = s.readRecordView(r, ns, id)
		return err
	})
	return rec, err
}

// RecordKey names one record entry: a memory id in a namespace.
type RecordKey struct {
	Namespace, ID string
}

// EachRecordView reads the record entries of keys from one snapshot, in
// one read transaction rather than one each (a search loads its ten hits
// so), and calls fn(i, rec) with keys[i]'s in order: nil when
// there is none or it cannot be read (err joins those errors). rec is a
// view (RecordView) valid only during the call: one record is decoded
// into again and again (its field map allocated once), and its values
// may be the KV's own bytes, lent for the call (ValueLender). fn copies
// what it keeps; a memory's conversion (schema.ToMemory) does. A search
// so reads its hits with one copy of each record less and no map per hit.
func (s *Store) EachRecordView(keys []RecordKey, fn func(i int, rec *crdt.Record)) error {
	var errs []error
	rec := crdt.NewRecord()
	verr := s.view(func(r Reader) error {
		lender, _ := r.(ValueLender)
		var k RecordKey
		decode := func(v []byte) error { // one closure for every key, not one a key
			if err := crdt.DecodeRecordViewInto(rec, v, s.lim); err != nil {
				return fmt.Errorf("store: record %s in %s: %w", k.ID, k.Namespace, err)
			}
			return nil
		}
		for i := range keys {
			k = keys[i]
			key := recKey(k.Namespace, k.ID)
			var err error
			if lender != nil {
				err = lender.GetFunc(key, decode)
			} else {
				var v []byte
				if v, err = r.Get(key); err == nil {
					err = decode(v)
				}
			}
			switch {
			case errors.Is(err, ErrKeyNotFound):
				fn(i, nil)
			case err != nil:
				errs = append(errs, err)
				fn(i, nil)
			default:
				fn(i, rec)
			}
		}
		return nil
	})
	return errors.Join(verr, errors.Join(errs...))
}

func (s *Store) readRecord(r Reader, ns, id string) (*crdt.Record, error) {
	return s.read(r, ns, id, crdt.DecodeRecord)
}

// readRecordView reads a view (crdt.DecodeRecordView), which may keep
// Get's value: a Reader's caller may keep it, and nothing changes it.
func (s *Store) readRecordView(r Reader, ns, id string) (*crdt.Record, error) {
	return s.read(r, ns, id, crdt.DecodeRecordView)
}

func (s *Store) read(r Reader, ns, id string, decode func([]byte, crdt.Limits) (*crdt.Record, error)) (*crdt.Record, error) {
	v, err := r.Get(recKey(ns, id))
	if errors.Is(err, ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := decode(v, s.lim)
	if err != nil {
		return nil, fmt.Errorf("store: record %s in %s: %w", id, ns, err)
	}
	return rec, nil
}

// Retracted reports whether id was retracted in ns.
func (s *Store) Retracted(ns, id string) (bool, error) {
	var gone bool
	err := s.view(func(r Reader) error {
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
	return s.view(func(r Reader) error {
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

// State assembles the full crdt state of ns (for state sync and tests):
// its context, records and retracted ids read in one view of the KV, so a
// state taken while a write commits is the state before it or after it,
// never the records of one and the context of the other.
func (s *Store) State(ns string) (*crdt.Map, error) {
	recs := map[string]*crdt.Record{}
	var retracted []string
	ctx := crdt.NewContext()
	err := s.view(func(r Reader) error {
		c, err := r.Get(ctxKey(ns))
		switch {
		case errors.Is(err, ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if ctx, err = crdt.DecodeContext(c, s.lim); err != nil {
				return fmt.Errorf("store: context of %s: %w", ns, err)
			}
		}
		if err := r.Iterate(recPrefix(ns), func(k, v []byte) error {
			_, id := splitNSID(k)
			rec, err := crdt.DecodeRecord(v, s.lim)
			if err != nil {
				return fmt.Errorf("store: record %s in %s: %w", id, ns, err)
			}
			recs[id] = rec
			return nil
		}); err != nil {
			return err
		}
		return r.Iterate(retKey(ns, ""), func(k, _ []byte) error {
			_, id := splitNSID(k)
			retracted = append(retracted, id)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return crdt.AssembleMap(ctx, recs, retracted), nil
}

// Fingerprint is a SHA-256 over what is stored of ns, as stored: its
// context, its records and its retracted ids, without decoding any of
// them. Two stores with equal fingerprints hold the same state of ns, so
// a check over many replicas (the simulator's) decodes one state per
// distinct fingerprint; unequal fingerprints prove nothing (compare
// State(ns).Digest() then).
func (s *Store) Fingerprint(ns string) ([32]byte, error) {
	h := sha256.New()
	var n [4]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	err := s.view(func(r Reader) error {
		c, err := r.Get(ctxKey(ns))
		if err != nil && !errors.Is(err, ErrKeyNotFound) {
			return err
		}
		put(c)
		for _, prefix := range [][]byte{recPrefix(ns), retKey(ns, "")} {
			if err := r.Iterate(prefix, func(k, v []byte) error {
				put(k)
				put(v)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, err
}

// RetractedIDs lists the retracted ids of ns, sorted.
func (s *Store) RetractedIDs(ns string) ([]string, error) {
	var out []string
	err := s.view(func(r Reader) error {
		return r.Iterate([]byte("x/"+ns+"\x00"), func(k, _ []byte) error {
			_, id := splitNSID(k)
			out = append(out, id)
			return nil
		})
	})
	return out, err
}

// Apply joins deltas (namespace → delta) into the stored state in one
// transaction, synced before it returns (group.go: concurrent writes share
// the sync). It returns every entry touched.
func (s *Store) Apply(deltas map[string]*crdt.Map) ([]Change, error) {
	return s.submit(&request{deltas: deltas})
}

// applyTo joins deltas into the transaction w over the contexts ctxOf
// gives (the group's: the store's as left by the requests before in the
// same group). It returns the entries touched and the namespaces' contexts
// once the deltas are in, which the caller writes (once per group, not
// once per write: writeContexts); it changes neither ctxOf's contexts nor
// the store's. On an error w may hold part of the deltas: the caller discards
// the transaction. pre holds the joins made before the commit, over the
// state w holds now (the writes before it are committed or earlier in w,
// in the same order): pendDeltas's when the write was built, and
// prejoin's (group.go) after it was sealed, encoded and with their dot
// index writes; an entry found there is not read and joined again, and a
// namespace prejoin checked (joined.checked: every entry read from the
// committed state, none retracted) reads no retraction key either.
func (s *Store) applyTo(w Writer, ctxOf func(ns string) *crdt.Context, deltas map[string]*crdt.Map, pre map[string]*joined) ([]Change, map[string]*crdt.Context, error) {
	var changes []Change
	newCtx := make(map[string]*crdt.Context, len(deltas))
	nss := make([]string, 0, len(deltas))
	for ns := range deltas {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	var err error
	for _, ns := range nss {
		d := deltas[ns]
		cur := ctxOf(ns)
		j := pre[ns]
		var next *crdt.Context // ns's context once d is in
		if j != nil {
			next = j.next
		} else {
			next = cur.Clone()
			next.Join(d.Context())
		}
		for _, id := range d.RetractedIDs() {
			var old *crdt.Record
			if jr, ok := j.rec(id); ok && j.checked {
				old = jr.local
			} else if old, err = s.readRecord(w, ns, id); err != nil {
				return nil, nil, err
			}
			if err := j.index(id, w, func(w Writer) error { return reindex(w, ns, id, old, nil, cur, next) }); err != nil {
				return nil, nil, err
			}
			if err := w.Delete(recKey(ns, id)); err != nil {
				return nil, nil, err
			}
			if err := w.Set(retKey(ns, id), nil); err != nil {
				return nil, nil, err
			}
			changes = append(changes, Change{Namespace: ns, ID: id})
		}
		d.Records(func(id string, drec *crdt.Record) bool {
			if d.Retracted(id) {
				return true
			}
			if j == nil || !j.checked {
				if _, gerr := w.Get(retKey(ns, id)); gerr == nil {
					return true // retracted here: final
				} else if !errors.Is(gerr, ErrKeyNotFound) {
					err = gerr
					return false
				}
			}
			var local, merged *crdt.Record
			var enc []byte
			if jr, ok := j.rec(id); ok {
				local, merged, enc = jr.local, jr.merged, jr.enc
			} else {
				if local, err = s.readRecord(w, ns, id); err != nil {
					return false
				}
				merged = crdt.JoinRecord(local, cur, drec, d.Context())
			}
			if enc == nil {
				enc = crdt.EncodeRecord(merged)
			}
			if err = w.Set(recKey(ns, id), enc); err != nil {
				return false
			}
			if err = j.index(id, w, func(w Writer) error { return reindex(w, ns, id, local, merged, cur, next) }); err != nil {
				return false
			}
			changes = append(changes, Change{Namespace: ns, ID: id, Record: merged})
			return true
		})
		if err != nil {
			return nil, nil, err
		}
		newCtx[ns] = next
	}
	return changes, newCtx, nil
}

// Meta reads a metadata value (nil if absent).
func (s *Store) Meta(name string) ([]byte, error) {
	var v []byte
	err := s.kv.View(func(r Reader) error { // metadata is written synced (SetMeta)
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
