package search

import "sync/atomic"

// postings is one term's packed posting list: for each slot that contains
// the term, in ascending slot order, a varint of (slot delta << 1 | one)
// followed, when one is 0, by a varint of the weighted term frequency in
// half units (see Index.Put). one=1 stands for the commonest case, a single
// occurrence in the content (2 half units), so most postings take one or
// two bytes. Slots only grow (a replaced document gets a new slot), which
// keeps every list sorted without rewriting it.
type postings struct {
	buf   []byte
	n     uint32 // postings in buf, dead slots included
	last  uint32 // slot of the last posting, base of the next delta
	maxTF uint32 // largest half-unit frequency in buf
	minDL uint32 // shortest document (dl) in buf
	// blocks describes every run of blockLen postings: where it starts and
	// what bounds its scores, so a search can skip runs that cannot rank
	// and look a few documents up in a long list without decoding all of
	// it (searchPruned).
	blocks []block
	// liveDF caches how many of the postings are of live slots, for the
	// Index.deaths and n it was counted at (Index.liveDF). Searches share the
	// read lock, hence the atomic; it is a pointer so postings copy.
	liveDF *atomic.Pointer[dfCount]
}

func newPostings() postings { return postings{liveDF: new(atomic.Pointer[dfCount])} }

// dfCount is a live document frequency counted at a number of deaths and
// of postings.
type dfCount struct {
	deaths uint64
	n      uint32
	df     int
}

// blockLen is how many postings a block spans: a lookup decodes at most
// this many postings past the block it lands in.
const blockLen = 64

// block is one run of postings: the byte offset of its first posting and
// the slot that posting's delta is taken from (the previous posting's, 0
// for the first block), its largest frequency and its shortest document.
type block struct {
	base, off    uint32
	maxTF, minDL uint32
}

// tfOne is the half-unit frequency encoded by the low bit.
const tfOne = 2

// add appends a posting of slot, whose document is dl long, with the
// half-unit frequency tf2.
func (p *postings) add(slot, tf2, dl uint32) {
	if p.n%blockLen == 0 {
		p.blocks = append(p.blocks, block{base: p.last, off: uint32(len(p.buf)), maxTF: tf2, minDL: dl})
	} else {
		bl := &p.blocks[len(p.blocks)-1]
		bl.maxTF, bl.minDL = max(bl.maxTF, tf2), min(bl.minDL, dl)
	}
	if p.n == 0 {
		p.maxTF, p.minDL = tf2, dl
	} else {
		p.maxTF, p.minDL = max(p.maxTF, tf2), min(p.minDL, dl)
	}
	delta := uint64(slot - p.last) // the first delta is from slot 0
	if tf2 == tfOne {
		p.buf = appendUvarint(p.buf, delta<<1|1)
	} else {
		p.buf = appendUvarint(p.buf, delta<<1)
		p.buf = appendUvarint(p.buf, uint64(tf2))
	}
	p.last = slot
	p.n++
}

// postingIter decodes a postings buffer. It is a value type so the hot
// loop in Search keeps it in registers.
type postingIter struct {
	buf  []byte
	i    int
	slot uint32
	tf2  uint32
}

// next advances to the next posting; it reports false at the end.
func (it *postingIter) next() bool {
	if it.i >= len(it.buf) {
		return false
	}
	v := it.uvarint()
	it.slot += uint32(v >> 1)
	if v&1 == 1 {
		it.tf2 = tfOne
	} else {
		it.tf2 = uint32(it.uvarint())
	}
	return true
}

func (it *postingIter) uvarint() uint64 {
	b := it.buf[it.i]
	it.i++
	if b < 0x80 {
		return uint64(b)
	}
	x := uint64(b & 0x7f)
	for s := uint(7); ; s += 7 {
		b = it.buf[it.i]
		it.i++
		if b < 0x80 {
			return x | uint64(b)<<s
		}
		x |= uint64(b&0x7f) << s
	}
}

func appendUvarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}
