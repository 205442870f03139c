package crdt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// A Seal is an author's signature over the dots one transaction of its
// replica made in one record of one namespace. It is what lets any replica
// hand a record on without being able to forge or alter it: every dot a
// record holds must be covered by a valid seal of the replica the dot names
// (VerifySeals), whoever relays it.
//
// A seal does not sign the record as a whole, because later writes overwrite
// some of its dots and joins mix writes of many replicas. It signs one short
// hash (a leaf) per sealed dot, in counter order; the record keeps the seal
// while any of its dots survives, so each surviving dot is checked against
// its own leaf and the one signature. A leaf is salted with a nonce only the
// author can compute (a prefix of its signature over the seal's place), so
// the leaves of overwritten values reveal nothing that can be confirmed by
// guessing.
//
// What a seal does not cover are removals: the dots a delta's causal
// context claims without holding. Who may claim them is decided by the
// replication engine (only replicas that may write the namespace).
type Seal struct {
	Key      []byte   // the author's ed25519 public key; its replica is ReplicaOfKey(Key)
	Nonce    []byte   // SealNonceSize bytes: salt of the leaves
	Counters []uint64 // the sealed dots' counters, strictly increasing
	Leaves   []byte   // LeafSize bytes per counter, in the same order
	Sig      []byte   // ed25519 over the domain, namespace, id, key, nonce, counters and leaves
	rep      ReplicaID
}

// Sizes of a seal's parts.
const (
	LeafSize      = 16
	SealNonceSize = 16
	sealDomain    = "mnemo/crdt/seal/v1\x00"
	nonceDomain   = "mnemo/crdt/seal-nonce/v1\x00"
)

// ErrBadSeal reports a record dot that no valid seal of its replica covers,
// or a seal whose signature or leaf does not match.
var ErrBadSeal = errors.New("crdt: dot without a valid seal")

// Signer signs seals for one replica: the replica whose id derives from Key.
// Sign must be deterministic (ed25519 is), so a seal is the same wherever it
// is made again, and safe for concurrent use.
type Signer struct {
	Key  ed25519.PublicKey
	Sign func(msg []byte) []byte
	// Salt, when set, returns at least SealNonceSize bytes that only the
	// key's holder can compute, deterministically (a keyed hash: cheaper
	// than a signature). Nil salts with a signature prefix.
	Salt func(msg []byte) []byte
}

// ReplicaOfKey derives the replica id of a public key: the first 8 bytes of
// sha256(key), big-endian, with the (astronomically unlikely) zero mapped to
// 1 because zero is reserved.
func ReplicaOfKey(pub []byte) ReplicaID {
	sum := sha256.Sum256(pub)
	r := binary.BigEndian.Uint64(sum[:8])
	if r == 0 {
		r = 1
	}
	return ReplicaID(r)
}

// Replica is the replica whose dots the seal may cover.
func (s *Seal) Replica() ReplicaID {
	if s.rep == 0 { // built by hand, not by Seal or a decoder
		return ReplicaOfKey(s.Key)
	}
	return s.rep
}

func (s *Seal) first() uint64 { return s.Counters[0] }

// covers returns the index of counter c in the seal, or -1.
func (s *Seal) covers(c uint64) int {
	i, ok := slices.BinarySearch(s.Counters, c)
	if !ok {
		return -1
	}
	return i
}

func compareSeals(a, b Seal) int {
	if c := bytes.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := cmpU64(a.first(), b.first()); c != 0 {
		return c
	}
	return bytes.Compare(a.Sig, b.Sig)
}

// signedBytes is what a seal's signature covers.
func (s *Seal) signedBytes(ns, id string) []byte {
	b := make([]byte, 0, len(sealDomain)+4+len(ns)+4+len(id)+len(s.Key)+len(s.Nonce)+8+8*len(s.Counters)+len(s.Leaves))
	b = append(b, sealDomain...)
	b = appendLenPrefixed(b, ns)
	b = appendLenPrefixed(b, id)
	b = append(b, s.Key...)
	b = append(b, s.Nonce...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(s.Counters)))
	for _, c := range s.Counters {
		b = binary.BigEndian.AppendUint64(b, c)
	}
	return append(b, s.Leaves...)
}

