package acl

import (
	"errors"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

// A record held already is taken again without verifying it, but only
// when it is the same signed record: another signature over the same body
// is verified, and a bad one refused.
func TestBookTakesHeldRecordsAgainOnlyWhenIdentical(t *testing.T) {
	w := newWorld(t, "alice", "bob")
	ns := namespace.MustParse("team://core")
	create := w.add(w.must(NewCreate(w.ids["alice"], agent("alice"), ns, w.next())))
	if err := w.book.AddRecord(create); err != nil {
		t.Fatalf("the same record again: %v", err)
	}
	forged := create
	forged.Sig = slices.Clone(create.Sig)
	forged.Sig[0] ^= 1
	if err := w.book.AddRecord(forged); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("same body, bad signature: %v, want ErrBadSignature", err)
	}
	if w.book.Len() != 1 {
		t.Fatalf("book holds %d records, want 1", w.book.Len())
	}
}

// A fork carries the records of the roots asked for, and what is added to
// it stays out of the book it came from.
func TestBookFork(t *testing.T) {
	w := newWorld(t, "alice", "bob")
	core, other := namespace.MustParse("team://core"), namespace.MustParse("team://other")
	w.add(w.must(NewCreate(w.ids["alice"], agent("alice"), core, w.next())))
	w.add(w.must(NewCreate(w.ids["alice"], agent("alice"), other, w.next())))
	f := w.book.Fork(core)
	if f.Len() != 1 || len(f.Records(core)) != 1 || len(f.Records(other)) != 0 {
		t.Fatalf("fork holds %d records (%d of core, %d of other), want core's only", f.Len(), len(f.Records(core)), len(f.Records(other)))
	}
	g := w.must(NewGrant(w.ids["alice"], agent("alice"), core, agent("bob"), Member(), nil, w.next()))
	if err := f.AddRecord(g); err != nil {
		t.Fatal(err)
	}
	if !f.Policy().Allowed(agent("bob"), core, Write) {
		t.Fatal("the grant added to the fork does not count in its policy")
	}
	if w.book.Policy().Allowed(agent("bob"), core, Write) || len(w.book.Records(core)) != 1 {
		t.Fatal("adding to the fork changed the book it came from")
	}
}
