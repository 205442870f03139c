package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// checkFrontiers checks every block's frontier against the postings (the
// i-th posting has frequency tfs[i] in a document dls[i] long): each
// posting has a point at least as frequent in a document at most as long,
// so the best point bounds the block at any average length; a frontier
// holds at most blockFront points; and while a block has at most blockFront
// distinct frequencies (no point merged), its best point's score is the
// block's best score.
func checkFrontiers(t *testing.T, p *postings, tfs, dls []uint32) {
	t.Helper()
	dominated := func(pts []frontPoint, i int) bool {
		return slices.ContainsFunc(pts, func(f frontPoint) bool {
			return (f.tf2 == maxFront16 || uint32(f.tf2) >= tfs[i]) && uint32(f.dl) <= dls[i]
		})
	}
	for k := range p.blocks {
		lo, hi := k*blockLen, min((k+1)*blockLen, len(tfs))
		pts := frontOf(&p.blocks[k])
		if len(pts) == 0 || len(pts) > blockFront {
			t.Fatalf("block %d: %d frontier points", k, len(pts))
		}
		for i := lo; i < hi; i++ {
			if !dominated(pts, i) {
				t.Fatalf("block %d: posting %d (tf2 %d, dl %d) above the frontier %v", k, i, tfs[i], dls[i], pts)
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(tfs[lo:hi])))) > blockFront {
			continue
		}
		for _, avgdl := range []float64{10, 60, 300} {
			best, bound := 0.0, 0.0
			for i := lo; i < hi; i++ {
				best = max(best, bm25(1, float64(tfs[i])/2, float64(dls[i]), avgdl))
			}
			for _, f := range pts {
				bound = max(bound, bm25(1, float64(f.tf2)/2, float64(f.dl), avgdl))
			}
			if bound != best {
				t.Fatalf("block %d, avgdl %v: frontier bound %v, best posting %v", k, avgdl, bound, best)
			}
		}
	}
}

// TestFrontierExact checks blocks of two distinct frequencies, which a
// frontier holds without merging: its best point scores as the block's
// best posting does (the last check of checkFrontiers, which the other
// lists, of more frequencies a block, skip).
func TestFrontierExact(t *testing.T) {
	var p postings
	var tfs, dls []uint32
	for s := range uint32(640) {
		tf, dl := tfOne+s%2, 10+(s*37)%300
		p.add(s, tf, dl)
		tfs, dls = append(tfs, tf), append(dls, dl)
	}
	checkFrontiers(t, &p, tfs, dls)
}

// TestFrontierMerges checks the frontiers of blocks with more distinct
// frequencies than a frontier holds, and with frequencies and lengths past
// what a point stores.
func TestFrontierMerges(t *testing.T) {
	var p postings
	var tfs, dls []uint32
	for s := range uint32(1000) {
		tf, dl := tfOne+(s*7)%41, 20+(s*13)%200
		switch s % 97 {
		case 5:
			tf = 1 << 17
		case 6:
			dl = 1 << 17
		}
		p.add(s, tf, dl)
		tfs, dls = append(tfs, tf), append(dls, dl)
	}
	checkFrontiers(t, &p, tfs, dls)
}

// TestCursorSeek checks termCursor.seekTo and the block frontiers against a
// linear scan over a list long enough to have many blocks.
func TestCursorSeek(t *testing.T) {
	var p postings
	var slots, tfs, dls []uint32
	for s := uint32(3); len(slots) < 1000; s += 1 + s%7 {
		tf, dl := tfOne+uint32(len(slots)%3), 10+s%97
		p.add(s, tf, dl)
		slots, tfs, dls = append(slots, s), append(tfs, tf), append(dls, dl)
	}
	if want := (1000 + blockLen - 1) / blockLen; len(p.blocks) != want {
		t.Fatalf("%d blocks for 1000 postings, want %d", len(p.blocks), want)
	}
	checkFrontiers(t, &p, tfs, dls)
	for _, step := range []uint32{1, 5, 63, 64, 200, 5000} {
		c := termCursor{it: postingIter{buf: p.buf}, idx: -1, blocks: p.blocks, last: p.last, ubBlock: -1}
		c.next()
		next := 0 // index in slots of the first posting >= target
		for target := uint32(0); target < slots[len(slots)-1]+10; target += step {
			for next < len(slots) && slots[next] < target {
				next++
			}
			c.seekTo(target)
			if next == len(slots) {
				if !c.done {
					t.Fatalf("step %d: seekTo(%d) found %d past the end", step, target, c.it.slot)
				}
				break
			}
			if c.done || c.it.slot != slots[next] || c.idx != next || c.it.tf2 != tfs[next] {
				t.Fatalf("step %d: seekTo(%d) at done=%v slot %d idx %d, want slot %d idx %d", step, target, c.done, c.it.slot, c.idx, slots[next], next)
			}
			if end := slots[min(len(slots)-1, (next/blockLen+1)*blockLen-1)]; c.blockEnd() != end {
				t.Fatalf("step %d: at posting %d the block ends at %d, want %d", step, next, c.blockEnd(), end)
			}
		}
	}
}

