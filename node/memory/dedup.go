package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/embeddings"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/similarity"
	"github.com/mnemohq/mnemo/node/store"
)

// Duplicates and consensus.
//
// Detection. The same knowledge often lands in two namespaces a principal
// can read: a share or promotion copies it, or two agents learn it on
// their own. FindDuplicates compares every live memory the caller can read
// (capsule items and promotion references excluded) with every other in a
// different namespace, by MinHash of the title and content (package
// node/similarity: word 3-shingles, 128 hash functions, the Jaccard
// estimate); candidate pairs come from its LSH bands and a pair is
// reported at an estimate >= DefaultDuplicateThreshold (0.8) unless the
// query sets another threshold. With an embeddings endpoint configured
// (DedupConfig.Embeddings, off by default; OpenAI-compatible POST
// {base}/embeddings), pairs whose cosine similarity is >= its threshold
// (default 0.9) are reported too, with method "embeddings"; an endpoint
// failure is reported as a warning and the MinHash pairs still answer.
// Detection on save is not implemented: detection runs when asked.
//
// Merge. MergeDuplicates merges ids within one shared namespace the caller
// may write. The survivor is the first id that lives in that namespace;
// the other ids in it are soft-deleted with lineage = the survivor; ids
// elsewhere (e.g. in an agent's own namespace) are left untouched and only
// contribute provenance. The survivor's provenance gains every
// contributor's provenance, "author:<author>" of each, and "source:<id>"
// of each other id. When the contributors are independent agents — two of
// them have different authors and neither derives from the other (their
// ids, lineages and "source:" provenance do not meet) — the survivor's
// confidence rises by ConsensusBoost (0.2), capped at 1.

// Dedup defaults.
const (
	DefaultDuplicateThreshold  = 0.8
	DefaultEmbeddingsThreshold = 0.9
	ConsensusBoost             = 0.2
	maxDedupCandidates         = 10000 // memories compared per request
	maxEmbedCandidates         = 2000
	maxMergeIDs                = 20
)

// DedupConfig configures duplicate detection (DIR/config.json
// "duplicates").
type DedupConfig struct {
	// Threshold is the MinHash Jaccard estimate at which two memories are
	// near-duplicates; default 0.8.
	Threshold  float64          `json:"threshold,omitempty"`
	Embeddings EmbeddingsConfig `json:"embeddings,omitzero"`
	// Embedder computes the vectors of the embeddings pass. Default: when
	// Embeddings.Enabled, a node/embeddings client of that endpoint (built
	// by Validate, so once, at Open); otherwise none and no embeddings pass.
	// Tests and embedders in process set it directly.
	Embedder Embedder `json:"-"`
}

// Embedder turns texts into vectors, one per text, in order; the
// embeddings pass of FindDuplicates compares them by cosine similarity.
// Embed may block (a network round trip) until ctx ends; it is called from
// concurrent requests, so it must be safe for concurrent use. An error
// skips the pass with a warning.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

var _ Embedder = (*embeddings.Client)(nil)

// EmbeddingsConfig configures an OpenAI-compatible embeddings endpoint.
type EmbeddingsConfig struct {
	Enabled bool   `json:"enabled"`
	BaseURL string `json:"base_url,omitempty"` // e.g. http://127.0.0.1:11434/v1; POST {base_url}/embeddings
	Model   string `json:"model,omitempty"`
	// APIKeyEnv names the environment variable holding the bearer key
	// (the key itself never sits in config.json); "" sends none.
	APIKeyEnv      string  `json:"api_key_env,omitempty"`
	Threshold      float64 `json:"threshold,omitempty"`       // cosine; default 0.9
	TimeoutSeconds int     `json:"timeout_seconds,omitempty"` // default 30
}

