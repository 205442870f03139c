package epidemic

import (
	"encoding/binary"
	"math"
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
// slice grown by doubling held up to twice the entries it had. The map is
// keyed by an id's first 8 bytes (a slot of 16 bytes, not 40), and the
// entry it names is compared whole: an id whose first 8 bytes a
// remembered id has already (by chance, or made so by a peer: 2^32 tries)
// goes in a map of its own (clash). The few entries a KindWant pulled
// keep their askers aside (asked).
//
// An entry is 56 bytes, not 120 (at 100 × 10k: 96 MB of the live heap at
// the end, then ~45 MB): its time is an offset from the first time the set
// saw (base), its two peers (sender and origin) numbers in a table of the
// peers named (peers), and its payload, held for PayloadTTL only (30 s of
// the ten minutes), a slot in blocks of its own (pays) that go as the
// payloads do.
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
	// pays holds the payloads of entries payFirst..next-1 (nil: dropped),
	// blockLen a block, as blocks hold the entries; blocks wholly before
	// pHead go.
	pays     [][][]byte
	payFirst uint64
	// base is the first time that is not zero an entry was given (the
	// zero time until then): entries keep their time as an offset from it.
	base time.Time
	// peers names the peers entries refer to by number (0 is ""), peerNum
	// numbers them; at peersMax names the table is rebuilt from the
	// entries remembered (compactPeers), so it stays bounded.
	peers    []PeerID
	peerNum  map[PeerID]uint32
	peersMax int
	// asked: for the ids pulled by a KindWant, by their entry's number,
	// the peers asked; their answers are not pushes.
	asked map[uint64][]PeerID
}

// blockLen is the entries in a block: small, as a node holds a received
// set per tree it is in, most of them with few ids.
const blockLen = 32

// minPeersMax is the smallest table of peers that is rebuilt when full.
const minPeersMax = 256

// zeroAt is the offset of an entry received at the zero time (before the
// node had one: Node.start restamps it).
const zeroAt = math.MinInt64

// entry is one id received, in order of receipt. A pointer to it (get,
// add) is valid until the next trim or add.
type entry struct {
	id     MsgID
	off    int64 // its time: base + off nanoseconds; zeroAt for the zero time
	round  int   // hops it took to arrive (0: broadcast here)
	from   uint32
	origin uint32 // peers[from], peers[origin]; from is 0 ("") when broadcast here
}

// arrival is what add remembers of a payload received.
type arrival struct {
	id           MsgID
	at           time.Time
	payload      []byte
	round        int
	from, origin PeerID
}

func newReceived(c *Config) *received {
	return &received{maxIDs: c.CacheMaxIDs, ttl: c.CacheTTL, pTTL: c.PayloadTTL, maxBytes: c.PayloadMaxBytes,
		m: map[uint64]uint64{}, clash: map[MsgID]uint64{}, asked: map[uint64][]PeerID{},
		peers: []PeerID{""}, peerNum: map[PeerID]uint32{}, peersMax: minPeersMax}
}

// entryAt is entry number i (first ≤ i < next).
func (r *received) entryAt(i uint64) *entry {
	i -= r.first
	return &r.blocks[i/blockLen][i%blockLen]
}

// short is the key of id in m.
func short(id MsgID) uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// find returns the number of id's entry.
func (r *received) find(id MsgID) (uint64, bool) {
	if i, ok := r.m[short(id)]; ok && r.entryAt(i).id == id {
		return i, true
	}
	i, ok := r.clash[id]
	return i, ok
}

// get returns id's entry, or nil.
func (r *received) get(id MsgID) *entry {
	if i, ok := r.find(id); ok {
		return r.entryAt(i)
	}
	return nil
}

// payload returns id's payload, nil if it was dropped or id forgotten.
func (r *received) payload(id MsgID) []byte {
	if i, ok := r.find(id); ok && i >= r.pHead {
		return *r.payAt(i)
	}
	return nil
}

// payAt is entry number i's payload slot (payFirst ≤ i < next).
func (r *received) payAt(i uint64) *[]byte {
	i -= r.payFirst
	return &r.pays[i/blockLen][i%blockLen]
}

// from and origin name e's sender and origin; setFrom changes its sender.
func (r *received) from(e *entry) PeerID   { return r.peers[e.from] }
func (r *received) origin(e *entry) PeerID { return r.peers[e.origin] }
func (r *received) setFrom(e *entry, p PeerID) {
	r.room(1)
	e.from = r.num(p)
}

// timeOf is the time e was received at.
func (r *received) timeOf(e *entry) time.Time {
	if e.off == zeroAt {
		return time.Time{}
	}
	return r.base.Add(time.Duration(e.off))
}

// offset is t as an entry keeps it.
func (r *received) offset(t time.Time) int64 {
	if t.IsZero() {
		return zeroAt
	}
	if r.base.IsZero() {
		r.base = t
	}
	return max(int64(t.Sub(r.base)), zeroAt+1) // Sub saturates at zeroAt
}

