package dedup

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/similarity"
)

// Find lists near-duplicate pairs across the namespaces the caller can
// read (see the package doc), most similar first, at most q.Limit. With
// q.Namespace set, each pair has a side in it; the caller must read it.
// Errors wrap memapi.ErrInvalid (a bad threshold, limit or namespace),
// acl.ErrDenied, or ctx's error; an embeddings failure is a Warning.
func (d *Dedup) Find(ctx context.Context, c memapi.Caller, q memapi.DuplicateQuery) (memapi.DuplicatesResult, error) {
	threshold := q.Threshold
	if threshold == 0 {
		threshold = d.cfg.Threshold
	}
	if threshold < 0 || threshold > 1 {
		return memapi.DuplicatesResult{}, invalid("threshold must be in (0, 1], got %v", threshold)
	}
	if q.Limit == 0 {
		q.Limit = memapi.DefaultDuplicateLimit
	}
	if q.Limit < 0 || q.Limit > memapi.MaxDuplicateLimit {
		return memapi.DuplicatesResult{}, invalid("limit must be 1..%d, got %d", memapi.MaxDuplicateLimit, q.Limit)
	}
	var within *namespace.Address
	if q.Namespace != "" {
		ns, err := d.core.Resolve(c, q.Namespace)
		if err != nil {
			return memapi.DuplicatesResult{}, err
		}
		if err := d.core.Check(c.Principal, ns, acl.Read); err != nil {
			return memapi.DuplicatesResult{}, err
		}
		within = &ns
	}
	sf, err := d.core.IndexFilter(c, memory.Filter{})
	if err != nil {
		return memapi.DuplicatesResult{}, err
	}
	var mems []memory.Memory
	for _, m := range d.core.List(sf, true, maxCandidates) {
		if m.Type == memory.TypeReference || schema.IsCapsuleInbox(m.Namespace) || strings.TrimSpace(text(m)) == "" {
			continue
		}
		mems = append(mems, m)
	}
	in := func(m memory.Memory) bool {
		if within == nil {
			return true
		}
		a, err := namespace.Parse(m.Namespace)
		return err == nil && within.Contains(a)
	}
	res := memapi.DuplicatesResult{Pairs: []memapi.DuplicatePair{}, Compared: len(mems)}
	seen := map[[2]int]bool{}
	add := func(i, j int, sim float64, method string) {
		if i > j {
			i, j = j, i
		}
		a, b := mems[i], mems[j]
		if seen[[2]int{i, j}] || a.Namespace == b.Namespace || !in(a) && !in(b) {
			return
		}
		seen[[2]int{i, j}] = true
		if a.ID > b.ID {
			a, b = b, a
		}
		res.Pairs = append(res.Pairs, memapi.DuplicatePair{A: side(a), B: side(b), Similarity: math.Round(sim*1000) / 1000,
			Method: method, Independent: independent(a, b)})
	}
	sigs := make([]similarity.Signature, len(mems))
	buckets := map[uint64][]int{}
	for i, m := range mems {
		if i%256 == 0 && ctx.Err() != nil {
			return memapi.DuplicatesResult{}, ctx.Err()
		}
		sigs[i] = d.signature(m)
		for b := range similarity.Bands {
			k := sigs[i].Band(b)
			buckets[k] = append(buckets[k], i)
		}
	}
	for _, ids := range buckets {
		for x := 0; x < len(ids); x++ {
			for y := x + 1; y < len(ids); y++ {
				i, j := ids[x], ids[y]
				if mems[i].Namespace == mems[j].Namespace {
					continue
				}
				if sim := similarity.Similarity(sigs[i], sigs[j]); sim >= threshold {
					add(i, j, sim, "minhash")
				}
			}
		}
	}
	if emb := d.cfg.Embedder; emb != nil {
		if err := d.embeddingPairs(ctx, mems, emb, d.cfg.Embeddings.Threshold, add); err != nil {
			res.Warning = "embeddings skipped: " + err.Error()
		}
	}
	slices.SortFunc(res.Pairs, func(a, b memapi.DuplicatePair) int {
		return cmp.Or(cmp.Compare(b.Similarity, a.Similarity), strings.Compare(a.A.ID, b.A.ID), strings.Compare(a.B.ID, b.B.ID))
	})
	if len(res.Pairs) > q.Limit {
		res.Pairs = res.Pairs[:q.Limit]
	}
	return res, nil
}

// embeddingPairs adds the pairs of mems (the first maxEmbedCandidates)
// in different namespaces whose vectors' cosine is >= threshold. Vectors
// are cached by text, so only new texts go to the embedder, in batches.
func (d *Dedup) embeddingPairs(ctx context.Context, mems []memory.Memory, emb Embedder, threshold float64, add func(i, j int, sim float64, method string)) error {
	if len(mems) > maxEmbedCandidates {
		mems = mems[:maxEmbedCandidates]
	}
	vecs := make([][]float64, len(mems))
	var todo []int
	d.mu.Lock()
	for i, m := range mems {
		if v, ok := d.vecs[cacheKey(m)]; ok {
			vecs[i] = v
		} else {
			todo = append(todo, i)
		}
	}
	d.mu.Unlock()
	for start := 0; start < len(todo); start += embedBatch {
		part := todo[start:min(start+embedBatch, len(todo))]
		texts := make([]string, len(part))
		for k, i := range part {
			texts[k] = memapi.TruncateRunes(text(mems[i]), maxEmbedRunes)
		}
		out, err := emb.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(out) != len(texts) {
			return fmt.Errorf("the embedder returned %d vectors for %d texts", len(out), len(texts))
		}
		d.mu.Lock()
		if d.vecs == nil || len(d.vecs) > 4*maxEmbedCandidates {
			d.vecs = map[string][]float64{}
		}
		for k, i := range part {
			vecs[i] = out[k]
			d.vecs[cacheKey(mems[i])] = out[k]
		}
		d.mu.Unlock()
	}
	for i := range mems {
		for j := i + 1; j < len(mems); j++ {
			if mems[i].Namespace == mems[j].Namespace {
				continue
			}
			if sim := similarity.Cosine(vecs[i], vecs[j]); sim >= threshold {
				add(i, j, sim, "embeddings")
			}
		}
	}
	return nil
}

func side(m memory.Memory) memapi.DuplicateSide {
	return memapi.DuplicateSide{ID: m.ID, Namespace: m.Namespace, Title: m.Title, Author: m.Author}
}

// origins is what a memory derives from: its id, lineage and sources.
func origins(m memory.Memory) []string {
	out := []string{m.ID}
	if m.Lineage != "" {
		out = append(out, m.Lineage)
	}
	for _, p := range m.Provenance {
		if id, ok := strings.CutPrefix(p, "source:"); ok {
			out = append(out, id)
		}
	}
	return out
}

func related(a, b memory.Memory) bool {
	oa := origins(a)
	for _, o := range origins(b) {
		if slices.Contains(oa, o) {
			return true
		}
	}
	return false
}

// independent reports whether a and b come from different agents, neither
// derived from the other: their agreement is a consensus.
func independent(a, b memory.Memory) bool {
	return a.Author != "" && b.Author != "" && a.Author != b.Author && !related(a, b)
}
