package semantic

import (
	"context"
	"hash/fnv"
	"time"
	"unicode/utf8"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search/vector"
)

// item is a memory to (re)embed or forget, or a barrier (Sync).
type item struct {
	key     memory.MemoryKey
	barrier chan struct{}
}

// held is what the worker knows of an indexed vector: the namespace of its
// memory (to name the stored copy) and the hash of the text it was made of.
type held struct {
	ns   string
	hash uint64
}

// storeKey names a memory's vector in the side space.
func storeKey(k memory.MemoryKey) string { return k.Namespace + "\x00" + k.ID }

// embedText is what is embedded for a memory: its title and content as
// the effective view shows them, cut to maxEmbedRunes.
func (s *Semantic) embedText(m memory.Memory) string {
	t := s.cfg.DocumentPrefix + m.Title + "\n" + m.Content
	if utf8.RuneCountInString(t) > maxEmbedRunes {
		t = string([]rune(t)[:maxEmbedRunes])
	}
	return t
}

func textHash(t string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(t))
	return h.Sum64()
}

// run is the worker: load, rescan, then follow the queue until Close.
func (s *Semantic) run() {
	defer close(s.done)
	s.load()
	s.rescan()
	var batch []memory.MemoryKey
	handle := func(it item) {
		if it.barrier == nil {
			batch = append(batch, it.key)
			return
		}
		s.process(batch)
		batch = batch[:0]
		if s.overflow.Swap(false) {
			s.rescan()
		}
		close(it.barrier)
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case it := <-s.queue:
			handle(it)
		}
	drain:
		for len(batch) < s.cfg.Batch {
			select {
			case it := <-s.queue:
				handle(it)
			default:
				break drain
			}
		}
		s.process(batch)
		batch = batch[:0]
		if s.overflow.Swap(false) {
			s.rescan()
		}
	}
}

// index returns the vector index, made on the first vector's dimension.
func (s *Semantic) index(dim int) (*vector.Index, error) {
	if ix := s.ix.Load(); ix != nil {
		return ix, nil
	}
	cfg := s.cfg.Index
	cfg.Dim = dim
	ix, err := vector.New(cfg)
	if err != nil {
		return nil, err
	}
	s.ix.Store(ix)
	return ix, nil
}

// load reads the stored vectors of the model into the index. A value that
// does not decode is logged and dropped (the rescan embeds its memory
// again); whether a vector is still current is the rescan's question.
func (s *Semantic) load() {
	log := s.core.Logger()
	var bad []string
	err := s.core.Service().Store().ScanSide(s.space, func(key string, value []byte) error {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		h, v, err := decodeVector(value)
		var ix *vector.Index
		if err == nil {
			ix, err = s.index(len(v))
		}
		if err == nil {
			_, id := splitKey(key)
			err = ix.Put(id, v)
		}
		if err != nil {
			log.Warn("hybrid search: dropping a stored vector", "key", key, "err", err)
			bad = append(bad, key)
			return nil
		}
		ns, id := splitKey(key)
		s.have[id] = held{ns, h}
		return nil
	})
	if err != nil && s.ctx.Err() == nil {
		log.Warn("hybrid search: reading the stored vectors", "err", err)
	}
	s.deleteStored(bad)
}

