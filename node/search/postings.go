package search

import (
	"slices"
	"sync/atomic"
)

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
// for the first block), and its frontier.
type block struct {
	base, off uint32
	front     [blockFront]frontPoint // unused points are zero
}

// frontPoint is one point of a block's frontier: a frequency and a document
// length such that every posting of the block has at most that frequency
// in a document at least that long, for one of the block's points. BM25
// grows with the frequency and falls with the length, so the best score a
// block can give, at whatever average length, is the best of its points:
// a bound as tight as scoring the block, where one corner (largest
// frequency, shortest document) overstates it whenever the two come from
// different documents. Both are saturated at maxFront16: a length is then
// understated (the bound stays a bound); a frequency of maxFront16 stands
// for the term's largest (postings.maxTF).
type frontPoint struct {
	tf2, dl uint16
}

const (
	maxFront16 = 1<<16 - 1
	// blockFront caps a block's frontier: past it, two neighbouring
	// points are replaced by their corner, which bounds both. Two points
	// keep a block at 16 bytes, as one corner took before (doc.go: the
	// heap counts at the node's memory limit).
	blockFront = 2
)

// tfOne is the half-unit frequency encoded by the low bit.
const tfOne = 2

// add appends a posting of slot, whose document is dl long, with the
// half-unit frequency tf2.
func (p *postings) add(slot, tf2, dl uint32) {
	if p.n%blockLen == 0 {
		p.blocks = append(p.blocks, block{base: p.last, off: uint32(len(p.buf))})
	}
	q := frontPoint{uint16(min(tf2, maxFront16)), uint16(min(dl, maxFront16))}
	bl := &p.blocks[len(p.blocks)-1]
	var room [blockFront + 1]frontPoint
	pts := addToFront(append(room[:0], frontOf(bl)...), q)
	bl.front = [blockFront]frontPoint{}
	copy(bl.front[:], pts)
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

// addToFront adds q to the frontier pts, kept in ascending frequency (and
// so ascending length) order, none dominating another, at most blockFront
// points, and returns it.
func addToFront(pts []frontPoint, q frontPoint) []frontPoint {
	for _, f := range pts {
		if f.tf2 >= q.tf2 && f.dl <= q.dl {
			return pts // a point as frequent in a document as short
		}
	}
	kept := pts[:0] // the points q does not dominate, in order
	for _, f := range pts {
		if f.tf2 > q.tf2 || f.dl < q.dl {
			kept = append(kept, f)
		}
	}
	pos := len(kept)
	for i, f := range kept {
		if f.tf2 > q.tf2 {
			pos = i
			break
		}
	}
	pts = slices.Insert(kept, pos, q)
	if len(pts) > blockFront {
		// Merge the neighbours closest in length: their corner (the
		// longer one's frequency, the shorter one's length) overstates
		// the longer one least.
		m := 0
		for i := 1; i+1 < len(pts); i++ {
			if pts[i+1].dl-pts[i].dl < pts[m+1].dl-pts[m].dl {
				m = i
			}
		}
		pts[m].tf2 = pts[m+1].tf2
		pts = slices.Delete(pts, m+1, m+2)
	}
	return pts
}

// frontOf is bl's frontier.
func frontOf(bl *block) []frontPoint {
	n := 0
	for n < blockFront && bl.front[n].tf2 != 0 {
		n++
	}
	return bl.front[:n]
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

// decodeAt decodes the posting at buf[i], whose delta is taken from slot:
// postingIter.next for loops that keep the iterator in locals. i must be
// below len(buf).
func decodeAt(buf []byte, i int, slot uint32) (next int, s, tf2 uint32) {
	it := postingIter{buf: buf, i: i, slot: slot}
	it.next()
	return it.i, it.slot, it.tf2
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
