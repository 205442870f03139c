package search

import (
	"testing"
)

// TestPrunedMatchesExhaustive checks the pruned search against the
// exhaustive one (limit 0 scores and sorts every match) on a corpus large
// enough for long posting lists and their skips, with pruning allowed from
// the first term and at the default bound, after deletes and replacements
// too (dead postings, live document frequencies): the same hits with
// bit-identical scores, and a total between the hits and the matches,
// exact up to exactTotal.
func TestPrunedMatchesExhaustive(t *testing.T) {
	ix, c := buildIndex(6000, 11)
	check := func(stage string) {
		t.Helper()
		for _, bound := range []int{0, 200, ExactTotal} {
			ix.exactTotal = bound
			for q := range 150 {
				query := c.query()
				if q%5 == 0 {
					query += " " + c.query() // longer questions too
				}
				f := Filter{}
				switch q % 4 {
				case 1:
					f.Namespaces = []string{corpusNS[q%len(corpusNS)]}
				case 2:
					f.Types = []string{"decision"}
				case 3:
					f.Accept = func(id string) bool { return id[len(id)-1]%3 != 0 }
				}
				all, want := ix.Search(query, f, 0)
				for _, limit := range []int{1, 10, 100} {
					got, total := ix.Search(query, f, limit)
					exp := all[:min(limit, len(all))]
					if len(got) != len(exp) {
						t.Fatalf("%s, bound %d: %q limit %d: %d hits, want %d", stage, bound, query, limit, len(got), len(exp))
					}
					for i := range got {
						if got[i] != exp[i] {
							t.Fatalf("%s, bound %d: %q limit %d: hit %d is %v, want %v", stage, bound, query, limit, i, got[i], exp[i])
						}
					}
					if total < len(got) || total > want || (want <= bound && total != want) || (want > bound && total < bound) {
						t.Fatalf("%s, bound %d: %q limit %d: total %d, want %d (hits %d)", stage, bound, query, limit, total, want, len(got))
					}
				}
			}
		}
	}
	check("fresh")
	for i := range 1500 {
		d := c.next()
		ix.Put(d)
		if i%3 == 0 {
			ix.Delete(d.ID)
		}
	}
	if ix.Stats().DeadSlots == 0 {
		t.Fatal("no dead slots: the second pass would test nothing new")
	}
	check("after deletes")
}

// TestPostingSeek checks seek against a linear scan over lists long enough
// to have skips.
func TestPostingSeek(t *testing.T) {
	var p postings
	var slots []uint32
	for s := uint32(3); len(slots) < 1000; s += 1 + s%7 {
		p.add(s, tfOne+uint32(len(slots)%3))
		slots = append(slots, s)
	}
	if len(p.skips) != (1000-1)/skipEvery {
		t.Fatalf("%d skips for 1000 postings, want %d", len(p.skips), (1000-1)/skipEvery)
	}
	for _, step := range []uint32{1, 5, 63, 64, 200, 5000} {
		it := postingIter{buf: p.buf}
		blk, at := 0, false
		next := 0 // index in slots of the first posting >= target
		for target := uint32(0); target < slots[len(slots)-1]+10; target += step {
			for next < len(slots) && slots[next] < target {
				next++
			}
			if !at || it.slot < target {
				at = it.seek(p.skips, &blk, target)
			}
			if next == len(slots) {
				if at {
					t.Fatalf("step %d: seek(%d) found %d past the end", step, target, it.slot)
				}
				break
			}
			if !at || it.slot != slots[next] {
				t.Fatalf("step %d: seek(%d) at %v slot %d, want %d", step, target, at, it.slot, slots[next])
			}
		}
	}
}
