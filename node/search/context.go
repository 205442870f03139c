package search

import (
	"math"
	"slices"
)

// Session context: memories an agent saves in one session (Doc.SessionID)
// are a sequence, and a question often matches the memory that set a
// topic up while the answer is in the next ones ("Which database did we
// pick for billing?" — "Postgres, after the load test."). So the best few
// matches lend a share of their score to their neighbours in the same
// session, which rise if they matched the query too. Documents without a
// session are not affected.
// The parameters were chosen on the LoCoMo dev split (doc.go).
const (
	// contextSources is how many of the best matches lend their score.
	contextSources = 5
	// contextReach is how many session neighbours on each side receive it.
	contextReach = 4
	// contextShare is the share of a source's score its nearest neighbour
	// on each side receives; each further one receives contextDecay times
	// the previous one's.
	contextShare = 0.3
	contextDecay = 0.75
	// contextScan bounds the walk from a source through the creation
	// order, on each side, past documents of other sessions of its
	// namespace: sessions written at the same time interleave, but the
	// walk stays short. Documents of other namespaces are passed without
	// counting, so two nodes holding the same namespace answer alike
	// whatever other namespaces each holds.
	contextScan = 32
)

// withSessionContext returns the best limit hits once the session context
// is added, given top, the best max(limit, contextSources) hits by their
// own score (sc still holding the scores). Each of the first
// contextSources of top lends to its session neighbours, the contextReach
// nearest documents of the same namespace and session on each side in
// (CreatedAt, ID) order, looking at most contextScan documents away; a
// neighbour receives the share only if it matched the query and the
// filter accepted it, as own tells (with its own score, which sc.acc then
// holds). Only top and the neighbours that received a share can rank in
// the best limit afterwards, so nothing else is looked at.
func (ix *Index) withSessionContext(sc *scratch, top []Hit, limit int, own func(slot uint32) (float64, bool)) []Hit {
	type share struct {
		slot uint32
		v    float64
	}
	// near holds every session neighbour found, shares those of them
	// that matched (own).
	var near, shares [contextSources * 2 * contextReach]share
	nn, k := 0, 0
	for _, h := range top[:min(len(top), contextSources)] {
		s, _ := ix.slotOf(h.ID)
		sl := &ix.slots[s]
		if sl.session == 0 {
			continue
		}
		pos, _ := ix.orderPos(sl.created, ix.ids.str(sl.id))
		for _, dir := range [2]int{-1, 1} {
			v, found := contextShare*h.Score, 0
			for i, j := pos+dir, 0; i >= 0 && i < len(ix.order) && j < contextScan && found < contextReach; i += dir {
				o := ix.order[i]
				ol := &ix.slots[o]
				if ol.ns != sl.ns {
					// Not counted: what else a node holds must not change
					// its answers about this namespace.
					continue
				}
				if j++; ol.session != sl.session {
					continue
				}
				found++
				near[nn] = share{o, v}
				nn++
				v *= contextDecay
			}
		}
	}
	// Own scores are asked in ascending slot order, in which ownScores
	// walks each term's list once; shares keep the order found.
	var order [len(near)]uint8
	for i := range nn {
		j := i
		for ; j > 0 && near[order[j-1]].slot > near[i].slot; j-- {
			order[j] = order[j-1]
		}
		order[j] = uint8(i)
	}
	var matched [len(near)]bool
	for _, i := range order[:nn] {
		o := near[i].slot
		if score, ok := own(o); ok {
			sc.acc[o] = score
			matched[i] = true
		}
	}
	for i := range nn {
		if matched[i] {
			shares[k] = near[i]
			k++
		}
	}
	if k == 0 {
		return top[:min(len(top), limit)]
	}
	// Shares are added after all are known: each is a share of a score
	// before the context.
	cand := make([]uint32, 0, len(top)+k)
	for _, h := range top {
		s, _ := ix.slotOf(h.ID)
		cand = append(cand, s)
	}
	for _, sh := range shares[:k] {
		sc.acc[sh.slot] += sh.v
		if !slices.Contains(cand, sh.slot) {
			cand = append(cand, sh.slot)
		}
	}
	slices.SortFunc(cand, func(a, c uint32) int {
		if ix.better(sc.acc[a], a, sc.acc[c], c) {
			return -1
		}
		if ix.better(sc.acc[c], c, sc.acc[a], a) {
			return 1
		}
		return 0
	})
	out := top[:0]
	for _, s := range cand[:min(len(cand), limit)] {
		out = append(out, Hit{ID: ix.ids.out(ix.slots[s].id), Score: sc.acc[s]})
	}
	return out
}

// ownScores tells, for the session context after a pruned search (which
// keeps no score of the matches it skipped), a slot's own score for terms
// and whether it matched one of them and m accepts it. The score is
// summed in lexical term order from zero, as both searches sum it, so it
// is bit-identical to what the exhaustive search would have given it.
func (ix *Index) ownScores(m *matcher, terms []string) func(slot uint32) (float64, bool) {
	n := float64(ix.live)
	avgdl := float64(ix.totalLen) / n
	type queryTerm struct {
		p   *postings
		idf float64
		c   termCursor // where the last question left it
	}
	var qts []queryTerm // built at the first call: most searches ask nothing
	built := false
	return func(s uint32) (float64, bool) {
		if !built {
			built = true
			for _, term := range terms {
				if t, ok := ix.dict[term]; ok {
					p := &ix.terms[t]
					if df := ix.liveDF(p); df > 0 {
						qts = append(qts, queryTerm{p: p, idf: math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))})
					}
				}
			}
		}
		if ix.dead[s/64]&(1<<(s%64)) != 0 {
			return 0, false
		}
		score, matched := 0.0, false
		for i := range qts {
			q := &qts[i]
			c := &q.c
			if c.blocks == nil || c.done || c.it.slot > s {
				// The first question, or one behind the last: from the
				// list's start (the session context asks in ascending
				// order, so the cursor moves forward).
				*c = termCursor{it: postingIter{buf: q.p.buf}, idx: -1, blocks: q.p.blocks, last: q.p.last}
				c.next()
			}
			if !c.done {
				c.seekTo(s)
			}
			if !c.done && c.it.slot == s {
				score += bm25(q.idf, float64(c.it.tf2)/2, float64(ix.dls[s]), avgdl)
				matched = true
			}
		}
		return score, matched && ix.matches(m, s)
	}
}