// num returns p's number in peers, numbering it if new. Call room first:
// a rebuild renumbers what num returned before it.
func (r *received) num(p PeerID) uint32 {
	if p == "" {
		return 0
	}
	if k, ok := r.peerNum[p]; ok {
		return k
	}
	k := uint32(len(r.peers))
	r.peers = append(r.peers, p)
	r.peerNum[p] = k
	return k
}

// room makes room in peers for n more names.
func (r *received) room(n int) {
	if len(r.peers)+n > r.peersMax {
		r.compactPeers()
	}
}

// compactPeers rebuilds peers from the entries remembered, in their
// order, and allows twice as many names before the next rebuild: a
// table of every peer ever named would grow without bound.
func (r *received) compactPeers() {
	peers := []PeerID{""}
	num := map[PeerID]uint32{}
	renum := func(k uint32) uint32 {
		p := r.peers[k]
		if p == "" {
			return 0
		}
		n, ok := num[p]
		if !ok {
			n = uint32(len(peers))
			peers = append(peers, p)
			num[p] = n
		}
		return n
	}
	for i := r.head; i < r.next; i++ {
		e := r.entryAt(i)
		e.from, e.origin = renum(e.from), renum(e.origin)
	}
	r.peers, r.peerNum = peers, num
	r.peersMax = max(minPeersMax, 2*len(peers))
}

// add remembers a (received at a.at, pulled from the peers in asked) and
// returns the entry kept.
func (r *received) add(a arrival, asked []PeerID) *entry {
	r.room(2)
	e := entry{id: a.id, off: r.offset(a.at), round: a.round, from: r.num(a.from), origin: r.num(a.origin)}
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
	if n := len(r.pays); n == 0 || len(r.pays[n-1]) == blockLen {
		if n == 0 { // the block holding next, slots before it empty
			r.payFirst = r.next - r.next%blockLen
		}
		r.pays = append(r.pays, make([][]byte, (r.next-r.payFirst)%blockLen, blockLen))
	}
	lastPay := &r.pays[len(r.pays)-1]
	*lastPay = append(*lastPay, a.payload)
	r.next++
	if len(asked) > 0 {
		r.asked[r.next-1] = asked
	}
	r.bytes += len(a.payload)
	r.trim(a.at)
	return r.get(e.id)
}

// askedOf returns the peers id was pulled from (nil for most ids).
func (r *received) askedOf(id MsgID) []PeerID {
	if len(r.asked) == 0 {
		return nil
	}
	i, ok := r.find(id)
	if !ok {
		return nil
	}
	return r.asked[i]
}

// trim forgets what is past its bounds at now.
func (r *received) trim(now time.Time) {
	for r.head < r.next {
		q := r.entryAt(r.head)
		if int(r.next-r.head) <= r.maxIDs && now.Sub(r.timeOf(q)) < r.ttl {
			break
		}
		r.dropPayload(r.head)
		if i, ok := r.m[short(q.id)]; ok && i == r.head {
			delete(r.m, short(q.id))
		} else {
			delete(r.clash, q.id)
		}
		delete(r.asked, r.head)
		*q = entry{}
		r.head++
	}
	r.pHead = max(r.pHead, r.head)
	for r.pHead < r.next {
		q := r.entryAt(r.pHead)
		if r.bytes <= r.maxBytes && now.Sub(r.timeOf(q)) < r.pTTL {
			break
		}
		r.dropPayload(r.pHead)
		r.pHead++
	}
	// Blocks wholly forgotten go (payload blocks wholly dropped); the last
	// stays to be filled.
	for len(r.pays) > 1 && r.pHead-r.payFirst >= blockLen {
		r.pays[0] = nil
		r.pays = r.pays[1:]
		r.payFirst += blockLen
	}
	for len(r.blocks) > 1 && r.head-r.first >= blockLen {
		r.blocks[0] = nil
		r.blocks = r.blocks[1:]
		r.first += blockLen
	}
}

// restamp gives the ids received at the zero time (before the node had a
// time: Node.start) the time now; they are the first of the queue.
func (r *received) restamp(now time.Time) {
	for i := r.head; i < r.next && r.entryAt(i).off == zeroAt; i++ {
		r.entryAt(i).off = r.offset(now)
	}
}

// dropPayload drops entry number i's payload.
func (r *received) dropPayload(i uint64) {
	if i < r.payFirst {
		return
	}
	p := r.payAt(i)
	r.bytes -= len(*p)
	*p = nil
}

func (r *received) len() int { return int(r.next - r.head) }

// recent calls fn for the ids received since, newest first, until fn
// returns false.
func (r *received) recent(since time.Time, fn func(MsgID, *entry) bool) {
	for i := r.next; i > r.head; i-- {
		q := r.entryAt(i - 1)
		if r.timeOf(q).Before(since) || !fn(q.id, q) {
			return
		}
	}
}
