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
//
// The cache also keeps one immutable copy of each record a Book added
// through it, which the Books sharing the cache hold instead of one each
// (Book.AddRecord): the simulator shares one cache between its nodes, each
// of which holds every grant of every namespace it reads (a copy per node
// was N² records in all, 57 MB of the live heap at 300 nodes).
type SigCache struct {
	mu       sync.Mutex
	max      int
	seen     map[[32]byte]keptRecord
	verified int // ed25519 verifications that passed
}

// keptRecord is a verified record's entry: the copy Books hold, with its
// id, once a Book added it (nil before).
type keptRecord struct {
	rec *SignedRecord
	id  string
}

// NewSigCache returns a cache of at most capacity entries (default 4096).
func NewSigCache(capacity int) *SigCache {
	if capacity <= 0 {
		capacity = 4096
	}
	return &SigCache{max: capacity, seen: make(map[[32]byte]keptRecord)}
}

// VerifySignature is r.VerifySignature, without the ed25519 check when the
// same signed record verified through c before. The record's structure is
// checked every time. Errors as SignedRecord.VerifySignature's.
func (c *SigCache) VerifySignature(r SignedRecord) error {
	if c == nil {
		return r.VerifySignature()
	}
	_, err := c.verify(r)
	return err
}

// verify is VerifySignature for a non-nil c, returning r's key in c.seen.
func (c *SigCache) verify(r SignedRecord) ([32]byte, error) {
	if err := r.check(); err != nil {
		return [32]byte{}, err
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
		return k, nil
	}
	if err := r.VerifySignature(); err != nil {
		return k, err
	}
	c.mu.Lock()
	c.verified++
	if len(c.seen) >= c.max {
		clear(c.seen)
	}
	if _, kept := c.seen[k]; !kept { // verifyKept may have kept its copy meanwhile
		c.seen[k] = keptRecord{}
	}
	c.mu.Unlock()
	return k, nil
}

// verifyKept is VerifySignature, and returns the copy of r (whose id is
// id) a Book keeps: c's, shared by every Book adding r through c, or
// without c a copy of the Book's own; and its id, c's string when c has
// one.
func (c *SigCache) verifyKept(r SignedRecord, id string) (*SignedRecord, string, error) {
	if c == nil {
		if err := r.VerifySignature(); err != nil {
			return nil, "", err
		}
		kept := cloneRecord(r)
		return &kept, id, nil
	}
	k, err := c.verify(r)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.seen[k]; e.rec != nil {
		return e.rec, e.id, nil
	}
	kept := cloneRecord(r)
	if len(c.seen) >= c.max {
		clear(c.seen)
	}
	c.seen[k] = keptRecord{rec: &kept, id: id}
	return &kept, id, nil
}

// Verified is how many signatures c has verified with ed25519 and
// remembered: the records it did not know yet.
func (c *SigCache) Verified() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verified
}
