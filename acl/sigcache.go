package acl

import (
	"crypto/sha256"
	"sync"
)

// SigCache remembers signed records whose signatures verified, so that a
// record a node meets on several paths — a peer's delta checked on
// arrival, a policy counting the delta's own records, the book admitting
// the stored record — costs one ed25519 verification, not one per path.
// An entry is the hash of the signed bytes (which include the signer key)
// and the signature: another signature, key or body is verified afresh.
// It holds at most its capacity of entries and then starts afresh (a
// record forgotten is verified again: a cost, never a different answer).
// Safe for concurrent use; a nil *SigCache verifies every time. Give a
// Book one with Book.SetSigCache.
type SigCache struct {
	mu       sync.Mutex
	max      int
	seen     map[[32]byte]struct{}
	verified int // ed25519 verifications that passed
}

// NewSigCache returns a cache of at most capacity entries (default 4096).
func NewSigCache(capacity int) *SigCache {
	if capacity <= 0 {
		capacity = 4096
	}
	return &SigCache{max: capacity, seen: make(map[[32]byte]struct{})}
}

// VerifySignature is r.VerifySignature, without the ed25519 check when the
// same signed record verified through c before. The record's structure is
// checked every time. Errors as SignedRecord.VerifySignature's.
func (c *SigCache) VerifySignature(r SignedRecord) error {
	if c == nil {
		return r.VerifySignature()
	}
	if err := r.check(); err != nil {
		return err
	}
	h := sha256.New()
	h.Write(r.signedBytes())
	h.Write(r.Sig)
	var k [32]byte
	h.Sum(k[:0])
	c.mu.Lock()
	_, ok := c.seen[k]
	c.mu.Unlock()
	if ok {
		return nil
	}
	if err := r.VerifySignature(); err != nil {
		return err
	}
	c.mu.Lock()
	c.verified++
	if len(c.seen) >= c.max {
		clear(c.seen)
	}
	c.seen[k] = struct{}{}
	c.mu.Unlock()
	return nil
}

// Verified is how many signatures c has verified with ed25519 and
// remembered: the records it did not know yet.
func (c *SigCache) Verified() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verified
}
