package acl

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

// Books sharing an EvalCache take each other's evaluation of a namespace
// only when they hold the same records and bind their signers to the same
// keys: a book binding the creator to another key, or holding one more
// record, evaluates afresh and decides otherwise.
func TestEvalCacheSharedOnlyForEqualRecordsAndKeys(t *testing.T) {
	ns := namespace.MustParse("team://x")
	cache := NewEvalCache(0)
	w := newWorld(t, "a", "b", "c")
	w.book.SetEvalCache(cache)
	create := w.create("a", "team://x")
	grant := w.grant("a", "team://x", "b", []Permission{Read})
	first := w.book.Policy()
	if !first.Allowed(agent("b"), ns, Read) || cache.Evaluated() != 1 {
		t.Fatalf("first book: b reads %v, %d evaluations, want true and 1", first.Allowed(agent("b"), ns, Read), cache.Evaluated())
	}

	same := NewBook(w.keyOf)
	same.SetEvalCache(cache)
	for _, r := range []SignedRecord{grant, create} {
		if err := same.AddRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if p := same.Policy(); !p.Unchanged(first, ns) || cache.Evaluated() != 1 {
		t.Fatalf("a book with the same records and keys evaluated again (%d evaluations)", cache.Evaluated())
	}

	// a is bound to c's key here: a's records do not count.
	otherKeys := NewBook(func(p namespace.Address) (ed25519.PublicKey, bool) {
		if p == agent("a") {
			return w.ids["c"].Public, true
		}
		return w.keyOf(p)
	})
	otherKeys.SetEvalCache(cache)
	for _, r := range []SignedRecord{create, grant} {
		if err := otherKeys.AddRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if p := otherKeys.Policy(); p.Allowed(agent("b"), ns, Read) || cache.Evaluated() != 2 {
		t.Fatalf("a book binding a to another key took the cached evaluation (b reads: %v, %d evaluations)", p.Allowed(agent("b"), ns, Read), cache.Evaluated())
	}

	more := same.Fork(ns)
	if err := more.AddRecord(w.must(NewGrant(w.ids["a"], agent("a"), ns, agent("c"), []Permission{Read}, nil, w.next()))); err != nil {
		t.Fatal(err)
	}
	if p := more.Policy(); !p.Allowed(agent("c"), ns, Read) || cache.Evaluated() != 3 {
		t.Fatalf("a book holding one more record took the cached evaluation (c reads: %v, %d evaluations)", p.Allowed(agent("c"), ns, Read), cache.Evaluated())
	}
}

// A full cache starts afresh: it never holds more than its capacity.
func TestEvalCacheBounded(t *testing.T) {
	cache := NewEvalCache(2)
	w := newWorld(t, "a")
	w.book.SetEvalCache(cache)
	for _, name := range []string{"team://x", "team://y", "team://z"} {
		w.create("a", name)
		w.book.Policy()
	}
	if n := len(cache.m); n > 2 || cache.Evaluated() != 3 {
		t.Fatalf("%d entries in a cache of 2 after %d evaluations, want at most 2 after 3", n, cache.Evaluated())
	}
}

// evalCacheKey hashes through a buffer flushed every few kilobytes: its key
// is the hash of the plain sequence of writes (root, then each record's id,
// signature and its signer's key), for books small and large enough to
// flush many times, with signers bound and unbound.
func TestEvalCacheKeyIsTheHashOfItsFields(t *testing.T) {
	reference := func(ns namespace.Address, m map[string]*SignedRecord, ids []string, keyOf KeyLookup) [32]byte {
		h := sha256.New()
		h.Write([]byte(ns.String()))
		h.Write([]byte{0})
		for _, id := range ids {
			r := m[id]
			key, ok := keyOf(r.Signer)
			h.Write([]byte{byte(len(id) >> 8), byte(len(id))})
			h.Write([]byte(id))
			h.Write([]byte{byte(len(r.Sig))})
			h.Write(r.Sig)
			if ok {
				h.Write([]byte{1, byte(len(key))})
				h.Write(key)
			} else {
				h.Write([]byte{0})
			}
		}
		var k [32]byte
		h.Sum(k[:0])
		return k
	}
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("m%d", i))
	}
	w := newWorld(t, names...)
	ns := namespace.MustParse("team://k")
	w.create("m0", "team://k")
	w.grant("m0", "team://k", "m1", []Permission{Admin})
	for i := range 120 {
		by := "m0"
		if i%3 == 0 { // records of two signers
			by = "m1"
		}
		w.grant(by, "team://k", names[2+i%10], []Permission{Read})
		m := w.book.recs[ns]
		ids := sortedKeys(m)
		unbound := func(p namespace.Address) (ed25519.PublicKey, bool) {
			if p == agent("m0") {
				return nil, false
			}
			return w.keyOf(p)
		}
		for _, keyOf := range []KeyLookup{w.keyOf, unbound} {
			if got, want := evalCacheKey(ns, m, ids, keyOf), reference(ns, m, ids, keyOf); got != want {
				t.Fatalf("%d records: key %x, the plain hash is %x", len(ids), got, want)
			}
		}
	}
}