// TestPrunedWindowsMatchExhaustive: on larger corpora, where a window
// spans many blocks of the essential lists, pruning with no exact total
// returns what scoring everything does. A window must end where the
// essential list's current block ends (prune.go, the window cut): without
// that, a window bounded by a later block's better bound let a worse
// document in as the 10th hit (20k documents, seed 3 here).
func TestPrunedWindowsMatchExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("20k-document corpora")
	}
	for seed := uint64(1); seed <= 4; seed++ {
		ix, c := buildIndex(20000, seed)
		ix.exactTotal = 0
		for range 100 {
			query := c.query()
			all, _ := ix.Search(query, Filter{}, 0)
			for _, limit := range []int{1, 10} {
				got, _ := ix.Search(query, Filter{}, limit)
				exp := all[:min(limit, len(all))]
				if !slices.Equal(got, exp) {
					t.Fatalf("seed %d: %q limit %d: %v, want %v", seed, query, limit, got, exp)
				}
			}
		}
	}
}

// firstBlockFrom finds what a walk block by block finds, from every start,
// for targets below, at, between and past the blocks' bases.
func TestFirstBlockFromAgreesWithAWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for n := range 70 {
		c := termCursor{blocks: make([]block, n)}
		base := uint32(0)
		for i := range c.blocks {
			base += 1 + uint32(rng.IntN(40))
			c.blocks[i].base = base
		}
		for j := 0; j <= n; j++ {
			for s := uint32(0); s <= base+2; s++ {
				walk := j
				for walk < n && c.blocks[walk].base < s {
					walk++
				}
				if got := c.firstBlockFrom(j, s); got != walk {
					t.Fatalf("%d blocks %v, from %d to %d: %d, want %d", n, c.blocks, j, s, got, walk)
				}
			}
		}
	}
}

// TestRareTF checks the frequency under which the only essential term's
// postings are passed: every frequency under it leaves a document of the
// list's shortest length under theta (checked as searchPruned rejects),
// and it is tight: one half unit more reaches theta.
func TestRareTF(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for range 20000 {
		c := termCursor{idf: 0.01 + 5*rng.Float64(), minDL: uint32(1 + rng.IntN(1000))}
		avgdl := 10 + 500*rng.Float64()
		rest := c.idf * 2 * rng.Float64()
		theta := rest + c.idf*2.2*rng.Float64()*1.1
		r := c.rareTF(theta, rest, avgdl)
		skipped := func(tf2 uint32) bool {
			return (bm25(c.idf, float64(tf2)/2, float64(c.minDL), avgdl)*(1+pruneMargin)+rest)*(1+pruneMargin) < theta
		}
		for tf2 := uint32(1); tf2 < min(r, 5000); tf2++ {
			if !skipped(tf2) {
				t.Fatalf("idf %v minDL %d avgdl %v rest %v theta %v: rareTF %d, but %d can reach theta", c.idf, c.minDL, avgdl, rest, theta, r, tf2)
			}
		}
		if r >= 1 && r < 5000 && skipped(r+1) {
			t.Fatalf("idf %v minDL %d avgdl %v rest %v theta %v: rareTF %d, but %d cannot reach theta either", c.idf, c.minDL, avgdl, rest, theta, r, r+1)
		}
		if r > 2 && r < 5000 {
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d cases with a threshold to check", checked)
	}
}

// TestScanAgreesWithNext: scanTo and skipRare, which decode with the
// iterator in locals and the one- and two-byte postings inline, leave the
// cursor where a loop of next leaves it — slot, frequency, index, byte
// offset and done — on lists with every encoding: one content occurrence
// (one byte), a frequency byte, deltas and frequencies of several bytes.
func TestScanAgreesWithNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for round := range 300 {
		var p postings
		s := uint32(rng.IntN(3))
		for range 1 + rng.IntN(300) {
			switch rng.IntN(4) {
			case 0:
				s += 1 + uint32(rng.IntN(3))
			case 1:
				s += 1 + uint32(rng.IntN(70))
			case 2:
				s += 1 + uint32(rng.IntN(100_000))
			default:
				s++
			}
			tf := uint32(tfOne)
			switch rng.IntN(4) {
			case 0:
				tf = 1 + uint32(rng.IntN(10))
			case 1:
				tf = 1 + uint32(rng.IntN(400))
			}
			p.add(s, tf, 1+uint32(rng.IntN(200)))
		}
		start := func() termCursor {
			c := termCursor{it: postingIter{buf: p.buf}, idx: -1, blocks: p.blocks, last: p.last, ubBlock: -1}
			c.next()
			return c
		}
		same := func(what string, got, want *termCursor) {
			t.Helper()
			if got.done != want.done || got.idx != want.idx || got.it.i != want.it.i ||
				(!want.done && (got.it.slot != want.it.slot || got.it.tf2 != want.it.tf2)) {
				t.Fatalf("round %d: %s: done %v idx %d at %d slot %d tf %d, want done %v idx %d at %d slot %d tf %d", round, what,
					got.done, got.idx, got.it.i, got.it.slot, got.it.tf2, want.done, want.idx, want.it.i, want.it.slot, want.it.tf2)
			}
		}
		got, want := start(), start()
		for !want.done {
			target := want.it.slot + uint32(rng.IntN(200))
			if rng.IntN(10) == 0 {
				target += uint32(rng.IntN(200_000))
			}
			got.scanTo(target)
			for ok := true; ok; ok = !want.done && want.it.slot < target {
				want.next()
			}
			same(fmt.Sprintf("scanTo(%d)", target), &got, &want)
		}
		got, want = start(), start()
		for !want.done {
			skip := uint32(rng.IntN(12))
			got.skipTF, want.skipTF = skip, skip
			got.skipRare()
			for !want.done && want.it.tf2 < skip {
				want.next()
			}
			same(fmt.Sprintf("skipRare(%d)", skip), &got, &want)
			got.next()
			want.next()
		}
	}
}
