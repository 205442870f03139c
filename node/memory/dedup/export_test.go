package dedup

import "github.com/mnemohq/mnemo/node/memory"

// ForgetVectors empties the embeddings cache, so the next Find asks the
// embedder for every text.
func (d *Dedup) ForgetVectors() {
	d.mu.Lock()
	d.vecs = nil
	d.mu.Unlock()
}

// SetBeforeCheck has the merge-on-save worker call f before each check
// (nil: none), so a test can hold the worker while saves go on.
func (d *Dedup) SetBeforeCheck(f func(memory.MemoryKey)) {
	d.save.mu.Lock()
	d.save.beforeCheck = f
	d.save.mu.Unlock()
}
