package acl

import (
	"crypto/sha256"
	"sync"

	"github.com/mnemohq/mnemo/namespace"
)

// EvalCache remembers evaluations of root namespaces across Books. A
// root's evaluation is a pure function of the root, its records and what
// the book's KeyLookup answers for their signers, and an entry is keyed by
// all three: a book whose lookup answers otherwise, or that holds another
// record, evaluates afresh. The simulator gives one to all its nodes
// (memory.Config.ACLEvals): each would evaluate the same record sets under
// the same bindings to the same result, a hundred times over. It holds at
// most its capacity of entries and then starts afresh (an entry forgotten
// is evaluated again: a cost, never a different answer); an entry holds a
// whole namespace's evaluation, so keep the capacity small. Safe for
// concurrent use; a nil *EvalCache evaluates every time. Give a Book one
// with Book.SetEvalCache.
type EvalCache struct {
	mu        sync.Mutex
	max       int
	m         map[[32]byte]*nsState
	evaluated int
}

// NewEvalCache returns a cache of at most capacity entries (default 64).
func NewEvalCache(capacity int) *EvalCache {
	if capacity <= 0 {
		capacity = 64
	}
	return &EvalCache{max: capacity, m: make(map[[32]byte]*nsState)}
}

// evaluate is evaluate(ns, recs, ids, keyOf), or the state an equal
// evaluation left in c.
func (c *EvalCache) evaluate(ns namespace.Address, m map[string]*SignedRecord, ids []string, keyOf KeyLookup) *nsState {
	if c == nil {
		return evaluate(ns, recordsIn(m, ids), ids, keyOf)
	}
	k := evalCacheKey(ns, m, ids, keyOf)
	c.mu.Lock()
	st := c.m[k]
	c.mu.Unlock()
	if st != nil {
		return st
	}
	st = evaluate(ns, recordsIn(m, ids), ids, keyOf)
	c.mu.Lock()
	c.evaluated++
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = st
	c.mu.Unlock()
	return st
}

// recordsIn lists the records of m under ids, in that order: made only
// when evaluate runs (a found evaluation needs none; at 100 simulated nodes
// × 10k ops these lists were 1.6 GB of the 51 GB allocated).
func recordsIn(m map[string]*SignedRecord, ids []string) []SignedRecord {
	recs := make([]SignedRecord, 0, len(ids))
	for _, id := range ids {
		recs = append(recs, *m[id])
	}
	return recs
}

// Evaluated is how many evaluations c has made and remembered.
func (c *EvalCache) Evaluated() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evaluated
}

// evalCacheKey hashes what evaluate reads: the root, each record's id and
// signature (the id covers the rest of the record) and the key the lookup
// answers for its signer, or that it answers none. The bytes go through a
// buffer, hashed a few kilobytes at a time: six small writes a record cost
// more than the hashing (a 100-node simulation asks for a key on every
// policy it evaluates, over every record of the root).
func evalCacheKey(ns namespace.Address, m map[string]*SignedRecord, ids []string, keyOf KeyLookup) [32]byte {
	type answer struct {
		signer string // the name of an agent root: every signer is one (records are checked when decoded)
		key    []byte
		ok     bool
	}
	var answers []answer // a root's records have few signers: the root and its admins
	const flushAt = 4096 - 2*255 - 8
	var scratch [4096]byte
	buf := append(append(scratch[:0], ns.String()...), 0)
	h := sha256.New()
	for _, id := range ids {
		r := m[id]
		j := 0
		for j < len(answers) && answers[j].signer != r.Signer.Name {
			j++
		}
		if j == len(answers) {
			key, ok := keyOf(r.Signer)
			answers = append(answers, answer{r.Signer.Name, key, ok})
		}
		a := answers[j]
		buf = append(buf, byte(len(id)>>8), byte(len(id)))
		buf = append(buf, id...)
		buf = append(buf, byte(len(r.Sig)))
		buf = append(buf, r.Sig...)
		if a.ok {
			buf = append(buf, 1, byte(len(a.key)))
			buf = append(buf, a.key...)
		} else {
			buf = append(buf, 0)
		}
		if len(buf) >= flushAt {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	var k [32]byte
	h.Sum(k[:0])
	return k
}
