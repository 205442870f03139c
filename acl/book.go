package acl

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
)

// KeyLookup returns the node key a principal is bound to: the key of the
// node that hosts the agent, from membership or local configuration. ok is
// false for a principal the node does not know. A Policy calls it when it is
// built and on project reads, so it must be safe for concurrent use if the
// Policy is used concurrently.
type KeyLookup func(principal namespace.Address) (key ed25519.PublicKey, ok bool)

// Book holds the signed records of every namespace the node knows, as fed
// from the namespaces' GSets. It keeps every record whose signature verifies,
// authorised or not: whether a record counts depends on the others, and is
// decided by Policy. A Book is not safe for concurrent use; the Policy it
// builds is an immutable snapshot.
type Book struct {
	keyOf KeyLookup
	// recs: root namespace -> id -> record. The records are immutable
	// once added; with a SigCache, the cache's copy (SigCache.verifyKept).
	recs map[namespace.Address]map[string]*SignedRecord
	// ids: root namespace -> the ids of recs[root], sorted, once a Policy
	// needed them; a record added goes in at its place. Every slice is
	// clipped (cap == len), so an insert copies it: a fork shares its
	// book's slices, and neither writes into the other's.
	ids   map[namespace.Address][]string
	n     int
	sigs  *SigCache  // nil: verify every time
	evals *EvalCache // nil: evaluate every time
	// evaluated is each root's state as the last Policy evaluated it,
	// until a record of that root is added (or KeysChanged). States are
	// immutable once built, so Policies share them.
	evaluated map[namespace.Address]*nsState
	// memo remembers recent evaluations by root and record set, shared
	// with the book's forks; gen is the memo generation the book reads
	// and writes (KeysChanged starts a new one).
	memo *evalMemo
	gen  uint64
	fork bool // made by Fork: its evaluations go into memo for the book
}

// evalMemo hands a fork's evaluations to its book, by root and set of
// records. A peer's delta that brings acl records is checked against a fork
// holding them (memory.Service.PolicyWithDelta), and the book evaluates the
// same set again once the delta is applied: it finds the fork's evaluation
// here and takes it out. Forks put, books take; at most evalMemoMax entries
// (then it starts afresh), since each holds a whole namespace's evaluation
// (64 of them per node were 40% of a 100-node simulation's heap). Entries
// of an older generation (before KeysChanged) are never read. Safe for
// concurrent use: a fork is evaluated outside the lock that guards its
// book.
type evalMemo struct {
	mu  sync.Mutex
	gen uint64
	m   map[evalKey]*nsState
}

type evalKey struct {
	root namespace.Address
	ids  [32]byte // SHA-256 over the sorted record ids and signatures
}

const evalMemoMax = 8

// get returns the evaluation of k, taking it out if take.
func (m *evalMemo) get(gen uint64, k evalKey, take bool) *nsState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen {
		return nil
	}
	st := m.m[k]
	if take {
		delete(m.m, k)
	}
	return st
}

func (m *evalMemo) put(gen uint64, k evalKey, st *nsState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen {
		return
	}
	if len(m.m) >= evalMemoMax {
		clear(m.m)
	}
	m.m[k] = st
}

// next starts a new generation and returns it.
func (m *evalMemo) next() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	clear(m.m)
	return m.gen
}

// idsKey is the memo key of a root's records: their sorted ids and the
// signatures kept (two valid signatures of one body: AddRecord).
func idsKey(root namespace.Address, ids []string, recs map[string]*SignedRecord) evalKey {
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write(recs[id].Sig)
	}
	k := evalKey{root: root}
	h.Sum(k.ids[:0])
	return k
}

// NewBook returns an empty book that binds principals to keys with keyOf.
// A nil keyOf knows no principal: no record counts and nobody reads a
// project by default.
func NewBook(keyOf KeyLookup) *Book {
	if keyOf == nil {
		keyOf = func(namespace.Address) (ed25519.PublicKey, bool) { return nil, false }
	}
	return &Book{keyOf: keyOf, recs: make(map[namespace.Address]map[string]*SignedRecord), ids: make(map[namespace.Address][]string), evaluated: make(map[namespace.Address]*nsState),
		memo: &evalMemo{m: map[evalKey]*nsState{}}}
}

