package search

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// scratch is per-query working memory sized to the slot count and reused
// through Index.scratch, so a query allocates nothing proportional to the
// corpus. A slot's acc is meaningful only when stamp[slot] == gen; a
// negative acc marks a slot rejected by the filter.
type scratch struct {
	gen     uint32
	stamp   []uint32
	acc     []float64
	touched []uint32
	heap    []Hit
	hslot   []uint32
	// searchPruned's working memory.
	cursors []termCursor
	bounds  []float64
	near    []float64
	contrib []float64
}

// scratchPool keeps up to scratchKept scratches between queries. Not a
// sync.Pool: a collection empties that (its victim cache the next one),
// and under the node's soft memory limit a 100k index is collected every
// few hundred searches, so a search every so often made its scratch
// again — 1.5 MB at 125k slots, zeroed while the search waited, and
// garbage that brought the next collection closer. Searches beyond
// scratchKept at once make their own, dropped after. Zero value ready.
type scratchPool struct {
	mu   sync.Mutex
	free []*scratch
}

const scratchKept = 2

func (p *scratchPool) get() *scratch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		sc := p.free[n-1]
		p.free = p.free[:n-1]
		return sc
	}
	return &scratch{}
}

func (p *scratchPool) put(sc *scratch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < scratchKept {
		p.free = append(p.free, sc)
	}
}

func (ix *Index) getScratch() *scratch {
	sc := ix.scratch.get()
	if n := len(ix.slots); len(sc.stamp) < n {
		n += n / 4
		sc.stamp = make([]uint32, n)
		sc.acc = make([]float64, n)
		sc.gen = 0
	}
	sc.gen++
	if sc.gen == 0 {
		clear(sc.stamp)
		sc.gen = 1
	}
	sc.touched = sc.touched[:0]
	return sc
}

// Search returns the top limit hits for query by BM25 score among the
// documents matching f, and how many documents match in total. Query
// terms are OR'ed; repeated terms count once. The best matches lend a
// share of their score to matches saved next to them in the same session
// (context.go). Ties are broken by newer CreatedAt, then smaller ID.
// limit <= 0 returns all matches.
//
// The total is exact up to ExactTotal matches. Past that it may be a
// lower bound (at least ExactTotal and the hits returned): with limit > 0
// Search skips documents that can no longer rank among the hits
// (searchPruned) and does not count them.
func (ix *Index) Search(query string, f Filter, limit int) (hits []Hit, total int) {
	return ix.SearchExpanded(query, nil, f, limit)
}

// SearchExpanded is Search with the query's ranking refined by expansion
// terms (Expand): the documents matching f and a term of query are the
// ones returned and counted, as by Search; with expansion terms, each
// query term weighs feedbackQueryWeight/(number of query terms) and each
// expansion term its Weight, added to the score of the documents that
// contain it among those; expansion terms held by more than feedbackMaxDF
// of all documents are skipped. Without expansion terms it is Search
// exactly.
func (ix *Index) SearchExpanded(query string, expansion []Term, f Filter, limit int) (hits []Hit, total int) {
	terms := slices.Compact(slices.Sorted(slices.Values(Tokenize(query))))
	if len(terms) == 0 {
		return nil, 0
	}
	queryWeight := 1.0
	if len(expansion) > 0 {
		queryWeight = feedbackQueryWeight / float64(len(terms))
	}
	// Terms are summed in lexical order, which fixes the floating-point
	// summation order independently of how the query was phrased.
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.live == 0 {
		return nil, 0
	}
	m, ok := ix.compile(&f)
	if !ok {
		return nil, 0
	}
	sc := ix.getScratch()
	defer ix.scratch.put(sc)
	if len(expansion) == 0 && limit > 0 {
		// The session context may lift a neighbour the pruned search did
		// not score: ownScores scores the neighbours it asks about.
		hits, total := ix.searchPruned(sc, &m, terms, max(limit, contextSources))
		return ix.withSessionContext(sc, hits, limit, ix.ownScores(&m, terms)), total
	}
	for _, term := range terms {
		ix.accumulate(sc, &m, term, queryWeight, true)
	}
	for _, e := range expansion {
		// An expansion term in more than feedbackMaxDF of the documents
		// barely tells them apart but costs a long posting list.
		if t, ok := ix.dict[e.Text]; ok && float64(ix.terms[t].n) <= feedbackMaxDF*float64(ix.live) {
			ix.accumulate(sc, &m, e.Text, e.Weight, false)
		}
	}
	total = len(sc.touched)
	if limit <= 0 || limit > total {
		limit = total
	}
	scored := func(s uint32) (float64, bool) { return sc.acc[s], sc.stamp[s] == sc.gen && sc.acc[s] >= 0 }
	return ix.withSessionContext(sc, ix.topK(sc, max(limit, contextSources)), limit, scored), total // context.go
}

