package semantic

import (
	"context"
	"time"

	"github.com/mnemohq/mnemo/node/memory"
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

// OnStored has fn called, on the worker, with the memories whose new
// vectors the worker has just indexed and stored, so another feature can
// act on them (merging on save compares new vectors: node/memory/dedup).
// fn must not block.
func (s *Semantic) OnStored(fn func([]memory.MemoryKey)) {
	s.omu.Lock()
	s.onStored = append(s.onStored, fn)
	s.omu.Unlock()
}

func (s *Semantic) stored(keys []memory.MemoryKey) {
	s.omu.Lock()
	fns := s.onStored
	s.omu.Unlock()
	for _, fn := range fns {
		fn(keys)
	}
}

// Similar returns up to limit memories of namespace ns whose vectors have
// a cosine similarity of at least min with the vector of memory id,
// nearest first; none while id has no vector (not embedded yet, or
// hybrid search off).
func (s *Semantic) Similar(ns, id string, min float64, limit int) []vector.Result {
	ix := s.ix.Load()
	if ix == nil {
		return nil
	}
	v, ok := ix.Vector(id)
	if !ok {
		return nil
	}
	var found []vector.Result
	s.core.Matching(search.Filter{Namespaces: []string{ns}}, func(match func(string) bool) {
		found, _ = ix.Search(v, limit+1, func(key string) bool { return key != id && match(key) })
	})
	var out []vector.Result
	for _, r := range found {
		if float64(r.Score) >= min && len(out) < limit {
			out = append(out, r)
		}
	}
	return out
}
