package memory

import (
	"context"
	"slices"

	"github.com/mnemohq/mnemo/node/search"
)

// minFusionDepth is how many candidates each ranking contributes to a
// fused search at least (more when the query asks for more).
const minFusionDepth = 50

// hybridSearch ranks with the lexical index and the first Ranker and fuses
// the two by reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR
// 2009): score(d) = Σ 1/(k + rank(d)), rank from 1 in each list that holds
// d. RRF needs no score calibration between BM25 and cosine, which have
// nothing in common but their order. Ties keep the better lexical rank,
// then the better second rank. ok is false when there is no Ranker or it
// had nothing to add; the caller then keeps its lexical answer.
func (s *Service) hybridSearch(ctx context.Context, query string, sf search.Filter, limit int) (hits []search.Hit, total int, ok bool) {
	if len(s.feat.rankers) == 0 {
		return nil, 0, false
	}
	r := s.feat.rankers[0]
	depth := max(limit, minFusionDepth)
	other := r.Rank(ctx, query, sf, depth)
	if len(other) == 0 {
		return nil, 0, false
	}
	lex, total := s.ix.Search(query, sf, depth)
	return fuse(lex, other, r.FusionK(), limit), max(total, len(lex)+len(other)-overlap(lex, other)), true
}

// fuse is reciprocal rank fusion of a lexical ranking and another (ids,
// best first), cut to limit. Scores are the fused ones.
func fuse(lex []search.Hit, other []string, k, limit int) []search.Hit {
	type entry struct {
		id         string
		score      float64
		lexR, othR int // 1-based; 0: absent
	}
	byID := map[string]*entry{}
	var all []*entry
	get := func(id string) *entry {
		e := byID[id]
		if e == nil {
			e = &entry{id: id}
			byID[id] = e
			all = append(all, e)
		}
		return e
	}
	for i, h := range lex {
		e := get(h.ID)
		e.lexR = i + 1
		e.score += 1 / float64(k+i+1)
	}
	for i, id := range other {
		e := get(id)
		if e.othR != 0 {
			continue // a repeated id counts once
		}
		e.othR = i + 1
		e.score += 1 / float64(k+i+1)
	}
	rankOrLast := func(r int) int {
		if r == 0 {
			return int(^uint(0) >> 1)
		}
		return r
	}
	slices.SortStableFunc(all, func(a, b *entry) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case a.lexR != b.lexR:
			return rankOrLast(a.lexR) - rankOrLast(b.lexR)
		}
		return rankOrLast(a.othR) - rankOrLast(b.othR)
	})
	out := make([]search.Hit, 0, min(limit, len(all)))
	for _, e := range all[:min(limit, len(all))] {
		out = append(out, search.Hit{ID: e.id, Score: e.score})
	}
	return out
}

func overlap(lex []search.Hit, other []string) int {
	in := make(map[string]bool, len(lex))
	for _, h := range lex {
		in[h.ID] = true
	}
	n := 0
	for _, id := range other {
		if in[id] {
			n++
			delete(in, id) // a repeated id counts once
		}
	}
	return n
}