// SetSigCache makes the book, the forks made from it afterwards and the
// Policies it builds verify signatures through c (nil: every time), so a
// record verified on one of the node's paths is not verified again on the
// next.
func (b *Book) SetSigCache(c *SigCache) { b.sigs = c }

// SetEvalCache makes the book and the forks made from it afterwards take
// an evaluation from c when c holds an equal one, and leave theirs there
// (nil: evaluate every time).
func (b *Book) SetEvalCache(c *EvalCache) { b.evals = c }

// Add decodes raw (a GSet element) and adds the record if its signature
// verifies. Errors wrap ErrCorrupt or ErrBadSignature, and then nothing is
// added. Adding a record already present is a no-op.
func (b *Book) Add(raw []byte) (SignedRecord, error) {
	r, err := DecodeRecord(raw)
	if err != nil {
		return SignedRecord{}, err
	}
	return r, b.AddRecord(r)
}

// AddRecord adds r if its signature verifies; errors wrap ErrBadSignature or
// ErrInvalid and then nothing is added.
//
// A record already held with the same signature is not verified again
// (the id covers the whole body): replication hands the same records over
// and over, and a verification costs far more than the lookup.
func (b *Book) AddRecord(r SignedRecord) error {
	id := r.ID()
	if old, ok := b.recs[r.Namespace][id]; ok && bytes.Equal(old.Sig, r.Sig) {
		return nil
	}
	kept, keptID, err := b.sigs.verifyKept(r, id)
	if err != nil {
		return err
	}
	m := b.recs[r.Namespace]
	if m == nil {
		m = make(map[string]*SignedRecord)
		b.recs[r.Namespace] = m
	}
	if old, ok := m[id]; ok {
		// Same body, another valid signature: keep the smaller encoding so
		// the book does not depend on arrival order.
		if bytes.Compare(r.Encode(), old.Encode()) < 0 {
			m[id] = kept
			delete(b.evaluated, r.Namespace)
		}
		return nil
	}
	m[keptID] = kept
	b.n++
	_, evaluated := b.evaluated[r.Namespace]
	delete(b.evaluated, r.Namespace)
	if ids, ok := b.ids[r.Namespace]; ok {
		if evaluated {
			// The first record since a Policy: one copy, for the delta's
			// fork. Records that keep coming before the next Policy (a
			// sync answer's thousands) would each copy all the ids, so the
			// next Policy sorts them once instead.
			i, _ := slices.BinarySearch(ids, keptID)
			b.ids[r.Namespace] = slices.Clip(slices.Insert(ids, i, keptID))
		} else {
			delete(b.ids, r.Namespace)
		}
	}
	return nil
}

// sortedIDs is the ids of the records of root, sorted: kept from the last
// time (evaluating a root sorted all of its ids on every change, and a
// peer's delta changes a fork's by one record).
func (b *Book) sortedIDs(root namespace.Address) []string {
	if ids, ok := b.ids[root]; ok {
		return ids
	}
	ids := slices.Clip(sortedKeys(b.recs[root]))
	b.ids[root] = ids
	return ids
}

