package search

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
	maxTF uint32 // largest half-unit frequency in buf: bounds the term's score
	// skips marks the start of every skipEvery-th posting after the first
	// block, so a search can look a few documents up in a long list
	// without decoding all of it (searchPruned).
	skips []skip
}

// skipEvery is how many postings a skip entry spans: a lookup decodes at
// most this many postings past the skip it lands on.
const skipEvery = 64

// skip is where a block of postings starts: the byte offset of its first
// posting and the slot its delta is taken from (the previous posting's).
type skip struct {
	base, off uint32
}

// tfOne is the half-unit frequency encoded by the low bit.
const tfOne = 2

func (p *postings) add(slot, tf2 uint32) {
	if p.n > 0 && p.n%skipEvery == 0 {
		p.skips = append(p.skips, skip{base: p.last, off: uint32(len(p.buf))})
	}
	p.maxTF = max(p.maxTF, tf2)
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

// seek advances to the first posting at or after slot target, jumping
// over whole blocks with skips (the list's skip entries; *blk is the index
// of the first one not yet passed, kept between calls as target only
// grows). It reports false at the end. The iterator must not be past
// target already.
func (it *postingIter) seek(skips []skip, blk *int, target uint32) bool {
	j := *blk
	for j < len(skips) && skips[j].base < target {
		j++
	}
	*blk = j
	// Every posting from skips[j-1] on is at a slot above its base,
	// every one before it at or below: the target, if present, is there.
	if j > 0 && int(skips[j-1].off) > it.i {
		it.i, it.slot = int(skips[j-1].off), skips[j-1].base
	}
	for it.next() {
		if it.slot >= target {
			return true
		}
	}
	return false
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
