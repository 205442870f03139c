package acl

import (
	"errors"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

// A Book with a SigCache verifies a record once across AddRecord, its
// forks and its policies' Verify; a record that differs from a verified
// one in its signature, its body or its signer key is verified afresh and
// refused, on every one of those paths, and so is one whose structure is
// bad.
func TestSigCacheVerifiesOnceAndRefusesTampering(t *testing.T) {
	w := newWorld(t, "alice", "bob", "mallory")
	core := namespace.MustParse("team://core")
	cache := NewSigCache(0)
	w.book.SetSigCache(cache)
	create := w.must(NewCreate(w.ids["alice"], agent("alice"), core, w.next()))
	grant := w.must(NewGrant(w.ids["alice"], agent("alice"), core, agent("bob"), []Permission{Read}, nil, w.next()))
	if err := w.book.Policy().Verify(create); err != nil {
		t.Fatal(err)
	}
	if err := w.book.AddRecord(create); err != nil {
		t.Fatal(err)
	}
	f := w.book.Fork(core)
	if err := f.AddRecord(grant); err != nil {
		t.Fatal(err)
	}
	for _, r := range []SignedRecord{create, grant} {
		if err := f.Policy().Verify(r); err != nil {
			t.Fatal(err)
		}
		if err := w.book.AddRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if cache.Verified() != 2 {
		t.Fatalf("%d ed25519 verifications for 2 records met 6 times, want 2", cache.Verified())
	}

	flipped := cloneRecord(grant)
	flipped.Sig[3] ^= 1
	body := cloneRecord(grant)
	body.Perms = AllPermissions() // the signature no longer covers it
	mallory := cloneRecord(grant)
	mallory.SignerKey = slices.Clone(w.ids["mallory"].Public)
	unsigned := cloneRecord(grant)
	unsigned.Sig = nil
	malformed := cloneRecord(grant)
	malformed.Perms = []Permission{Write, Read} // not sorted: refused before any signature check
	for name, r := range map[string]SignedRecord{"flipped signature": flipped, "changed body": body, "another signer key": mallory, "unsigned": unsigned} {
		paths := map[string]func() error{
			"SigCache":         func() error { return cache.VerifySignature(r) },
			"Book.AddRecord":   func() error { return w.book.AddRecord(r) },
			"fork's AddRecord": func() error { return w.book.Fork(core).AddRecord(r) },
			"Policy.Verify":    func() error { return w.book.Policy().Verify(r) },
		}
		for path, f := range paths {
			if err := f(); !errors.Is(err, ErrBadSignature) {
				t.Errorf("%s through %s: %v, want ErrBadSignature", name, path, err)
			}
		}
	}
	if err := cache.VerifySignature(malformed); !errors.Is(err, ErrInvalid) {
		t.Errorf("malformed: %v, want ErrInvalid", err)
	}
	if n := len(w.book.Records(core)); n != 2 {
		t.Fatalf("book holds %d records of core, want 2", n)
	}
	if w.book.Policy().Allowed(agent("bob"), core, Write) {
		t.Fatal("a tampered grant counts")
	}
}

// A full cache starts afresh: it keeps verifying right, and a nil cache
// verifies every time.
func TestSigCacheBounded(t *testing.T) {
	w := newWorld(t, "alice")
	cache := NewSigCache(3)
	var recs []SignedRecord
	for i := range 10 {
		recs = append(recs, w.must(NewCreate(w.ids["alice"], agent("alice"), namespace.MustParse("team://t"+string(rune('a'+i))), w.next())))
	}
	for range 2 {
		for _, r := range recs {
			if err := cache.VerifySignature(r); err != nil {
				t.Fatal(err)
			}
			bad := cloneRecord(r)
			bad.Sig[0] ^= 1
			if err := cache.VerifySignature(bad); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("bad signature: %v", err)
			}
		}
	}
	if len(cache.seen) > 3 {
		t.Fatalf("cache holds %d entries, capacity 3", len(cache.seen))
	}
	var none *SigCache
	if err := none.VerifySignature(recs[0]); err != nil {
		t.Fatal(err)
	}
	bad := cloneRecord(recs[0])
	bad.Sig[0] ^= 1
	if err := none.VerifySignature(bad); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("nil cache, bad signature: %v", err)
	}
}

// Books sharing a SigCache (the simulator's nodes) hold one copy of a
// record each adds from its own decoding, and still decide alike; a Book
// never keeps the slices of the record it was handed, with a cache or
// without.
func TestSigCacheKeepsOneCopyForItsBooks(t *testing.T) {
	w := newWorld(t, "alice", "bob")
	core := namespace.MustParse("team://core")
	create := w.must(NewCreate(w.ids["alice"], agent("alice"), core, w.next()))
	grant := w.must(NewGrant(w.ids["alice"], agent("alice"), core, agent("bob"), []Permission{Read}, nil, w.next()))
	cache := NewSigCache(0)
	var books []*Book
	for i := range 3 {
		b := NewBook(w.book.keyOf)
		if i < 2 {
			b.SetSigCache(cache)
		}
		for _, r := range []SignedRecord{create, grant} {
			if _, err := b.Add(r.Encode()); err != nil { // a decoding of its own, as a node's
				t.Fatal(err)
			}
		}
		books = append(books, b)
	}
	id := grant.ID()
	shared, other, own := books[0].recs[core][id], books[1].recs[core][id], books[2].recs[core][id]
	if shared != other {
		t.Fatal("two books on one cache hold two copies of a record")
	}
	if own == shared {
		t.Fatal("a book without the cache holds the cache's copy")
	}
	for _, b := range books {
		if !b.Policy().Allowed(agent("bob"), core, Read) {
			t.Fatal("a book does not count the grant it holds")
		}
	}
	for _, b := range []*Book{NewBook(w.book.keyOf), books[0]} {
		r := cloneRecord(grant)
		if err := b.AddRecord(r); err != nil {
			t.Fatal(err)
		}
		if &b.recs[core][id].Sig[0] == &r.Sig[0] {
			t.Fatal("a book keeps the slices of the record it was handed")
		}
	}
}
