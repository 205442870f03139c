package crdt

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math"
)

// reader decodes the subset of msgpack the writer produces. Every length is
// checked against the bytes that remain before anything is allocated.
type reader struct {
	b        []byte
	off      int
	lim      Limits
	replicas []ReplicaID
	base     Timestamp
	dots     int

	// A view (DecodeRecordView) owns b: values are slices of it, not
	// copies, and seals are checked as the full decoder checks them but
	// not kept (counters: a scratch list reused from seal to seal).
	view     bool
	counters []uint64
	repBuf   [4]ReplicaID // the replica table when it is this small
	// sealKey's replica is sealRep (if sealRepOK): the last seal's key, a
	// copy (a reader may be reused over other bytes). The seals of a map
	// or record are mostly by few keys, and deriving the replica hashes
	// the key (0.3% of a 100-node simulation's CPU, once per seal).
	sealKey   [ed25519.PublicKeySize]byte
	sealRep   ReplicaID
	sealRepOK bool
}

func newReader(b []byte, lim Limits) (*reader, error) {
	r := &reader{}
	return r, r.init(b, lim)
}

func (r *reader) init(b []byte, lim Limits) error {
	lim = lim.withDefaults()
	if len(b) > lim.MaxBytes {
		return fmt.Errorf("%w: %w: %d bytes (max %d)", ErrCorrupt, ErrTooLarge, len(b), lim.MaxBytes)
	}
	r.b, r.lim = b, lim
	return nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func tooLarge(what string, n, limit int) error {
	return fmt.Errorf("%w: %w: %s %d (max %d)", ErrCorrupt, ErrTooLarge, what, n, limit)
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(n int) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, corrupt("truncated at byte %d", r.off)
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p, nil
}

func (r *reader) be(n int) (uint64, error) {
	p, err := r.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

func (r *reader) code() (byte, error) {
	p, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// arrayLen reads an array header; every element takes at least one byte.
func (r *reader) arrayLen() (int, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c >= 0x90 && c <= 0x9f:
		n = uint64(c & 0x0f)
	case c == 0xdc:
		n, err = r.be(2)
	case c == 0xdd:
		n, err = r.be(4)
	default:
		return 0, corrupt("expected array at byte %d, found 0x%02x", r.off-1, c)
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(r.remaining()) {
		return 0, corrupt("array of %d elements exceeds the %d bytes left", n, r.remaining())
	}
	return int(n), nil
}

func (r *reader) uint() (uint64, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= 0x7f:
		return uint64(c), nil
	case c == 0xcc:
		return r.be(1)
	case c == 0xcd:
		return r.be(2)
	case c == 0xce:
		return r.be(4)
	case c == 0xcf:
		return r.be(8)
	}
	return 0, corrupt("expected unsigned integer at byte %d, found 0x%02x", r.off-1, c)
}

func (r *reader) rawLen(str bool) (int, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case str && c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case str && c == 0xd9, !str && c == 0xc4:
		n, err = r.be(1)
	case str && c == 0xda, !str && c == 0xc5:
		n, err = r.be(2)
	case str && c == 0xdb, !str && c == 0xc6:
		n, err = r.be(4)
	default:
		return 0, corrupt("expected %s at byte %d, found 0x%02x", map[bool]string{true: "string", false: "bytes"}[str], r.off-1, c)
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(r.remaining()) {
		return 0, corrupt("length %d exceeds the %d bytes left", n, r.remaining())
	}
	return int(n), nil
}

func (r *reader) str(what string, limit int) (string, error) {
	n, err := r.rawLen(true)
	if err != nil {
		return "", err
	}
	if n == 0 || n > limit {
		if n > limit {
			return "", tooLarge(what+" length", n, limit)
		}
		return "", corrupt("empty %s", what)
	}
	p, err := r.take(n)
	return string(p), err
}

// bin reads a byte string: a copy, or in a view a slice of the input
// (capped, so an append to it cannot write into what follows).
func (r *reader) bin(limit int) ([]byte, error) {
	p, err := r.binRef(limit)
	if err != nil || r.view {
		return p, err
	}
	return bytes.Clone(p), nil
}

// binRef reads a byte string as a slice of the input, capped.
func (r *reader) binRef(limit int) ([]byte, error) {
	n, err := r.rawLen(false)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, tooLarge("value length", n, limit)
	}
	p, err := r.take(n)
	if err != nil {
		return nil, err
	}
	return p[:n:n], nil
}

func (r *reader) version() error {
	v, err := r.uint()
	if err != nil {
		return err
	}
	if v != encodingVersion {
		return corrupt("unknown encoding version %d", v)
	}
	return nil
}

func (r *reader) end() error {
	if r.remaining() != 0 {
		return corrupt("%d trailing bytes", r.remaining())
	}
	return nil
}

func (r *reader) header(n int) error {
	got, err := r.arrayLen()
	if err != nil {
		return err
	}
	if got != n {
		return corrupt("expected %d top-level elements, found %d", n, got)
	}
	return r.version()
}

func (r *reader) replicaTable() error {
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n > r.lim.MaxReplicas {
		return tooLarge("replicas", n, r.lim.MaxReplicas)
	}
	if n <= len(r.repBuf) {
		r.replicas = r.repBuf[:n]
	} else {
		r.replicas = make([]ReplicaID, n)
	}
	for i := range n {
		v, err := r.uint()
		if err != nil {
			return err
		}
		if v == 0 || (i > 0 && ReplicaID(v) <= r.replicas[i-1]) {
			return corrupt("replica table not strictly increasing and non-zero")
		}
		r.replicas[i] = ReplicaID(v)
	}
	return nil
}

func (r *reader) baseTS() error {
	v, err := r.uint()
	r.base = Timestamp(v)
	return err
}

func (r *reader) dot() (Dot, error) {
	i, err := r.uint()
	if err != nil {
		return Dot{}, err
	}
	if i >= uint64(len(r.replicas)) {
		return Dot{}, corrupt("replica index %d out of range", i)
	}
	c, err := r.uint()
	if err != nil {
		return Dot{}, err
	}
	if c == 0 {
		return Dot{}, corrupt("zero counter")
	}
	r.dots++
	if r.dots > r.lim.MaxDots {
		return Dot{}, tooLarge("dots", r.dots, r.lim.MaxDots)
	}
	return Dot{r.replicas[i], c}, nil
}

func (r *reader) ts() (Timestamp, error) {
	v, err := r.uint()
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint64-uint64(r.base) {
		return 0, corrupt("timestamp overflows")
	}
	return r.base + Timestamp(v), nil
}

// context reads intervals into c, checking they are ordered, disjoint and
// not adjacent (the one canonical form of a dot set).
func (r *reader) context(c *Context) error {
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n%3 != 0 {
		return corrupt("context length %d is not a multiple of 3", n)
	}
	prevIdx, prevHi := -1, uint64(0)
	for range n / 3 {
		i, err := r.uint()
		if err != nil {
			return err
		}
		if i >= uint64(len(r.replicas)) || int(i) < prevIdx {
			return corrupt("context replica index %d out of order or range", i)
		}
		lo, err := r.uint()
		if err != nil {
			return err
		}
		length, err := r.uint()
		if err != nil {
			return err
		}
		if lo == 0 || length > math.MaxUint64-lo {
			return corrupt("bad context interval %d+%d", lo, length)
		}
		if int(i) == prevIdx && lo <= prevHi+1 {
			return corrupt("context intervals overlap or touch")
		}
		if lo+length >= 1<<62 {
			return corrupt("context counter %d out of range", lo+length) // next dot would overflow
		}
		prevIdx, prevHi = int(i), lo+length
		if c.iv == nil {
			c.iv = make([]span, 0, n/3) // every interval, in order: one allocation
		}
		c.iv = append(c.iv, span{r.replicas[i], lo, lo + length})
	}
	return nil
}

func (r *reader) dotSet() (DotSet, error) {
	n, err := r.arrayLen()
	if err != nil {
		return nil, err
	}
	if n == 0 || n%2 != 0 {
		return nil, corrupt("dot list of odd or zero length")
	}
	ds := make(DotSet, 0, n/2)
	for k := range n / 2 {
		d, err := r.dot()
		if err != nil {
			return nil, err
		}
		if k > 0 && compareDots(ds[k-1], d) >= 0 {
			return nil, corrupt("dot list not strictly increasing")
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func (r *reader) record() (*Record, error) {
	rec := &Record{}
	if err := r.recordInto(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// recordInto decodes a record into rec, empty but for the maps it may
// reuse (cleared).
func (r *reader) recordInto(rec *Record) error {
	var parts int
	if n, err := r.arrayLen(); err != nil {
		return err
	} else if n != 2 && n != 3 {
		return corrupt("record of %d parts", n)
	} else {
		parts = n
	}
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if n%5 != 0 {
		return corrupt("field list length %d", n)
	}
	prev := ""
	for range n / 5 {
		name, err := r.str("field name", r.lim.MaxName)
		if err != nil {
			return err
		}
		if name <= prev {
			return corrupt("field names not strictly increasing")
		}
		prev = name
		d, err := r.dot()
		if err != nil {
			return err
		}
		ts, err := r.ts()
		if err != nil {
			return err
		}
		v, err := r.bin(r.lim.MaxValue)
		if err != nil {
			return err
		}
		if rec.fields == nil {
			rec.fields = make(map[string]Field, n/5)
		}
		rec.fields[name] = Field{Dot: d, TS: ts, Value: v}
	}
	n, err = r.arrayLen()
	if err != nil {
		return err
	}
	if n%2 != 0 {
		return corrupt("set list length %d", n)
	}
	prev = ""
	for range n / 2 {
		name, err := r.str("set name", r.lim.MaxName)
		if err != nil {
			return err
		}
		if name <= prev {
			return corrupt("set names not strictly increasing")
		}
		prev = name
		m, err := r.arrayLen()
		if err != nil {
			return err
		}
		if m == 0 || m%2 != 0 {
			return corrupt("element list length %d", m)
		}
		elems := make(map[string]DotSet, m/2)
		prevElem := ""
		for range m / 2 {
			e, err := r.str("element", r.lim.MaxString)
			if err != nil {
				return err
			}
			if e <= prevElem {
				return corrupt("elements not strictly increasing")
			}
			prevElem = e
			ds, err := r.dotSet()
			if err != nil {
				return err
			}
			elems[e] = ds
		}
		if rec.sets == nil {
			rec.sets = make(map[string]map[string]DotSet, n/2)
		}
		rec.sets[name] = elems
	}
	if parts == 3 {
		if err := r.seals(rec); err != nil {
			return err
		}
	}
	return nil
}

func addStoreDots(c *Context, rec *Record) {
	for _, d := range rec.Dots() {
		c.Add(d)
	}
}

// DecodeMap decodes an encoding written by Map.Encode. On any error it
// returns nil and an error matching ErrCorrupt.
func DecodeMap(b []byte, lim Limits) (*Map, error) {
	r, err := newReader(b, lim)
	if err != nil {
		return nil, err
	}
	m := NewMap()
	if err := r.header(6); err != nil {
		return nil, err
	}
	if err := r.replicaTable(); err != nil {
		return nil, err
	}
	if err := r.baseTS(); err != nil {
		return nil, err
	}
	if err := r.context(&m.ctx); err != nil {
		return nil, err
	}
	n, err := r.arrayLen()
	if err != nil {
		return nil, err
	}
	if n%2 != 0 || n/2 > r.lim.MaxRecords {
		if n%2 != 0 {
			return nil, corrupt("record list length %d", n)
		}
		return nil, tooLarge("records", n/2, r.lim.MaxRecords)
	}
	prev := ""
	for range n / 2 {
		id, err := r.str("id", r.lim.MaxString)
		if err != nil {
			return nil, err
		}
		if id <= prev {
			return nil, corrupt("record ids not strictly increasing")
		}
		prev = id
		rec, err := r.record()
		if err != nil {
			return nil, err
		}
		m.records[id] = rec
	}
	n, err = r.arrayLen()
	if err != nil {
		return nil, err
	}
	if n+len(m.records) > r.lim.MaxRecords {
		return nil, tooLarge("retracted ids", n, r.lim.MaxRecords)
	}
	prev = ""
	for range n {
		id, err := r.str("retracted id", r.lim.MaxString)
		if err != nil {
			return nil, err
		}
		if id <= prev {
			return nil, corrupt("retracted ids not strictly increasing")
		}
		prev = id
		if _, ok := m.records[id]; ok {
			return nil, corrupt("retracted id %q still has a record", id)
		}
		m.retracted[id] = struct{}{}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	for _, rec := range m.records {
		addStoreDots(&m.ctx, rec)
	}
	return m, nil
}

// DecodeRecord decodes an encoding written by EncodeRecord.
func DecodeRecord(b []byte, lim Limits) (*Record, error) {
	var r reader
	rec := &Record{}
	if err := r.decodeRecordInto(rec, b, lim); err != nil {
		return nil, err
	}
	return rec, nil
}

// DecodeRecordView decodes an encoding written by EncodeRecord for
// reading only: what it accepts and refuses, and the fields and sets of
// what it returns, are DecodeRecord's, but the record holds no seals (they
// are checked, not kept), and its values are slices of b, which the caller
// hands over (b must not change afterwards). A view cannot be encoded nor
// joined (that would drop the seals: EncodeRecord and JoinRecord panic);
// it serves reads that show a record, never ones that pass it on or write
// it back. Reads of a stored memory (a search's hits, a get) so skip a
// copy of every value and the seals' own (about a third of the decoding's
// allocations).
func DecodeRecordView(b []byte, lim Limits) (*Record, error) {
	rec := &Record{}
	if err := DecodeRecordViewInto(rec, b, lim); err != nil {
		return nil, err
	}
	return rec, nil
}

// DecodeRecordViewInto is DecodeRecordView into rec, a record it made
// before (or a new one), whose maps it clears and refills: a reader of
// many records keeps one and so allocates its field map once, not once a
// record. Whatever rec held before is gone, on an error too (rec is then
// empty); the caller must not keep rec's contents past its next use.
func DecodeRecordViewInto(rec *Record, b []byte, lim Limits) error {
	clear(rec.fields)
	clear(rec.sets)
	rec.seals, rec.view = nil, true
	r := reader{view: true}
	if err := r.decodeRecordInto(rec, b, lim); err != nil {
		clear(rec.fields)
		clear(rec.sets)
		return err
	}
	return nil
}

func (r *reader) decodeRecordInto(rec *Record, b []byte, lim Limits) error {
	if err := r.init(b, lim); err != nil {
		return err
	}
	if err := r.header(4); err != nil {
		return err
	}
	if err := r.replicaTable(); err != nil {
		return err
	}
	if err := r.baseTS(); err != nil {
		return err
	}
	if err := r.recordInto(rec); err != nil {
		return err
	}
	return r.end()
}

// DecodeContext decodes an encoding written by Context.Encode.
func DecodeContext(b []byte, lim Limits) (*Context, error) {
	r, err := newReader(b, lim)
	if err != nil {
		return nil, err
	}
	if err := r.header(3); err != nil {
		return nil, err
	}
	if err := r.replicaTable(); err != nil {
		return nil, err
	}
	c := &Context{}
	if err := r.context(c); err != nil {
		return nil, err
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeORSet decodes an encoding written by ORSet.Encode.
func DecodeORSet(b []byte, lim Limits) (*ORSet, error) {
	r, err := newReader(b, lim)
	if err != nil {
		return nil, err
	}
	if err := r.header(4); err != nil {
		return nil, err
	}
	if err := r.replicaTable(); err != nil {
		return nil, err
	}
	s := NewORSet()
	if err := r.context(&s.ctx); err != nil {
		return nil, err
	}
	n, err := r.arrayLen()
	if err != nil {
		return nil, err
	}
	if n%2 != 0 || n/2 > r.lim.MaxRecords {
		return nil, corrupt("element list length %d", n)
	}
	prev := ""
	for range n / 2 {
		e, err := r.str("element", r.lim.MaxString)
		if err != nil {
			return nil, err
		}
		if e <= prev {
			return nil, corrupt("elements not strictly increasing")
		}
		prev = e
		ds, err := r.dotSet()
		if err != nil {
			return nil, err
		}
		s.elems[e] = ds
		for _, d := range ds {
			s.ctx.Add(d)
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return s, nil
}

// DecodeGSet decodes an encoding written by GSet.Encode.
func DecodeGSet(b []byte, lim Limits) (*GSet, error) {
	r, err := newReader(b, lim)
	if err != nil {
		return nil, err
	}
	if err := r.header(2); err != nil {
		return nil, err
	}
	n, err := r.arrayLen()
	if err != nil {
		return nil, err
	}
	if n > r.lim.MaxRecords {
		return nil, tooLarge("elements", n, r.lim.MaxRecords)
	}
	s := NewGSet()
	prev := ""
	for i := range n {
		// GSet.Add takes any string, the empty one included; it sorts first.
		var e string
		if i == 0 && r.remaining() > 0 && r.b[r.off] == 0xa0 {
			r.off++
		} else if e, err = r.str("element", r.lim.MaxValue); err != nil {
			return nil, err
		} else if e <= prev {
			return nil, corrupt("elements not strictly increasing")
		}
		prev = e
		s.elems[e] = struct{}{}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return s, nil
}