// accumulate adds weight times term's BM25 contribution to the score of
// every live document holding it that m accepts. Only with admit does it
// add documents not yet scored; otherwise it refines those already there.
func (ix *Index) accumulate(sc *scratch, m *matcher, term string, weight float64, admit bool) {
	t, ok := ix.dict[term]
	if !ok {
		return
	}
	gen, stamp, acc := sc.gen, sc.stamp, sc.acc
	n := float64(ix.live)
	avgdl := float64(ix.totalLen) / n
	dls, dead := ix.dls, ix.dead
	p := &ix.terms[t]
	df := ix.liveDF(p)
	if df == 0 {
		return
	}
	idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
	for it := (postingIter{buf: p.buf}); it.next(); {
		s := it.slot
		if dead[s/64]&(1<<(s%64)) != 0 {
			continue
		}
		if stamp[s] != gen {
			if !admit {
				continue
			}
			stamp[s] = gen
			if !ix.matches(m, s) {
				acc[s] = -1
				continue
			}
			acc[s] = 0
			sc.touched = append(sc.touched, s)
		} else if acc[s] < 0 {
			continue
		}
		acc[s] += weight * bm25(idf, float64(it.tf2)/2, float64(dls[s]), avgdl)
	}
}

// bm25 is one term's contribution: idf·tf·(k1+1) / (tf + k1·(1−b+b·dl/avgdl)).
func bm25(idf, tf, dl, avgdl float64) float64 {
	return idf * tf * (k1 + 1) / (tf + lengthNorm(dl, avgdl))
}

// lengthNorm is bm25's length part, k1·(1−b+b·dl/avgdl).
func lengthNorm(dl, avgdl float64) float64 { return k1 * (1 - b + b*dl/avgdl) }

// better reports whether slot a (score sa) ranks before slot c (score sc).
func (ix *Index) better(sa float64, a uint32, sc float64, c uint32) bool {
	if sa != sc {
		return sa > sc
	}
	x, y := &ix.slots[a], &ix.slots[c]
	if x.created != y.created {
		return x.created > y.created
	}
	return ix.ids.str(x.id) < ix.ids.str(y.id)
}

// topK selects the best k touched slots with a hitHeap of size k.
func (ix *Index) topK(sc *scratch, k int) []Hit {
	if k == 0 {
		return nil
	}
	h := hitHeap{ix: ix, acc: sc.acc, h: sc.hslot[:0]}
	for _, s := range sc.touched {
		h.offer(s, k)
	}
	return h.drain(sc)
}

// hitHeap keeps the best slots by score (acc) and rank (Index.better) in a
// min-heap whose root is the worst kept hit.
type hitHeap struct {
	ix  *Index
	acc []float64
	h   []uint32
}

func (hh *hitHeap) worse(i, j int) bool {
	h := hh.h
	return hh.ix.better(hh.acc[h[j]], h[j], hh.acc[h[i]], h[i])
}