// Validate checks the configuration and fills its defaults; Open calls it.
func (d *DedupConfig) Validate() error {
	if d.Threshold == 0 {
		d.Threshold = DefaultDuplicateThreshold
	}
	if d.Threshold <= 0 || d.Threshold > 1 {
		return invalid("duplicates.threshold must be in (0, 1], got %v", d.Threshold)
	}
	e := &d.Embeddings
	if !e.Enabled && d.Embedder == nil {
		return nil
	}
	if e.Enabled && !strings.HasPrefix(e.BaseURL, "http://") && !strings.HasPrefix(e.BaseURL, "https://") {
		return invalid("duplicates.embeddings.base_url must be an http(s) URL, got %q", e.BaseURL)
	}
	if e.Enabled && e.Model == "" {
		return invalid("duplicates.embeddings.model is required")
	}
	if e.Threshold == 0 {
		e.Threshold = DefaultEmbeddingsThreshold
	}
	if e.Threshold <= 0 || e.Threshold > 1 {
		return invalid("duplicates.embeddings.threshold must be in (0, 1], got %v", e.Threshold)
	}
	if e.TimeoutSeconds < 0 {
		return invalid("duplicates.embeddings.timeout_seconds must not be negative")
	}
	if d.Embedder == nil {
		d.Embedder = newEmbeddingsClient(*e)
	}
	return nil
}

// dedupState caches signatures and embeddings by content hash.
type dedupState struct {
	mu   sync.Mutex
	sigs map[string]similarity.Signature // content hash + title → signature
	vecs map[string][]float64            // embeddings, same key
}

func dedupText(m Memory) string { return m.Title + "\n" + m.Content }
func dedupKey(m Memory) string  { return schema.ContentHash(dedupText(m)) }

func (s *Service) signature(m Memory) similarity.Signature {
	k := dedupKey(m)
	s.dd.mu.Lock()
	sig, ok := s.dd.sigs[k]
	s.dd.mu.Unlock()
	if ok {
		return sig
	}
	sig = similarity.MinHash(dedupText(m))
	s.dd.mu.Lock()
	if s.dd.sigs == nil || len(s.dd.sigs) > 4*maxDedupCandidates {
		s.dd.sigs = map[string]similarity.Signature{}
	}
	s.dd.sigs[k] = sig
	s.dd.mu.Unlock()
	return sig
}

func side(m Memory) DuplicateSide {
	return DuplicateSide{ID: m.ID, Namespace: m.Namespace, Title: m.Title, Author: m.Author}
}

