package search

import "slices"

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
// neighbour receives the share only if it matched (it is in sc.touched and
// the filter accepted it). Only top and the neighbours that received a
// share can rank in the best limit afterwards, so nothing else is looked
// at.
func (ix *Index) withSessionContext(sc *scratch, top []Hit, limit int) []Hit {
	type share struct {
		slot uint32
		v    float64
	}
	var shares [contextSources * 2 * contextReach]share
	k := 0
	for _, h := range top[:min(len(top), contextSources)] {
		sl := &ix.slots[ix.byID[h.ID]]
		if sl.session == 0 {
			continue
		}
		pos, _ := ix.orderPos(sl.created, sl.id)
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
				if sc.stamp[o] == sc.gen && sc.acc[o] >= 0 {
					shares[k] = share{o, v}
					k++
				}
				v *= contextDecay
			}
		}
	}
	if k == 0 {
		return top[:min(len(top), limit)]
	}
	// Shares are added after all are known: each is a share of a score
	// before the context.
	cand := make([]uint32, 0, len(top)+k)
	for _, h := range top {
		cand = append(cand, ix.byID[h.ID])
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
		out = append(out, Hit{ID: ix.slots[s].id, Score: sc.acc[s]})
	}
	return out
}