// AddSet adds every element of a namespace's record set. Bad elements are
// skipped; the error joins one error per bad element (each wrapping
// ErrCorrupt or ErrBadSignature), nil if all were good.
func (b *Book) AddSet(s *crdt.GSet) error {
	var errs []error
	for _, e := range s.Elements() {
		if _, err := b.Add([]byte(e)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Fork returns a new book with the same key lookup holding b's records
// of the given root namespaces, verified already: nothing is verified
// again. Adding to the fork leaves b as it is.
func (b *Book) Fork(roots ...namespace.Address) *Book {
	f := NewBook(b.keyOf)
	f.sigs, f.evals = b.sigs, b.evals
	f.memo, f.gen, f.fork = b.memo, b.gen, true
	for _, root := range roots {
		if m, ok := b.recs[root]; ok {
			f.recs[root] = maps.Clone(m)
			f.n += len(m)
			if ids, ok := b.ids[root]; ok {
				f.ids[root] = ids
			}
			if st, ok := b.evaluated[root]; ok {
				f.evaluated[root] = st
			}
		}
	}
	return f
}

// Covers reports whether p answers about each of recs' namespaces as a
// fork of b with recs added would: b holds every one of them already (with
// the same signature) and p holds b's current evaluation of that
// namespace. A peer's delta mostly carries acl records the node holds
// (a sync answer carries them all), and forking to find that out copied
// the namespace's records each time.
func (b *Book) Covers(p *Policy, recs []SignedRecord) bool {
	if p == nil {
		return false
	}
	for _, r := range recs {
		old, ok := b.recs[r.Namespace][r.ID()]
		if !ok || !bytes.Equal(old.Sig, r.Sig) {
			return false
		}
		st, ok := b.evaluated[r.Namespace]
		if pst, _ := p.ns.get(r.Namespace); !ok || pst != st {
			return false
		}
	}
	return true
}

// Len is the number of records held.
func (b *Book) Len() int { return b.n }

// Records lists the records of ns's root namespace, sorted by id.
func (b *Book) Records(ns namespace.Address) []SignedRecord {
	m := b.recs[ns.Root()]
	out := make([]SignedRecord, 0, len(m))
	for _, id := range sortedKeys(m) {
		out = append(out, cloneRecord(*m[id]))
	}
	return out
}

// Revocations returns, sorted, the ids of every revocation in the book of any
// of perms on ns's root from principal: the after list for a new grant of
// perms, so that it outweighs the revocations its signer has seen.
func (b *Book) Revocations(ns, principal namespace.Address, perms []Permission) []string {
	var out []string
	for id, r := range b.recs[ns.Root()] {
		if r.Kind == KindRevoke && r.Principal == principal && overlaps(r.Perms, perms) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Policy evaluates the book: which records count, and so who may do what.
// The result is a pure function of the set of records and the key lookup's
// answers. A root namespace whose records have not changed since the last
// Policy is not evaluated again (a node holds many namespaces and adds a
// record to one at a time), so when the key lookup's answers may have
// changed (a principal bound, moved or added), call KeysChanged first.
func (b *Book) Policy() *Policy {
	p := &Policy{keyOf: b.keyOf, sigs: b.sigs}
	p.ns.sized(b.recs)
	for ns, m := range b.recs {
		st, ok := b.evaluated[ns]
		if !ok {
			ids := b.sortedIDs(ns)
			// With an EvalCache the memo would hand over what the cache
			// holds already, for a second hash of every record.
			var k evalKey
			if b.evals == nil {
				k = idsKey(ns, ids, m)
				st = b.memo.get(b.gen, k, !b.fork)
			}
			if st == nil {
				st = b.evals.evaluate(ns, m, ids, b.keyOf) // the keys are the records' ids
				if b.fork && b.evals == nil {
					b.memo.put(b.gen, k, st)
				}
			}
			b.evaluated[ns] = st
		}
		p.ns.set(ns, st)
	}
	return p
}

// KeysChanged makes the next Policy evaluate every namespace again: call
// it when what the key lookup answers may have changed.
func (b *Book) KeysChanged() {
	clear(b.evaluated)
	b.gen = b.memo.next()
}

func overlaps(a, b []Permission) bool {
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cloneRecord(r SignedRecord) SignedRecord {
	r.SignerKey = bytes.Clone(r.SignerKey)
	r.Perms = slices.Clone(r.Perms)
	r.After = slices.Clone(r.After)
	r.Sig = bytes.Clone(r.Sig)
	return r
}

// errorf wraps sentinel with a message about record r.
func errorf(sentinel error, r SignedRecord, id, format string, args ...any) error {
	return fmt.Errorf("%w: %s (%s): %s", sentinel, r, short(id), fmt.Sprintf(format, args...))
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
