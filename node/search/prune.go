package search

import (
	"math"
	"slices"
)

// ExactTotal is how many matches Search always counts: below it the total
// is exact; past it Search may stop admitting documents that can no longer
// rank among the requested hits, and the total is then a lower bound
// (never below ExactTotal).
const ExactTotal = 1000

// pruneMargin widens every bound comparison of searchPruned, so rounding
// in sums taken in another order never prunes a document that could tie
// the last hit kept.
const pruneMargin = 1e-9

// termCursor walks one query term's postings for searchPruned.
type termCursor struct {
	it     postingIter // at a posting (it.slot) unless done
	idx    int         // index of that posting in the list
	blocks []block
	maxTF  uint32 // the list's largest frequency (postings.maxTF)
	minDL  uint32 // the list's shortest document (postings.minDL)
	skipTF uint32 // while pruning: rareTF at the current theta
	last   uint32 // slot of the list's last posting
	done   bool
	lex    int // position among the query's distinct terms in lexical order
	idf    float64
	ub     float64 // at least the term's contribution to any document's score

	ubBlock int     // the block ubOf was computed for, or -1
	ubValue float64 // that bound
	sb      int     // the block shallowTo moved to
}

func (c *termCursor) next() {
	if !c.it.next() {
		c.done = true
	}
	c.idx++
}

// seekTo moves to the first posting at or after slot s, jumping over the
// blocks before it.
func (c *termCursor) seekTo(s uint32) {
	if c.done || c.it.slot >= s {
		return
	}
	k := c.idx / blockLen
	j := c.firstBlockFrom(k+1, s)
	// Every posting of block j-1 on is at a slot above its base, every
	// one before it at or below: the target, if present, is there.
	if j-1 > k {
		bl := &c.blocks[j-1]
		c.it.i, c.it.slot, c.idx = int(bl.off), bl.base, (j-1)*blockLen-1
	}
	c.scanTo(s)
}

// scanTo moves past the current posting to the first at or after slot s,
// decoding each on the way: c.next in a loop, with the iterator in locals
// and the postings of one-byte deltas (one byte for one content
// occurrence, two with a frequency byte under 128) decoded inline. A search of
// common words decodes most of their lists here and in skipRare;
// postingIter.next is too large to inline, and a call per posting with the
// cursor in memory cost ~10% of such a search (BenchmarkSearch100kAsBench).
//
// scanTo and skipRare are the same loop but for the stop: one loop taking
// both stops (slot ≥ s and tf2 ≥ skipTF) cost the index's p95 2% (488 →
// 498 µs in 4 of 4 alternations of BenchmarkSearch100kAsBench), so the
// two stay apart; a change to the inline decoding goes into both.
func (c *termCursor) scanTo(s uint32) {
	buf, i, slot, tf2, idx := c.it.buf, c.it.i, c.it.slot, c.it.tf2, c.idx
	for {
		idx++
		if i >= len(buf) {
			c.done = true
			break
		}
		if b := buf[i]; b < 0x80 && b&1 == 1 {
			i, slot, tf2 = i+1, slot+uint32(b>>1), tfOne
		} else if b < 0x80 && i+1 < len(buf) && buf[i+1] < 0x80 {
			i, slot, tf2 = i+2, slot+uint32(b>>1), uint32(buf[i+1])
		} else {
			i, slot, tf2 = decodeAt(buf, i, slot)
		}
		if slot >= s {
			break
		}
	}
	c.it.i, c.it.slot, c.it.tf2, c.idx = i, slot, tf2, idx
}

// skipRare passes the postings under skipTF (rareTF), as c.next in a loop
// would, with the iterator in locals (see scanTo).
func (c *termCursor) skipRare() {
	if c.done || c.it.tf2 >= c.skipTF {
		return
	}
	buf, i, slot, tf2, idx, skip := c.it.buf, c.it.i, c.it.slot, c.it.tf2, c.idx, c.skipTF
	for {
		idx++
		if i >= len(buf) {
			c.done = true
			break
		}
		if b := buf[i]; b < 0x80 && b&1 == 1 {
			i, slot, tf2 = i+1, slot+uint32(b>>1), tfOne
		} else if b < 0x80 && i+1 < len(buf) && buf[i+1] < 0x80 {
			i, slot, tf2 = i+2, slot+uint32(b>>1), uint32(buf[i+1])
		} else {
			i, slot, tf2 = decodeAt(buf, i, slot)
		}
		if tf2 >= skip {
			break
		}
	}
	c.it.i, c.it.slot, c.it.tf2, c.idx = i, slot, tf2, idx
}

