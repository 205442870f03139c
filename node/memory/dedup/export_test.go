package dedup

// ForgetVectors empties the embeddings cache, so the next Find asks the
// embedder for every text.
func (d *Dedup) ForgetVectors() {
	d.mu.Lock()
	d.vecs = nil
	d.mu.Unlock()
}