// origins is what a memory derives from: its id, lineage and sources.
func origins(m Memory) []string {
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

func related(a, b Memory) bool {
	oa := origins(a)
	for _, o := range origins(b) {
		if slices.Contains(oa, o) {
			return true
		}
	}
	return false
}

func independent(a, b Memory) bool {
	return a.Author != "" && b.Author != "" && a.Author != b.Author && !related(a, b)
}

// FindDuplicates lists near-duplicate pairs across namespaces the caller
// can read (see the comment at the top).
func (s *Service) FindDuplicates(ctx context.Context, c Caller, q DuplicateQuery) (DuplicatesResult, error) {
	threshold := q.Threshold
	if threshold == 0 {
		threshold = s.cfg.Dedup.Threshold
	}
	if threshold == 0 {
		threshold = DefaultDuplicateThreshold
	}
	if threshold < 0 || threshold > 1 {
		return DuplicatesResult{}, invalid("threshold must be in (0, 1], got %v", threshold)
	}
	if q.Limit == 0 {
		q.Limit = DefaultDuplicateLimit
	}
	if q.Limit < 0 || q.Limit > MaxDuplicateLimit {
		return DuplicatesResult{}, invalid("limit must be 1..%d, got %d", MaxDuplicateLimit, q.Limit)
	}
	var within *namespace.Address
	if q.Namespace != "" {
		ns, err := s.resolve(c, q.Namespace)
		if err != nil {
			return DuplicatesResult{}, err
		}
		if err := s.auth.CheckRead(c.Principal, ns); err != nil {
			return DuplicatesResult{}, err
		}
		within = &ns
	}
	sf, err := s.indexFilter(c, Filter{})
	if err != nil {
		return DuplicatesResult{}, err
	}
	var mems []Memory
	for _, m := range s.load(metaIDs(s.ix.List(sf, true, maxDedupCandidates))) {
		if m.Type == TypeReference || schema.IsCapsuleInbox(m.Namespace) || strings.TrimSpace(dedupText(m)) == "" {
			continue
		}
		mems = append(mems, m)
	}
	in := func(m Memory) bool {
		if within == nil {
			return true
		}
		a, err := namespace.Parse(m.Namespace)
		return err == nil && within.Contains(a)
	}
	res := DuplicatesResult{Pairs: []DuplicatePair{}, Compared: len(mems)}
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
		res.Pairs = append(res.Pairs, DuplicatePair{A: side(a), B: side(b), Similarity: math.Round(sim*1000) / 1000,
			Method: method, Independent: independent(a, b)})
	}
	sigs := make([]similarity.Signature, len(mems))
	buckets := map[uint64][]int{}
	for i, m := range mems {
		if i%256 == 0 && ctx.Err() != nil {
			return DuplicatesResult{}, ctx.Err()
		}
		sigs[i] = s.signature(m)
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
	if emb := s.cfg.Dedup.Embedder; emb != nil {
		if err := s.embeddingPairs(ctx, mems, emb, s.cfg.Dedup.Embeddings.Threshold, add); err != nil {
			res.Warning = "embeddings skipped: " + err.Error()
		}
	}
	slices.SortFunc(res.Pairs, func(a, b DuplicatePair) int {
		return cmp.Or(cmp.Compare(b.Similarity, a.Similarity), strings.Compare(a.A.ID, b.A.ID), strings.Compare(a.B.ID, b.B.ID))
	})
	if len(res.Pairs) > q.Limit {
		res.Pairs = res.Pairs[:q.Limit]
	}
	return res, nil
}

func (s *Service) embeddingPairs(ctx context.Context, mems []Memory, cl Embedder, threshold float64, add func(i, j int, sim float64, method string)) error {
	if len(mems) > maxEmbedCandidates {
		mems = mems[:maxEmbedCandidates]
	}
	vecs := make([][]float64, len(mems))
	var todo []int
	s.dd.mu.Lock()
	for i, m := range mems {
		if v, ok := s.dd.vecs[dedupKey(m)]; ok {
			vecs[i] = v
		} else {
			todo = append(todo, i)
		}
	}
	s.dd.mu.Unlock()
	const batch = 64
	for start := 0; start < len(todo); start += batch {
		part := todo[start:min(start+batch, len(todo))]
		texts := make([]string, len(part))
		for k, i := range part {
			texts[k] = memapi.TruncateRunes(dedupText(mems[i]), 8000)
		}
		out, err := cl.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(out) != len(texts) {
			return fmt.Errorf("the embedder returned %d vectors for %d texts", len(out), len(texts))
		}
		s.dd.mu.Lock()
		if s.dd.vecs == nil || len(s.dd.vecs) > 4*maxEmbedCandidates {
			s.dd.vecs = map[string][]float64{}
		}
		for k, i := range part {
			vecs[i] = out[k]
			s.dd.vecs[dedupKey(mems[i])] = out[k]
		}
		s.dd.mu.Unlock()
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

// ---- embeddings client ----

// newEmbeddingsClient builds the default Embedder of cfg (the key from the
// environment variable it names, read once).
func newEmbeddingsClient(cfg EmbeddingsConfig) *embeddings.Client {
	timeout := time.Duration(cfg.TimeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	key := ""
	if cfg.APIKeyEnv != "" {
		key = os.Getenv(cfg.APIKeyEnv)
	}
	return &embeddings.Client{BaseURL: cfg.BaseURL, Model: cfg.Model, APIKey: key, HTTP: &http.Client{Timeout: timeout}}
}

// ---- merge ----

// MergeDuplicates merges ids within req.Namespace (see the comment at the
// top). The caller needs write on the namespace and read on every id.
func (s *Service) MergeDuplicates(ctx context.Context, c Caller, req MergeRequest) (MergeResult, error) {
	if strings.TrimSpace(req.Namespace) == "" {
		return MergeResult{}, invalid("namespace (the shared namespace to merge in) is required")
	}
	ns, err := s.resolveWrite(c, req.Namespace)
	if err != nil {
		return MergeResult{}, err
	}
	var ids []string
	for _, id := range req.IDs {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) < 2 || len(ids) > maxMergeIDs {
		return MergeResult{}, invalid("ids must name 2..%d distinct memories, got %d", maxMergeIDs, len(ids))
	}
	mems := make([]Memory, len(ids))
	survivor := -1
	for i, id := range ids {
		mns, rec, err := s.locate(c, id, false)
		if err != nil {
			return MergeResult{}, err
		}
		m, fl := s.view(mns.String(), id, rec)
		if fl.Retracted {
			return MergeResult{}, fmt.Errorf("%w: memory %q", ErrNotFound, id)
		}
		mems[i] = m
		if survivor < 0 && mns == ns {
			survivor = i
		}
	}
	if survivor < 0 {
		return MergeResult{}, invalid("none of the ids is in %s: share or promote one there first", ns)
	}
	surv := mems[survivor]
	res := MergeResult{Merged: []string{}, Contributors: []string{}, ConfidenceBefore: surv.Confidence}
	prov := slices.Clone(surv.Provenance)
	for i, m := range mems {
		prov = append(prov, m.Provenance...)
		if m.Author != "" {
			prov = append(prov, "author:"+m.Author)
		}
		if i == survivor {
			continue
		}
		prov = append(prov, "source:"+m.ID)
		if m.Namespace == ns.String() {
			res.Merged = append(res.Merged, m.ID)
		} else {
			res.Contributors = append(res.Contributors, m.ID)
		}
		for j := range i {
			if independent(mems[j], m) {
				res.Independent = true
			}
		}
	}
	slices.Sort(prov)
	prov = slices.Compact(prov)
	res.ConfidenceAfter = surv.Confidence
	if res.Independent {
		res.ConfidenceAfter = min(1, math.Round((surv.Confidence+ConsensusBoost)*1e9)/1e9)
	}
	err = s.write(func(tx *store.Tx) error {
		now, ts := s.now()
		e, err := tx.Edit(ns.String(), surv.ID)
		if err != nil {
			return err
		}
		for _, p := range prov {
			if !slices.Contains(surv.Provenance, p) {
				if err := e.Add(schema.SetProvenance, p); err != nil {
					return err
				}
			}
		}
		if res.ConfidenceAfter != res.ConfidenceBefore {
			if err := e.Set(ts, schema.FieldConfidence, schema.EncodeNum(res.ConfidenceAfter)); err != nil {
				return err
			}
		}
		if err := schema.Touch(e, ts, now); err != nil {
			return err
		}
		tx.Commit(ns.String(), surv.ID, e)
		for _, id := range res.Merged {
			e, err := tx.Edit(ns.String(), id)
			if err != nil {
				return err
			}
			if err := e.Set(ts, schema.FieldDeletedAt, schema.EncodeTime(now)); err != nil {
				return err
			}
			if err := schema.Touch(e, ts, now); err != nil {
				return err
			}
			if err := e.Set(ts, schema.FieldLineage, []byte(surv.ID)); err != nil {
				return err
			}
			tx.Commit(ns.String(), id, e)
		}
		return nil
	})
	if err != nil {
		return MergeResult{}, err
	}
	res.Memory, err = s.Get(ctx, c, surv.ID, false)
	return res, err
}