// splitKey splits a store key into namespace and id (ids never hold a
// NUL byte; namespaces neither).
func splitKey(key string) (ns, id string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == 0 {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// rescan compares every memory in the store with the vectors held: it
// embeds the memories whose vector is missing or was computed from other
// text, and forgets the vectors of memories no longer there.
func (s *Semantic) rescan() {
	var todo []memory.MemoryKey
	seen := map[string]bool{}
	err := s.core.Service().Store().Scan("", func(ns, id string, rec *crdt.Record) error {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		if schema.Str(rec, schema.FieldKind) != "" {
			return nil
		}
		m, fl := s.core.View(ns, id, rec)
		if fl.Retracted {
			return nil
		}
		seen[id] = true
		if h, ok := s.have[id]; !ok || h.hash != textHash(s.embedText(m)) {
			todo = append(todo, memory.MemoryKey{Namespace: ns, ID: id})
		}
		return nil
	})
	if err != nil {
		if s.ctx.Err() == nil {
			s.core.Logger().Warn("hybrid search: scanning the store", "err", err)
			s.overflow.Store(true)
		}
		return
	}
	var gone []string
	for id, h := range s.have {
		if !seen[id] {
			s.forgetID(id)
			gone = append(gone, storeKey(memory.MemoryKey{Namespace: h.ns, ID: id}))
		}
	}
	s.deleteStored(gone)
	for len(todo) > 0 && s.ctx.Err() == nil {
		n := min(len(todo), s.cfg.Batch)
		s.process(todo[:n])
		todo = todo[n:]
	}
}

// forgetID drops a vector from the index; the caller deletes the stored
// copy.
func (s *Semantic) forgetID(id string) {
	if ix := s.ix.Load(); ix != nil {
		ix.Delete(id)
	}
	delete(s.have, id)
}

func (s *Semantic) deleteStored(keys []string) {
	if len(keys) == 0 {
		return
	}
	m := make(map[string][]byte, len(keys))
	for _, k := range keys {
		m[k] = nil
	}
	if err := s.core.Service().Store().PutSide(s.space, m); err != nil {
		s.core.Logger().Warn("hybrid search: deleting stored vectors", "err", err)
	}
}

// process brings the vectors of keys up to date: it forgets memories that
// are gone, skips those whose text is unchanged, and embeds the rest in
// requests of at most Batch texts. A failed request is logged; the worker
// pauses for Retry, then rescans (which finds those memories again).
func (s *Semantic) process(keys []memory.MemoryKey) {
	type job struct {
		key  memory.MemoryKey
		text string
		hash uint64
	}
	var jobs []job
	var gone []string
	queued := map[memory.MemoryKey]bool{}
	for _, k := range keys {
		if queued[k] {
			continue
		}
		queued[k] = true
		rec, err := s.core.Record(k.Namespace, k.ID)
		var m memory.Memory
		var fl memory.ViewFlags
		if err == nil && rec != nil && !rec.Empty() && schema.Str(rec, schema.FieldKind) == "" {
			m, fl = s.core.View(k.Namespace, k.ID, rec)
		}
		if err != nil || rec == nil || rec.Empty() || schema.Str(rec, schema.FieldKind) != "" || fl.Retracted {
			if _, ok := s.have[k.ID]; ok {
				s.forgetID(k.ID)
				gone = append(gone, storeKey(k))
			}
			continue
		}
		t := s.embedText(m)
		h := textHash(t)
		if have, ok := s.have[k.ID]; ok && have.hash == h {
			continue
		}
		jobs = append(jobs, job{k, t, h})
	}
	s.deleteStored(gone)
	for len(jobs) > 0 && s.ctx.Err() == nil {
		n := min(len(jobs), s.cfg.Batch)
		texts := make([]string, n)
		for i, j := range jobs[:n] {
			texts[i] = j.text
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.cfg.TimeoutSeconds)*time.Second)
		vecs, err := s.cfg.Embedder.Embed(ctx, texts)
		cancel()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.failures.Add(1)
			s.core.Logger().Warn("hybrid search: embedding failed; retrying later", "texts", n, "err", err, "retry", s.cfg.Retry)
			s.overflow.Store(true)
			select {
			case <-time.After(s.cfg.Retry):
			case <-s.ctx.Done():
			}
			return
		}
		stored := make(map[string][]byte, n)
		var keys []memory.MemoryKey
		for i, j := range jobs[:n] {
			v := toFloat32(vecs[i])
			ix, err := s.index(len(v))
			if err == nil {
				err = ix.Put(j.key.ID, v)
			}
			if err != nil {
				s.core.Logger().Warn("hybrid search: refusing a vector", "id", j.key.ID, "err", err)
				continue
			}
			s.have[j.key.ID] = held{j.key.Namespace, j.hash}
			stored[storeKey(j.key)] = encodeVector(j.hash, v)
			keys = append(keys, j.key)
		}
		s.embedded.Add(int64(n))
		if err := s.core.Service().Store().PutSide(s.space, stored); err != nil {
			s.core.Logger().Warn("hybrid search: storing vectors", "err", err)
		}
		s.stored(keys)
		jobs = jobs[n:]
	}
}

func toFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