func (hh *hitHeap) down(i int) {
	h := hh.h
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && hh.worse(r, l) {
			l = r
		}
		if !hh.worse(l, i) {
			return
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
}

// offer keeps slot s (scored in acc) if fewer than k are kept or it ranks
// before the worst kept one, which it then replaces; it reports whether s
// was kept.
func (hh *hitHeap) offer(s uint32, k int) bool {
	if len(hh.h) < k {
		hh.h = append(hh.h, s)
		h := hh.h
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !hh.worse(i, p) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		return true
	}
	if hh.ix.better(hh.acc[s], s, hh.acc[hh.h[0]], hh.h[0]) {
		hh.h[0] = s
		hh.down(0)
		return true
	}
	return false
}

// worst is the kept slot that ranks last (the heap must not be empty).
func (hh *hitHeap) worst() uint32 { return hh.h[0] }

// drain returns the kept hits, best first, and gives the heap's array
// back to sc for the next search.
func (hh *hitHeap) drain(sc *scratch) []Hit {
	out := make([]Hit, len(hh.h))
	for i := len(hh.h) - 1; i >= 0; i-- {
		s := hh.h[0]
		out[i] = Hit{ID: hh.ix.ids.out(hh.ix.slots[s].id), Score: hh.acc[s]}
		hh.h[0] = hh.h[len(hh.h)-1]
		hh.h = hh.h[:len(hh.h)-1]
		hh.down(0)
	}
	sc.hslot = hh.h[:0]
	return out
}

// span returns the range of order whose CreatedAt lies in [since, until].
func (ix *Index) span(since, until int64) (lo, hi int) {
	lo, hi = 0, len(ix.order)
	if since != 0 {
		lo, _ = slices.BinarySearchFunc(ix.order, since, func(s uint32, t int64) int {
			return cmp.Compare(ix.slots[s].created, t)
		})
	}
	if until != 0 {
		hi, _ = slices.BinarySearchFunc(ix.order, until+1, func(s uint32, t int64) int {
			return cmp.Compare(ix.slots[s].created, t)
		})
		if until == math.MaxInt64 {
			hi = len(ix.order)
		}
	}
	return lo, max(lo, hi)
}

// List returns the catalog entries matching f ordered by (CreatedAt, ID),
// ascending or, with newestFirst, descending. limit <= 0 means no limit.
func (ix *Index) List(f Filter, newestFirst bool, limit int) []Meta {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m, ok := ix.compile(&f)
	if !ok {
		return nil
	}
	lo, hi := ix.span(f.Since, f.Until)
	var out []Meta
	visit := func(i int) bool {
		s := ix.order[i]
		if m.match(&ix.slots[s]) {
			out = append(out, ix.meta(s))
		}
		return limit <= 0 || len(out) < limit
	}
	if newestFirst {
		for i := hi - 1; i >= lo && visit(i); i-- {
		}
	} else {
		for i := lo; i < hi && visit(i); i++ {
		}
	}
	return out
}

// Around returns the document id as center and, among the documents
// matching f, up to before entries immediately older and after entries
// immediately newer than it, both in ascending (CreatedAt, ID) order. The
// center is returned whether or not it matches f. ok is false if id is
// unknown.
func (ix *Index) Around(id string, f Filter, before, after int) (center Meta, older, newer []Meta, ok bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	c, ok := ix.slotOf(id)
	if !ok {
		return Meta{}, nil, nil, false
	}
	center = ix.meta(c)
	m, matchable := ix.compile(&f)
	if !matchable {
		return center, nil, nil, true
	}
	pos, _ := ix.orderPos(center.CreatedAt, id)
	lo, hi := ix.span(f.Since, f.Until)
	for i := min(pos, hi) - 1; i >= lo && len(older) < before; i-- {
		if s := ix.order[i]; m.match(&ix.slots[s]) {
			older = append(older, ix.meta(s))
		}
	}
	slices.Reverse(older)
	for i := max(pos+1, lo); i < hi && len(newer) < after; i++ {
		if s := ix.order[i]; m.match(&ix.slots[s]) {
			newer = append(newer, ix.meta(s))
		}
	}
	return center, older, newer, true
}

// Count is the number of documents matching f, without building them.
func (ix *Index) Count(f Filter) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m, ok := ix.compile(&f)
	if !ok {
		return 0
	}
	lo, hi := ix.span(f.Since, f.Until)
	n := 0
	for i := lo; i < hi; i++ {
		if m.match(&ix.slots[ix.order[i]]) {
			n++
		}
	}
	return n
}
