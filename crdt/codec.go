package crdt

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// encodingVersion leads every encoding this package writes.
const encodingVersion = 1

// writer produces the canonical msgpack encoding: arrays only, compact
// integers, replica ids replaced by indexes into a sorted table written once,
// timestamps written relative to the smallest one.
type writer struct {
	buf  bytes.Buffer
	enc  *msgpack.Encoder
	idx  map[ReplicaID]int
	base Timestamp
}

func newWriter() *writer {
	w := &writer{idx: make(map[ReplicaID]int)}
	w.enc = msgpack.NewEncoder(&w.buf)
	return w
}

// Writes to a bytes.Buffer cannot fail, so the encoder's errors are dropped.
func (w *writer) array(n int)    { _ = w.enc.EncodeArrayLen(n) }
func (w *writer) uint(v uint64)  { _ = w.enc.EncodeUint(v) }
func (w *writer) str(s string)   { _ = w.enc.EncodeString(s) }
func (w *writer) bin(b []byte)   { _ = w.enc.EncodeBytes(nonNil(b)) }
func (w *writer) dot(d Dot)      { w.uint(uint64(w.idx[d.Replica])); w.uint(d.Counter) }
func (w *writer) ts(t Timestamp) { w.uint(uint64(t - w.base)) }
func (w *writer) bytes() []byte  { return w.buf.Bytes() }
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// replicaTable writes the sorted replica table and indexes it.
func (w *writer) replicaTable(set map[ReplicaID]struct{}) {
	rs := make([]ReplicaID, 0, len(set))
	for r := range set {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	w.array(len(rs))
	for i, r := range rs {
		w.idx[r] = i
		w.uint(uint64(r))
	}
}

// context writes every replica's intervals as flattened triples
// (replica index, first counter, length - 1), ordered by replica and counter.
// An interval made only of the store's own dots is left out: the decoder
// adds store dots back, which restores it exactly (a single-op delta then
// pays for its new dot once).
func (w *writer) context(c *Context, store map[Dot]struct{}) {
	var out []span
	for _, sp := range c.iv {
		if !allStored(sp, store) {
			out = append(out, sp)
		}
	}
	w.array(3 * len(out))
	for _, sp := range out {
		w.uint(uint64(w.idx[sp.r]))
		w.uint(sp.lo)
		w.uint(sp.hi - sp.lo)
	}
}

func allStored(sp span, store map[Dot]struct{}) bool {
	if uint64(len(store)) < sp.hi-sp.lo+1 {
		return false
	}
	for c := sp.lo; c <= sp.hi; c++ {
		if _, ok := store[Dot{sp.r, c}]; !ok {
			return false
		}
	}
	return true
}

func (w *writer) dotSet(ds DotSet) {
	w.array(2 * len(ds))
	for _, d := range ds {
		w.dot(d)
	}
}

// record writes [fields, sets] or, when it has seals, [fields, sets,
// seals]: fields flattened as name, replica, counter, timestamp, value; sets
// as name, [element, dots]; seals flattened as key, nonce, [counters],
// leaves, signature.
func (w *writer) record(r *Record) {
	mustNotBeView(r, "encoding")
	if len(r.seals) > 0 {
		w.array(3)
	} else {
		w.array(2)
	}
	names := r.FieldNames()
	w.array(5 * len(names))
	for _, n := range names {
		f := r.fields[n]
		w.str(n)
		w.dot(f.Dot)
		w.ts(f.TS)
		w.bin(f.Value)
	}
	sets := make([]string, 0, len(setsOf(r)))
	for n := range setsOf(r) {
		sets = append(sets, n)
	}
	slices.Sort(sets)
	w.array(2 * len(sets))
	for _, n := range sets {
		w.str(n)
		elems := r.Elements(n)
		w.array(2 * len(elems))
		for _, e := range elems {
			w.str(e)
			w.dotSet(r.sets[n][e])
		}
	}
	if len(r.seals) > 0 {
		w.array(5 * len(r.seals))
		for _, s := range r.seals {
			w.bin(s.Key)
			w.bin(s.Nonce)
			w.array(len(s.Counters))
			for _, c := range s.Counters {
				w.uint(c)
			}
			w.bin(s.Leaves)
			w.bin(s.Sig)
		}
	}
}

func recordReplicas(r *Record, into map[ReplicaID]struct{}, dots map[Dot]struct{}, base *Timestamp, first *bool) {
	if r == nil {
		return
	}
	for _, f := range r.fields {
		into[f.Dot.Replica] = struct{}{}
		if dots != nil {
			dots[f.Dot] = struct{}{}
		}
		if *first || f.TS < *base {
			*base, *first = f.TS, false
		}
	}
	for _, s := range r.sets {
		for _, ds := range s {
			for _, d := range ds {
				into[d.Replica] = struct{}{}
				if dots != nil {
					dots[d] = struct{}{}
				}
			}
		}
	}
}

// Encode returns the canonical encoding of the map:
// [version, replicas, base, intervals, records, retracted].
func (m *Map) Encode() []byte {
	w := newWriter()
	reps := make(map[ReplicaID]struct{})
	storeDots := make(map[Dot]struct{})
	first := true
	hint := 64 + 12*m.ctx.Intervals() + 8*len(m.retracted)
	for id, r := range m.records {
		recordReplicas(r, reps, storeDots, &w.base, &first)
		hint += len(id) + 4 + encodedSizeHint(r)
	}
	for id := range m.retracted {
		hint += len(id)
	}
	w.buf.Grow(hint) // once, not doubling from 64 bytes: every delta and sync answer sent is encoded
	m.ctx.replicas(reps)
	w.array(6)
	w.uint(encodingVersion)
	w.replicaTable(reps)
	w.uint(uint64(w.base))
	w.context(&m.ctx, storeDots)
	ids := m.EntryIDs()
	w.array(2 * len(ids))
	for _, id := range ids {
		w.str(id)
		w.record(m.records[id])
	}
	ret := m.RetractedIDs()
	w.array(len(ret))
	for _, id := range ret {
		w.str(id)
	}
	return w.bytes()
}

// EncodeRecord returns the canonical encoding of one record, as a node
// stores it: [version, replicas, base, record].
func EncodeRecord(r *Record) []byte {
	w := newWriter()
	w.buf.Grow(encodedSizeHint(r))
	reps := make(map[ReplicaID]struct{})
	first := true
	recordReplicas(r, reps, nil, &w.base, &first)
	w.array(4)
	w.uint(encodingVersion)
	w.replicaTable(reps)
	w.uint(uint64(w.base))
	if r == nil {
		r = &Record{}
	}
	w.record(r)
	return w.bytes()
}

// encodedSizeHint is about the size of r's encoding, at least: the buffer
// is grown once instead of doubling from 64 bytes (a sealed memory record
// is a kilobyte or two, encoded on every local write).
func encodedSizeHint(r *Record) int {
	if r == nil {
		return 64
	}
	n := 64
	for name, f := range r.fields {
		n += len(name) + len(f.Value) + 24
	}
	for name, elems := range r.sets {
		n += len(name) + 4
		for e, ds := range elems {
			n += len(e) + 4 + 12*len(ds)
		}
	}
	for _, s := range r.seals {
		n += len(s.Key) + len(s.Nonce) + len(s.Leaves) + len(s.Sig) + 9*len(s.Counters) + 16
	}
	return n
}

// Encode returns the canonical encoding of the context:
// [version, replicas, intervals].
//
// It writes the bytes the writer would (replicaTable, then context with no
// store dots) straight into one slice of the exact size: a store persists
// its context on every commit, and the writer's maps and encoder cost
// several times the encoding itself (TestContextEncodeAsWriter keeps the
// two equal).
func (c *Context) Encode() []byte {
	nr, size := 0, 0
	for i, sp := range c.iv {
		if i == 0 || c.iv[i-1].r != sp.r {
			nr++
			size += uintLen(uint64(sp.r))
		}
		size += uintLen(uint64(nr-1)) + uintLen(sp.lo) + uintLen(sp.hi-sp.lo)
	}
	size += 1 + 1 + arrayLenLen(nr) + arrayLenLen(3*len(c.iv))
	b := make([]byte, 0, size)
	b = appendArrayLen(b, 3)
	b = appendUint(b, encodingVersion)
	b = appendArrayLen(b, nr)
	for i, sp := range c.iv {
		if i == 0 || c.iv[i-1].r != sp.r {
			b = appendUint(b, uint64(sp.r))
		}
	}
	b = appendArrayLen(b, 3*len(c.iv))
	idx := -1
	for i, sp := range c.iv {
		if i == 0 || c.iv[i-1].r != sp.r {
			idx++
		}
		b = appendUint(b, uint64(idx))
		b = appendUint(b, sp.lo)
		b = appendUint(b, sp.hi-sp.lo)
	}
	return b
}

// arrayLenLen and uintLen are the lengths of what appendArrayLen and
// appendUint append.
func arrayLenLen(l int) int {
	switch {
	case l < 16:
		return 1
	case l <= math.MaxUint16:
		return 3
	}
	return 5
}

func uintLen(v uint64) int {
	switch {
	case v <= math.MaxInt8:
		return 1
	case v <= math.MaxUint8:
		return 2
	case v <= math.MaxUint16:
		return 3
	case v <= math.MaxUint32:
		return 5
	}
	return 9
}

// appendArrayLen and appendUint append what msgpack's EncodeArrayLen and
// EncodeUint write: the shortest form.
func appendArrayLen(b []byte, l int) []byte {
	switch {
	case l < 16:
		return append(b, 0x90|byte(l))
	case l <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(l))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(l))
}

func appendUint(b []byte, v uint64) []byte {
	switch {
	case v <= math.MaxInt8:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

// Encode returns the canonical encoding of the set:
// [version, replicas, intervals, elements].
func (s *ORSet) Encode() []byte {
	w := newWriter()
	reps := make(map[ReplicaID]struct{})
	storeDots := make(map[Dot]struct{})
	for _, ds := range s.elems {
		for _, d := range ds {
			reps[d.Replica] = struct{}{}
			storeDots[d] = struct{}{}
		}
	}
	s.ctx.replicas(reps)
	w.array(4)
	w.uint(encodingVersion)
	w.replicaTable(reps)
	w.context(&s.ctx, storeDots)
	elems := s.Elements()
	w.array(2 * len(elems))
	for _, e := range elems {
		w.str(e)
		w.dotSet(s.elems[e])
	}
	return w.bytes()
}

// Encode returns the canonical encoding of the set: [version, elements].
func (s *GSet) Encode() []byte {
	w := newWriter()
	elems := s.Elements()
	w.array(2)
	w.uint(encodingVersion)
	w.array(len(elems))
	for _, e := range elems {
		w.str(e)
	}
	return w.bytes()
}
