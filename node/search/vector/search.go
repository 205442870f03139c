package vector

import (
	"fmt"
	"slices"
)

// scored is a slot and its distance to the query.
type scored struct {
	dist float32
	slot uint32
}

// less orders by distance, then slot, so equal distances never make the
// outcome depend on map or heap order.
func less(da float32, a uint32, db float32, b uint32) bool {
	if da != db {
		return da < db
	}
	return a < b
}

func sortScored(s []scored) {
	slices.SortFunc(s, func(a, b scored) int {
		if less(a.dist, a.slot, b.dist, b.slot) {
			return -1
		}
		if a == b {
			return 0
		}
		return 1
	})
}

// visitScratch is a search's working memory, pooled: a visited stamp per
// slot (valid when equal to gen) and the two heaps.
type visitScratch struct {
	gen   uint32
	stamp []uint32
	cand  minHeap
	res   maxHeap
}

func (ix *Index) getScratch() *visitScratch {
	sc, _ := ix.scratch.Get().(*visitScratch)
	if sc == nil {
		sc = &visitScratch{}
	}
	if n := len(ix.keys); len(sc.stamp) < n {
		sc.stamp = make([]uint32, n+n/4+64)
		sc.gen = 0
	}
	sc.gen++
	if sc.gen == 0 {
		clear(sc.stamp)
		sc.gen = 1
	}
	return sc
}

// searchLayer is the paper's SEARCH-LAYER: a best-first walk of layer l
// from ep that keeps the ef nearest accepted nodes seen, and stops when
// the nearest unexpanded candidate is farther than the farthest kept.
// Tombstones and nodes accept refuses are walked through but never kept;
// accept nil keeps every live node. The result is sorted nearest first;
// during insertion (accept nil, tombstones possible) it is never empty,
// since ep itself is kept when nothing else is.
func (ix *Index) searchLayer(sc *visitScratch, q []float32, ep uint32, epDist float32, ef, l int, accept func(string) bool) []scored {
	keep := func(s uint32) bool {
		return !ix.isDead(s) && (accept == nil || accept(ix.keys[s]))
	}
	sc.gen++
	if sc.gen == 0 {
		clear(sc.stamp)
		sc.gen = 1
	}
	gen := sc.gen
	sc.cand = sc.cand[:0]
	sc.res = sc.res[:0]
	sc.stamp[ep] = gen
	sc.cand.push(scored{epDist, ep})
	if keep(ep) {
		sc.res.push(scored{epDist, ep})
	}
	for len(sc.cand) > 0 {
		c := sc.cand.pop()
		if len(sc.res) >= ef && !less(c.dist, c.slot, sc.res[0].dist, sc.res[0].slot) {
			break
		}
		for _, n := range ix.links(c.slot, l) {
			if sc.stamp[n] == gen {
				continue
			}
			sc.stamp[n] = gen
			d := ix.dist(q, n)
			if len(sc.res) < ef || less(d, n, sc.res[0].dist, sc.res[0].slot) {
				sc.cand.push(scored{d, n})
				if keep(n) {
					sc.res.push(scored{d, n})
					if len(sc.res) > ef {
						sc.res.pop()
					}
				}
			}
		}
	}
	out := make([]scored, len(sc.res))
	copy(out, sc.res)
	sortScored(out)
	if len(out) == 0 && accept == nil {
		out = append(out, scored{epDist, ep})
	}
	return out
}

// Search returns up to k live keys nearest to q by cosine similarity,
// best first (ties: earlier insertion first), among those accept lets
// through (nil: all). q need not be normalised. With fewer live vectors
// than Config.ExactBelow the answer is exact; otherwise approximate,
// searching layer 0 max(k, EfSearch) broad. accept is called under the
// index's read lock, at most once per node visited: it must not call the
// index. An error wraps ErrInvalid (q's dimension, a zero or non-finite
// q, k outside 1..4096).
//
// A selective accept makes the walk longer, not the answer worse: the walk
// goes on until it holds ef accepted nodes or runs out of graph.
func (ix *Index) Search(q []float32, k int, accept func(key string) bool) ([]Result, error) {
	if k < 1 || k > maxSearchK {
		return nil, fmt.Errorf("%w: k must be 1..%d, got %d", ErrInvalid, maxSearchK, k)
	}
	u, err := ix.normalise(q)
	if err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(ix.slot) == 0 {
		return nil, nil
	}
	var found []scored
	if len(ix.slot) < ix.cfg.ExactBelow {
		found = ix.scan(u, k, accept)
	} else {
		sc := ix.getScratch()
		ep := ix.entry
		d := ix.dist(u, ep)
		for l := int(ix.level[ep]); l > 0; l-- {
			ep, d = ix.greedy(u, ep, d, l)
		}
		found = ix.searchLayer(sc, u, ep, d, max(k, ix.cfg.EfSearch), 0, accept)
		ix.scratch.Put(sc)
		found = slices.DeleteFunc(found, func(s scored) bool { return ix.isDead(s.slot) })
	}
	found = found[:min(k, len(found))]
	out := make([]Result, len(found))
	for i, f := range found {
		out[i] = Result{Key: ix.keys[f.slot], Score: 1 - f.dist}
	}
	return out, nil
}

// scan is the exact answer: every live accepted vector compared.
func (ix *Index) scan(u []float32, k int, accept func(string) bool) []scored {
	var h maxHeap
	for s := range uint32(len(ix.keys)) {
		if ix.isDead(s) || accept != nil && !accept(ix.keys[s]) {
			continue
		}
		d := ix.dist(u, s)
		if len(h) < k {
			h.push(scored{d, s})
		} else if less(d, s, h[0].dist, h[0].slot) {
			h.pop()
			h.push(scored{d, s})
		}
	}
	out := []scored(h)
	sortScored(out)
	return out
}

// minHeap pops the nearest; maxHeap the farthest (its root is the worst
// kept). Written out rather than through container/heap, whose interface
// calls cost more than the distance computations at small dimensions.
type minHeap []scored
type maxHeap []scored

func (h *minHeap) push(x scored) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(a[i].dist, a[i].slot, a[p].dist, a[p].slot) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *minHeap) pop() scored {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && less(a[l].dist, a[l].slot, a[m].dist, a[m].slot) {
			m = l
		}
		if r < n && less(a[r].dist, a[r].slot, a[m].dist, a[m].slot) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func (h *maxHeap) push(x scored) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(a[p].dist, a[p].slot, a[i].dist, a[i].slot) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *maxHeap) pop() scored {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && less(a[m].dist, a[m].slot, a[l].dist, a[l].slot) {
			m = l
		}
		if r < n && less(a[m].dist, a[m].slot, a[r].dist, a[r].slot) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
