package semantic

import (
	"context"
	"time"

	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/search/vector"
)

// FusionK is the k of reciprocal rank fusion (memory.Ranker).
func (s *Semantic) FusionK() int { return s.cfg.RRFK }

// Rank returns up to limit ids of memories matching f, nearest to the
// query's vector first (memory.Ranker). It returns nil — and the search
// stays lexical — while no vector is indexed, or when the query's vector
// does not come within QueryTimeoutMillis (logged at debug level).
func (s *Semantic) Rank(ctx context.Context, query string, f search.Filter, limit int) []string {
	ix := s.ix.Load()
	if ix == nil || ix.Len() == 0 {
		return nil
	}
	q, err := s.queryVector(ctx, query)
	if err != nil {
		s.core.Logger().Debug("hybrid search: no query vector; answering lexically", "err", err)
		return nil
	}
	var found []vector.Result
	s.core.Matching(f, func(match func(string) bool) {
		found, err = ix.Search(q, limit, match)
	})
	if err != nil { // a dimension the index does not have: the model changed its mind
		s.core.Logger().Warn("hybrid search: query vector refused", "err", err)
		return nil
	}
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = r.Key
	}
	return ids
}

// queryVector embeds a query, through a small cache (agents repeat
// queries; a round trip costs more than the search).
func (s *Semantic) queryVector(ctx context.Context, query string) ([]float32, error) {
	s.qmu.Lock()
	v, ok := s.qcache[query]
	s.qmu.Unlock()
	if ok {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(s.cfg.QueryTimeoutMillis)*time.Millisecond)
	defer cancel()
	vecs, err := s.cfg.Embedder.Embed(ctx, []string{s.cfg.QueryPrefix + query})
	if err != nil {
		return nil, err
	}
	v = toFloat32(vecs[0])
	s.qmu.Lock()
	if len(s.qcache) >= queryCacheSize {
		clear(s.qcache)
	}
	s.qcache[query] = v
	s.qmu.Unlock()
	return v, nil
}
