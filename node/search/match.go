package search

// Within runs fn with a predicate that tells whether the document with an
// id matches f (an id not indexed does not), under one read lock, so every
// answer comes from one state of the index. It is how a second ranking
// (the vector index of hybrid search) applies the same filter a lexical
// query does. fn must not call the Index, and should be short: writers
// wait for it.
func (ix *Index) Within(f Filter, fn func(match func(id string) bool)) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m, ok := ix.compile(&f)
	if !ok {
		fn(func(string) bool { return false })
		return
	}
	fn(func(id string) bool {
		s, ok := ix.slotOf(id)
		return ok && m.match(&ix.slots[s])
	})
}