// firstBlockFrom returns the first block at or after j whose base is not
// below s (len(c.blocks) if none), galloping then halving: a step to the
// next block costs one comparison, as the walk it replaced did, and a
// seek across the list (the session context seeks each neighbour from the
// list's start) log2 of the blocks instead of all of them — a walk over
// the blocks of the query's common terms was a tenth of a search's CPU.
func (c *termCursor) firstBlockFrom(j int, s uint32) int {
	n := len(c.blocks)
	if j >= n || c.blocks[j].base >= s {
		return j
	}
	// c.blocks[lo].base < s; find hi with c.blocks[hi].base >= s or hi = n.
	lo, step := j, 1
	hi := lo + step
	for hi < n && c.blocks[hi].base < s {
		lo, step = hi, step*2
		hi = lo + step
	}
	hi = min(hi, n)
	for lo+1 < hi { // c.blocks[lo].base < s, and hi is n or not below s
		mid := int(uint(lo+hi) >> 1)
		if c.blocks[mid].base < s {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// blockEnd is the slot of the last posting in the current block.
func (c *termCursor) blockEnd() uint32 { return c.endOf(c.idx / blockLen) }

// endOf is the slot of the last posting of block k.
func (c *termCursor) endOf(k int) uint32 {
	if k+1 < len(c.blocks) {
		return c.blocks[k+1].base
	}
	return c.last
}

// blockUB bounds the term's contribution to the documents of the current
// block.
func (c *termCursor) blockUB(avgdl float64) float64 { return c.ubOf(c.idx/blockLen, avgdl) }

// ubOf bounds the term's contribution to the documents of block k: the
// best score of the block's frontier.
func (c *termCursor) ubOf(k int, avgdl float64) float64 {
	if k != c.ubBlock {
		c.ubBlock, c.ubValue = k, frontierUB(frontOf(&c.blocks[k]), c.idf, c.maxTF, avgdl)
	}
	return c.ubValue
}

// shallowTo moves sb, without decoding, to the block that holds slot s if
// the list has it, or else the first posting after s; false when no
// posting is at or after s. Targets must not decrease.
func (c *termCursor) shallowTo(s uint32) bool {
	if s > c.last {
		return false
	}
	for c.sb+1 < len(c.blocks) && c.blocks[c.sb+1].base < s {
		c.sb++
	}
	return true
}

// rareTF is, for an essential term of a pruned search, the least
// frequency (in half units) a posting needs for its document to reach
// theta when no other essential term holds it and the other terms add at
// most rest: below it, the term's
// contribution, at most what the list's shortest document would get,
// leaves the document under theta. A document such a posting is passed
// for would have been rejected when visited, so the hits are the same.
// The bound is solved for the frequency (bm25 rises with it), narrowed by
// pruneMargin.
func (c *termCursor) rareTF(theta, rest, avgdl float64) uint32 {
	need := (theta/(1+pruneMargin) - rest) / (1 + pruneMargin) * (1 - pruneMargin)
	if need <= 0 {
		return 0
	}
	top := c.idf * (k1 + 1) // bm25's limit as the frequency grows
	if top <= need {
		return math.MaxUint32 // no frequency reaches it
	}
	tf := need * lengthNorm(float64(c.minDL), avgdl) / (top - need) // bm25(tf, minDL) = need
	return uint32(min(math.Ceil(2*tf*(1-pruneMargin)), math.MaxUint32))
}

// frontierUB is the best score of a frontier's points, widened by
// pruneMargin; maxTF stands for a saturated frequency.
func frontierUB(front []frontPoint, idf float64, maxTF uint32, avgdl float64) float64 {
	ub := 0.0
	for _, pt := range front {
		tf2 := uint32(pt.tf2)
		if tf2 == maxFront16 {
			tf2 = maxTF
		}
		ub = max(ub, bm25(idf, float64(tf2)/2, float64(pt.dl), avgdl))
	}
	return ub * (1 + pruneMargin)
}

// searchPruned is Search for limit > 0 without expansion terms: the same
// hits with the same scores, found with less work by MaxScore (Turtle and
// Flood, 1995), document at a time. Terms are ordered by the most they can
// add to a score (ub, from their largest frequency and the shortest
// document). Documents are visited in slot order; until exactTotal
// matches are counted and limit hits held, every document holding a term
// is scored and filtered. From then on the terms whose bounds sum to less
// than the limit-th best score so far are non-essential: a document
// holding only those cannot rank, so only the other terms' lists are
// walked, and the non-essential ones are looked up (through their skips)
// only for documents that may still reach that score; the filter is asked
// only about documents that can rank. A document's score is summed from
// its terms' contributions in lexical term order, as the exhaustive search
// sums them, so scores are bit-identical.
func (ix *Index) searchPruned(sc *scratch, m *matcher, terms []string, limit int) (hits []Hit, total int) {
	n := float64(ix.live)
	avgdl := float64(ix.totalLen) / n
	cur := sc.cursors[:0]
	for i, term := range terms {
		t, ok := ix.dict[term]
		if !ok {
			continue
		}
		p := &ix.terms[t]
		df := ix.liveDF(p)
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		ub := bm25(idf, float64(p.maxTF)/2, float64(p.minDL), avgdl) * (1 + pruneMargin)
		c := termCursor{it: postingIter{buf: p.buf}, idx: -1, blocks: p.blocks, maxTF: p.maxTF, minDL: p.minDL, last: p.last, lex: i, idf: idf, ub: ub, ubBlock: -1}
		c.next()
		cur = append(cur, c)
	}
	sc.cursors = cur
	if len(cur) == 0 {
		return nil, 0
	}
	slices.SortStableFunc(cur, func(a, b termCursor) int {
		switch {
		case a.ub < b.ub:
			return -1
		case a.ub > b.ub:
			return 1
		}
		return 0
	})
	// upto[i] bounds what terms 0..i-1 add together.
	upto := sc.bounds[:0]
	upto = append(upto, 0)
	for i := range cur {
		upto = append(upto, (upto[i]+cur[i].ub)*(1+pruneMargin))
	}
	sc.bounds = upto
	near := append(sc.near[:0], upto...)
	sc.near = near
	contrib := sc.contrib[:0]
	contrib = append(contrib, make([]float64, len(terms))...)
	sc.contrib = contrib

	dls, dead, acc := ix.dls, ix.dead, sc.acc
	h := hitHeap{ix: ix, acc: acc, h: sc.hslot[:0]}
	pruning := false
	theta := 0.0 // the worst kept hit's score once pruning
	e := 0       // cur[e:] are the essential terms
	// While pruning: the window of slots up to winEnd, from the document
	// it was computed at, lies in one block of each term, and its
	// documents score at most winBound.
	win, winEnd, winBound := false, uint32(0), 0.0
	nearSet := false // near holds the window's bounds, not upto's
	// While pruning, a document that only one essential term holds, at a
	// frequency under that term's skipTF, cannot rank whatever its length
	// (rareTF): it is passed without being visited. With one essential
	// term left, its rare postings are passed in a tight loop. skipTF is
	// set wherever pruning is, so pruning is when to skip.
	for {
		if pruning && e == len(cur)-1 {
			cur[e].skipRare()
		}
		d, at := ^uint32(0), 0 // at: the essential term at d, if only one is
		for i := e; i < len(cur); i++ {
			if c := &cur[i]; !c.done && c.it.slot <= d {
				if c.it.slot < d {
					d, at = c.it.slot, i
				} else {
					at = -1
				}
			}
		}
		if d == ^uint32(0) {
			break
		}
		if pruning && at >= 0 && cur[at].it.tf2 < cur[at].skipTF {
			cur[at].next()
			continue
		}
		if pruning {
			if !win || d > winEnd {
				// Up to the end of the first essential block to end, each
				// essential term adds at most its block's bound, the
				// others at most their lists'; the same blocks hold every
				// document up to there, so the window is computed once.
				ess, end := 0.0, ^uint32(0)
				for i := e; i < len(cur); i++ {
					if c := &cur[i]; !c.done {
						ess += c.blockUB(avgdl)
						end = min(end, c.blockEnd())
					}
				}
				win, winEnd, winBound, nearSet = true, end, ess+upto[e], false
				if winBound*(1+pruneMargin) >= theta && e > 0 {
					// Too high: bound the non-essential terms by their
					// blocks holding d or their next posting, ending the
					// window at the first of those to end too. near[i]
					// bounds what non-essential terms 0..i-1 add there:
					// tighter than upto for the lookups below.
					rest := 0.0
					for i := range e {
						if c := &cur[i]; c.shallowTo(d) {
							rest += c.ubOf(c.sb, avgdl)
							end = min(end, c.endOf(c.sb))
						}
						near[i+1] = rest * (1 + pruneMargin)
					}
					winEnd, winBound, nearSet = end, ess+rest, true
				}
			}
			if winBound*(1+pruneMargin) < theta {
				for i := e; i < len(cur); i++ {
					cur[i].seekTo(winEnd + 1)
				}
				continue
			}
		}
		isDead := dead[d/64]&(1<<(d%64)) != 0
		dl := float64(dls[d])
		partial := 0.0
		for i := e; i < len(cur); i++ {
			if c := &cur[i]; !c.done && c.it.slot == d {
				if !isDead {
					v := bm25(c.idf, float64(c.it.tf2)/2, dl, avgdl)
					contrib[c.lex] = v
					partial += v
				}
				// c.next, its commonest posting inline (see scanTo).
				if i := c.it.i; i < len(c.it.buf) && c.it.buf[i]&0x81 == 1 {
					c.it.i, c.it.slot, c.it.tf2 = i+1, c.it.slot+uint32(c.it.buf[i]>>1), tfOne
					c.idx++
				} else {
					c.next()
				}
			}
		}
		if isDead {
			continue
		}
		ok := true
		for i := e - 1; i >= 0; i-- {
			lim := upto[i+1]
			if nearSet {
				lim = near[i+1]
			}
			if (partial+lim)*(1+pruneMargin) < theta {
				ok = false
				break
			}
			c := &cur[i]
			if c.seekTo(d); !c.done && c.it.slot == d {
				v := bm25(c.idf, float64(c.it.tf2)/2, dl, avgdl)
				contrib[c.lex] = v
				partial += v
			}
		}
		ok = ok && partial*(1+pruneMargin) >= theta && ix.matches(m, d)
		score := 0.0
		for i, v := range contrib {
			score += v
			contrib[i] = 0
		}
		if !ok {
			continue
		}
		total++
		acc[d] = score
		if !h.offer(d, limit) && pruning {
			continue
		}
		if !pruning && len(h.h) == limit && total >= ix.exactTotal {
			pruning = true
		}
		if pruning {
			theta = acc[h.worst()]
			for e < len(cur) && upto[e+1] < theta {
				e++
				win = false
			}
			if e == len(cur) {
				break // no document left can rank
			}
			for i := e; i < len(cur); i++ {
				cur[i].skipTF = cur[i].rareTF(theta, upto[e], avgdl)
			}
		}
	}
	return h.drain(sc), total
}

// liveDF is how many live documents p holds. With dead slots it counts
// them once per change of ix.deaths or of the list, not once per search:
// writes are rarer than searches, and a pass over a common term's whole
// list would cost more than the pruned search itself.
func (ix *Index) liveDF(p *postings) int {
	if ix.ndead == 0 {
		return int(p.n)
	}
	if c := p.liveDF.Load(); c != nil && c.deaths == ix.deaths && c.n == p.n {
		return c.df
	}
	df := 0
	for it := (postingIter{buf: p.buf}); it.next(); {
		if ix.dead[it.slot/64]&(1<<(it.slot%64)) == 0 {
			df++
		}
	}
	p.liveDF.Store(&dfCount{deaths: ix.deaths, n: p.n, df: df})
	return df
}
