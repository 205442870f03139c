package epidemic

import (
	"encoding/binary"
	"time"
)

// received remembers the payloads this node has received, so each is
// delivered once, and keeps the recent ones to answer grafts. Both are
// first in, first out over one queue in order of receipt: ids are
// forgotten past CacheMaxIDs or CacheTTL, payloads (earlier) past
// PayloadTTL or PayloadMaxBytes. A forgotten payload is answered by no
// graft; a forgotten id is delivered again if the payload comes back.
//
// The entries are the queue's elements themselves, in blocks of
// blockLen, and the map names each by its number in order of receipt: a
// node remembers every id it received for CacheTTL (ten minutes), so at
// 100 nodes × 10k operations these were ~150 MB of the simulator's live
// heap, and an entry of its own beside its queue slot cost 112 bytes and
// an object for the collector to mark per id. Blocks, not one slice: a
// slice grown by doubling held up to twice the entries it had, and these
// are 120 bytes. The map is keyed by an id's first 8 bytes (a slot of 16
// bytes, not 40), and the entry it names is compared whole: an id whose
// first 8 bytes a remembered id has already (by chance, or made so by a
// peer: 2^32 tries) goes in a map of its own (clash). The few entries a
// KindWant pulled keep their askers aside (asked).
type received struct {
	maxIDs   int
	ttl      time.Duration
	pTTL     time.Duration
	maxBytes int

	m      map[uint64]uint64 // an id's first 8 bytes → its number in order of receipt
	clash  map[MsgID]uint64  // ids whose first 8 bytes another id had in m
	blocks [][]entry         // entries first..next-1, blockLen a block
	first  uint64            // the number of blocks[0][0]
	head   uint64            // the first remembered; first ≤ head ≤ next
	pHead  uint64            // entries from pHead on may hold their payload; head ≤ pHead
	next   uint64            // the number the next id gets
	bytes  int               // payload bytes held
	// asked: for the ids pulled by a KindWant, the peers asked; their
	// answers are not pushes.
	asked map[MsgID][]PeerID
}

// blockLen is the entries in a block: small, as a node holds a received
// set per tree it is in, most of them with few ids.
const blockLen = 32

// entry is one id received, in order of receipt. A pointer to it (get,
// add) is valid until the next trim.
type entry struct {
	id      MsgID
	at      time.Time
	payload []byte // nil once dropped
	round   int    // hops it took to arrive (0: broadcast here)
	from    PeerID // "" when broadcast here
	origin  PeerID
}

func newReceived(c *Config) *received {
	return &received{maxIDs: c.CacheMaxIDs, ttl: c.CacheTTL, pTTL: c.PayloadTTL, maxBytes: c.PayloadMaxBytes, m: map[uint64]uint64{}, clash: map[MsgID]uint64{}, asked: map[MsgID][]PeerID{}}
}

// at is entry number i (first ≤ i < next).
func (r *received) at(i uint64) *entry {
	i -= r.first
	return &r.blocks[i/blockLen][i%blockLen]
}

// short is the key of id in m.
func short(id MsgID) uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// get returns id's entry, or nil.
func (r *received) get(id MsgID) *entry {
	if i, ok := r.m[short(id)]; ok {
		if e := r.at(i); e.id == id {
			return e
		}
	}
	if i, ok := r.clash[id]; ok {
		return r.at(i)
	}
	return nil
}

// add remembers e (received at e.at, pulled from the peers in asked) and
// returns the entry kept.
func (r *received) add(e entry, asked []PeerID) *entry {
	if n := len(r.blocks); n == 0 || len(r.blocks[n-1]) == blockLen {
		r.blocks = append(r.blocks, make([]entry, 0, blockLen))
	}
	last := &r.blocks[len(r.blocks)-1]
	*last = append(*last, e)
	if _, taken := r.m[short(e.id)]; taken {
		r.clash[e.id] = r.next
	} else {
		r.m[short(e.id)] = r.next
	}
	r.next++
	if len(asked) > 0 {
		r.asked[e.id] = asked
	}
	r.bytes += len(e.payload)
	r.trim(e.at)
	return r.get(e.id)
}

// askedOf returns the peers id was pulled from (nil for most ids).
func (r *received) askedOf(id MsgID) []PeerID { return r.asked[id] }

// trim forgets what is past its bounds at now.
func (r *received) trim(now time.Time) {
	for r.head < r.next {
		q := r.at(r.head)
		if int(r.next-r.head) <= r.maxIDs && now.Sub(q.at) < r.ttl {
			break
		}
		r.dropPayload(q)
		if i, ok := r.m[short(q.id)]; ok && i == r.head {
			delete(r.m, short(q.id))
		} else {
			delete(r.clash, q.id)
		}
		delete(r.asked, q.id)
		*q = entry{}
		r.head++
	}
	r.pHead = max(r.pHead, r.head)
	for r.pHead < r.next {
		q := r.at(r.pHead)
		if r.bytes <= r.maxBytes && now.Sub(q.at) < r.pTTL {
			break
		}
		r.dropPayload(q)
		r.pHead++
	}
	// Blocks wholly forgotten go; the last stays to be filled.
	for len(r.blocks) > 1 && r.head-r.first >= blockLen {
		r.blocks[0] = nil
		r.blocks = r.blocks[1:]
		r.first += blockLen
	}
}

// restamp gives the ids received at the zero time (before the node had a
// time: Node.start) the time now; they are the first of the queue.
func (r *received) restamp(now time.Time) {
	for i := r.head; i < r.next && r.at(i).at.IsZero(); i++ {
		r.at(i).at = now
	}
}

func (r *received) dropPayload(e *entry) {
	r.bytes -= len(e.payload)
	e.payload = nil
}

func (r *received) len() int { return int(r.next - r.head) }

// recent calls fn for the ids received since, newest first, until fn
// returns false.
func (r *received) recent(since time.Time, fn func(MsgID, *entry) bool) {
	for i := r.next; i > r.head; i-- {
		q := r.at(i - 1)
		if q.at.Before(since) || !fn(q.id, q) {
			return
		}
	}
}