func appendLenPrefixed(b []byte, v string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// leaf hashes what one dot wrote: a field's name, timestamp and value, or a
// set element. The bytes hashed are made in one buffer (a hash and buffers
// per leaf were most of what checking a record's seals allocated).
func leaf(nonce []byte, d Dot, kind byte, name, elem string, ts Timestamp, value []byte) [LeafSize]byte {
	b := make([]byte, 0, len(nonce)+8+1+4+len(name)+4+len(elem)+8+len(value))
	b = append(b, nonce...)
	b = binary.BigEndian.AppendUint64(b, d.Counter)
	b = append(b, kind)
	b = appendLenPrefixed(b, name)
	b = appendLenPrefixed(b, elem)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	b = append(b, value...)
	sum := sha256.Sum256(b)
	var out [LeafSize]byte
	copy(out[:], sum[:])
	return out
}

// dotWrite is one dot of a record with what it wrote.
type dotWrite struct {
	dot        Dot
	kind       byte // 'f' field, 'e' element
	name, elem string
	ts         Timestamp
	value      []byte
}

func (w dotWrite) leaf(nonce []byte) [LeafSize]byte {
	return leaf(nonce, w.dot, w.kind, w.name, w.elem, w.ts, w.value)
}

// writes lists every dot the record holds with what it wrote.
func (r *Record) writes(fn func(dotWrite) bool) {
	for name, f := range r.fields {
		if !fn(dotWrite{dot: f.Dot, kind: 'f', name: name, ts: f.TS, value: f.Value}) {
			return
		}
	}
	for set, elems := range r.sets {
		for elem, ds := range elems {
			for _, d := range ds {
				if !fn(dotWrite{dot: d, kind: 'e', name: set, elem: elem}) {
					return
				}
			}
		}
	}
}

// Seals returns the record's seals, sorted (shared: do not modify).
func (r *Record) Seals() []Seal {
	if r == nil {
		return nil
	}
	return r.seals
}

// sealedBy reports whether a seal of the record covers d.
func (r *Record) sealedBy(d Dot) bool {
	for i := range r.seals {
		s := &r.seals[i]
		if s.Replica() == d.Replica && s.covers(d.Counter) >= 0 {
			return true
		}
	}
	return false
}

// Seal signs, in every record of m, the dots of s's replica that no seal
// covers yet: one seal per record. ns is the namespace the delta belongs to
// (a seal is valid there only). The node seals each transaction's delta
// before it is stored or sent.
func (m *Map) Seal(ns string, s Signer) {
	rep := ReplicaOfKey(s.Key)
	for id, rec := range m.records {
		rec.seal(ns, id, rep, s)
	}
}

// seal seals the dots of rep, which must be ReplicaOfKey(s.Key).
func (r *Record) seal(ns, id string, rep ReplicaID, s Signer) {
	n := len(r.fields)
	for _, elems := range r.sets {
		n += len(elems)
	}
	own := make([]dotWrite, 0, n) // one dot a write, nearly always
	r.writes(func(w dotWrite) bool {
		if w.dot.Replica == rep && !r.sealedBy(w.dot) {
			own = append(own, w)
		}
		return true
	})
	if len(own) == 0 {
		return
	}
	slices.SortFunc(own, func(a, b dotWrite) int { return cmpU64(a.dot.Counter, b.dot.Counter) })
	seal := Seal{Key: slices.Clone(s.Key), Counters: make([]uint64, len(own)), rep: rep}
	for i, w := range own {
		seal.Counters[i] = w.dot.Counter
	}
	// The nonce is deterministic, and unpredictable to anyone without the
	// key.
	probe := Seal{Key: seal.Key, Counters: seal.Counters}
	salt := s.Sign
	if s.Salt != nil {
		salt = s.Salt
	}
	seal.Nonce = salt(append([]byte(nonceDomain), probe.signedBytes(ns, id)...))[:SealNonceSize]
	seal.Leaves = make([]byte, 0, LeafSize*len(own))
	for _, w := range own {
		l := w.leaf(seal.Nonce)
		seal.Leaves = append(seal.Leaves, l[:]...)
	}
	seal.Sig = s.Sign(seal.signedBytes(ns, id))
	r.seals = append(slices.Clone(r.seals), seal)
	slices.SortFunc(r.seals, compareSeals)
}

// joinSeals returns the seals of a and b that cover a dot out holds,
// sorted and without duplicates.
func joinSeals(out, a, b *Record) []Seal {
	n := len(a.Seals()) + len(b.Seals())
	if n == 0 {
		return nil
	}
	all := make([]Seal, 0, n)
	all = append(all, a.Seals()...)
	all = append(all, b.Seals()...)
	slices.SortFunc(all, compareSeals)
	kept := all[:0]
	for _, s := range all {
		// Two different seals starting at the same dot can only come from
		// an author that signed twice; the smaller signature is kept so
		// every replica keeps the same one.
		if len(kept) > 0 && bytes.Equal(kept[len(kept)-1].Key, s.Key) && kept[len(kept)-1].first() == s.first() {
			continue
		}
		if out.holdsAny(&s) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return slices.Clip(kept)
}

// holdsAny reports whether r holds a dot s covers.
func (r *Record) holdsAny(s *Seal) bool {
	rep := s.Replica()
	found := false
	r.writes(func(w dotWrite) bool {
		if w.dot.Replica == rep && s.covers(w.dot.Counter) >= 0 {
			found = true
		}
		return !found
	})
	return found
}

// SealCache remembers signatures that verified, so a seal relayed many
// times is verified once (and, in the simulator, a delta signature every
// holder receives). An entry is the key, the message and the signature
// together: a signature remembered for one key is no proof for another.
// It holds at most its capacity of entries (then it starts afresh). Safe
// for concurrent use; nil verifies every time.
type SealCache struct {
	mu   sync.Mutex
	max  int
	seen map[[32]byte]struct{}
}

// NewSealCache returns a cache of at most capacity entries (default 65536).
func NewSealCache(capacity int) *SealCache {
	if capacity <= 0 {
		capacity = 1 << 16
	}
	return &SealCache{max: capacity, seen: make(map[[32]byte]struct{})}
}

// Verify reports whether sig is key's ed25519 signature of msg, from
// memory if it verified before.
func (c *SealCache) Verify(key, msg, sig []byte) bool {
	if len(key) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	var h [32]byte
	if c != nil {
		hs := sha256.New()
		hs.Write(key)
		hs.Write(msg)
		hs.Write(sig)
		hs.Sum(h[:0])
		c.mu.Lock()
		_, ok := c.seen[h]
		c.mu.Unlock()
		if ok {
			return true
		}
	}
	if !ed25519.Verify(key, msg, sig) {
		return false
	}
	if c != nil {
		c.mu.Lock()
		if len(c.seen) >= c.max {
			clear(c.seen)
		}
		c.seen[h] = struct{}{}
		c.mu.Unlock()
	}
	return true
}

// VerifySeals checks that every dot held in m's records is covered by a
// seal of the replica it names, whose leaf matches what the dot wrote and
// whose signature verifies for ns and the record's id. Errors wrap
// ErrBadSeal. Dots only claimed by the context are not checked.
func (m *Map) VerifySeals(ns string, cache *SealCache) error {
	for _, id := range m.EntryIDs() {
		if err := m.records[id].VerifySeals(ns, id, cache); err != nil {
			return err
		}
	}
	return nil
}

// VerifySeals checks one record as Map.VerifySeals does.
func (r *Record) VerifySeals(ns, id string, cache *SealCache) error {
	verified := make([]bool, len(r.Seals()))
	var bad error
	r.writes(func(w dotWrite) bool {
		for i := range r.seals {
			s := &r.seals[i]
			if s.Replica() != w.dot.Replica {
				continue
			}
			j := s.covers(w.dot.Counter)
			if j < 0 {
				continue
			}
			if !verified[i] {
				if len(s.Leaves) != LeafSize*len(s.Counters) || !cache.Verify(s.Key, s.signedBytes(ns, id), s.Sig) {
					bad = fmt.Errorf("%w: record %q: the seal of %v from %d does not verify", ErrBadSeal, id, s.Replica(), s.first())
					return false
				}
				verified[i] = true
			}
			l := w.leaf(s.Nonce)
			if !bytes.Equal(l[:], s.Leaves[j*LeafSize:(j+1)*LeafSize]) {
				bad = fmt.Errorf("%w: record %q: dot %v does not match its seal", ErrBadSeal, id, w.dot)
				return false
			}
			return true
		}
		bad = fmt.Errorf("%w: record %q: dot %v is not sealed", ErrBadSeal, id, w.dot)
		return false
	})
	return bad
}

// replicaOfKey is ReplicaOfKey(key), remembered for the last key.
func (r *reader) replicaOfKey(key []byte) ReplicaID {
	if !r.sealRepOK || !bytes.Equal(key, r.sealKey[:]) {
		r.sealRep, r.sealRepOK = ReplicaOfKey(key), copy(r.sealKey[:], key) == len(r.sealKey)
	}
	return r.sealRep
}

// seals reads a record's seal list (the third part of a record) and checks
// it is canonical: sorted, each seal well formed and covering at least one
// dot the record holds. A view checks the same and keeps none.
func (r *reader) seals(rec *Record) error {
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n == 0 || n%5 != 0 {
		return corrupt("seal list length %d", n)
	}
	if !r.view {
		rec.seals = make([]Seal, 0, n/5)
	}
	var prev Seal           // its parts are slices of the input, like s's until kept
	var prevFirst [1]uint64 // prev's first counter (a view reuses s.Counters)
	for k := range n / 5 {
		var s Seal
		if s.Key, err = r.binRef(ed25519.PublicKeySize); err != nil {
			return err
		}
		if s.Nonce, err = r.binRef(SealNonceSize); err != nil {
			return err
		}
		if len(s.Key) != ed25519.PublicKeySize || len(s.Nonce) != SealNonceSize {
			return corrupt("seal key or nonce of the wrong size")
		}
		m, err := r.arrayLen()
		if err != nil {
			return err
		}
		if m == 0 {
			return corrupt("seal of no dots")
		}
		if r.dots += m; r.dots > r.lim.MaxDots {
			return tooLarge("dots", r.dots, r.lim.MaxDots)
		}
		if r.view {
			r.counters = slices.Grow(r.counters[:0], m)[:m]
			s.Counters = r.counters
		} else {
			s.Counters = make([]uint64, m)
		}
		for i := range m {
			if s.Counters[i], err = r.uint(); err != nil {
				return err
			}
			if s.Counters[i] == 0 || i > 0 && s.Counters[i] <= s.Counters[i-1] {
				return corrupt("seal counters not strictly increasing")
			}
		}
		if s.Leaves, err = r.binRef(LeafSize * m); err != nil {
			return err
		}
		if s.Sig, err = r.binRef(ed25519.SignatureSize); err != nil {
			return err
		}
		if len(s.Leaves) != LeafSize*m || len(s.Sig) != ed25519.SignatureSize {
			return corrupt("seal leaves or signature of the wrong size")
		}
		s.rep = r.replicaOfKey(s.Key)
		if k > 0 {
			if compareSeals(prev, s) >= 0 || bytes.Equal(prev.Key, s.Key) && prev.first() == s.first() {
				return corrupt("seals not strictly increasing")
			}
		}
		if !rec.holdsAny(&s) {
			return corrupt("seal of %v covers no dot of its record", s.rep)
		}
		prev, prevFirst[0] = s, s.first()
		prev.Counters = prevFirst[:]
		if !r.view {
			rec.seals = append(rec.seals, Seal{
				Key: bytes.Clone(s.Key), Nonce: bytes.Clone(s.Nonce), Counters: s.Counters,
				Leaves: bytes.Clone(s.Leaves), Sig: bytes.Clone(s.Sig), rep: s.rep,
			})
		}
	}
	return nil
}
