package store

import (
	"strconv"
	"testing"
)

// WrittenAfter tells a writer whether its Change is still the record as
// committed: only a later write of the same entry makes it stale, and once
// the writes after a Change are too many to remember it says it does not
// know rather than guess.
func TestWrittenAfter(t *testing.T) {
	s, err := Open(NewMemKV(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a1 := edit(t, s, "team://a", "m1", 1, "ti", "one")[0]
	if later, known := s.WrittenAfter("team://a", "m1", a1.Seq); later || !known {
		t.Fatalf("the last write of m1: written after %v, known %v", later, known)
	}
	b := edit(t, s, "team://a", "m2", 2, "ti", "two")[0]
	if later, known := s.WrittenAfter("team://a", "m1", a1.Seq); later || !known {
		t.Fatalf("m1 after a write of m2: written after %v, known %v", later, known)
	}
	if later, known := s.WrittenAfter("team://b", "m2", a1.Seq); later || !known {
		t.Fatalf("m2 of another namespace: written after %v, known %v", later, known)
	}
	a2 := edit(t, s, "team://a", "m1", 3, "ti", "one again")[0]
	if later, known := s.WrittenAfter("team://a", "m1", a1.Seq); !later || !known {
		t.Fatalf("m1 written again: written after %v, known %v", later, known)
	}
	if later, known := s.WrittenAfter("team://a", "m1", a2.Seq); later || !known {
		t.Fatalf("m1's last write: written after %v, known %v", later, known)
	}
	if later, _ := s.WrittenAfter("team://a", "m2", b.Seq); later {
		t.Fatal("m2 was not written again")
	}
	for i := range recentMax {
		edit(t, s, "team://a", "x"+strconv.Itoa(i), 4+i, "ti", "filler")
	}
	if _, known := s.WrittenAfter("team://a", "m2", b.Seq); known {
		t.Fatal("still sure about m2 after more writes than the store remembers")
	}
	last := edit(t, s, "team://a", "m2", 5+recentMax, "ti", "two again")[0]
	if later, known := s.WrittenAfter("team://a", "m2", last.Seq); later || !known {
		t.Fatalf("m2's last write: written after %v, known %v", later, known)
	}
}

// Entries are remembered by a hash: two whose hashes collide may be told
// written when only the other was (the caller reads the entry back), never
// told unwritten when they were.
func TestWrittenAfterCollisions(t *testing.T) {
	s, err := Open(NewMemKV(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.recent.hash = func(ns, id string) uint64 { return 7 } // every entry collides
	a1 := edit(t, s, "team://a", "m1", 1, "ti", "one")[0]
	b1 := edit(t, s, "team://a", "m2", 2, "ti", "two")[0]
	if later, known := s.WrittenAfter("team://a", "m1", a1.Seq); !later || !known {
		t.Fatalf("m1 colliding with m2 written after it: written after %v, known %v; want a write (read it back)", later, known)
	}
	if later, known := s.WrittenAfter("team://a", "m2", b1.Seq); later || !known {
		t.Fatalf("the last write: written after %v, known %v", later, known)
	}
	edit(t, s, "team://a", "m1", 3, "ti", "one again")
	for i := range recentMax - 1 {
		edit(t, s, "team://a", "x"+strconv.Itoa(i), 4+i, "ti", "filler")
	}
	// m1's second write is forgotten when the fillers push it out; until then,
	// and however the fillers collide, m1 is never told unwritten after a1.
	if later, known := s.WrittenAfter("team://a", "m1", a1.Seq); known && !later {
		t.Fatal("m1 told unwritten after its first write, written again since")
	}
}
