package crdt

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// Map is an OR-Map of records: the state of one namespace (id → Record, one
// causal context, the set of retracted ids). A delta is a Map too: applying
// a delta is joining it. A Map is not safe for concurrent use.
type Map struct {
	ctx       Context
	records   map[string]*Record
	retracted map[string]struct{}
	joins     uint64 // Join calls: see Joins
}

// NewMap returns an empty map.
func NewMap() *Map {
	return &Map{records: make(map[string]*Record), retracted: make(map[string]struct{})}
}

// Context is the map's causal context. Callers must not modify it.
func (m *Map) Context() *Context { return &m.ctx }

// Get returns the record for id if it holds any field or element.
func (m *Map) Get(id string) (*Record, bool) {
	r, ok := m.records[id]
	if !ok || r.Empty() {
		return nil, false
	}
	return r, true
}

// Entry returns the record entry for id, even an empty one; for building
// edits against the exact stored state.
func (m *Map) Entry(id string) *Record { return m.records[id] }

// IDs lists the ids of non-empty records, sorted.
func (m *Map) IDs() []string {
	out := make([]string, 0, len(m.records))
	for id, r := range m.records {
		if !r.Empty() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// EntryIDs lists every record entry, empty ones included, sorted.
func (m *Map) EntryIDs() []string {
	out := make([]string, 0, len(m.records))
	for id := range m.records {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Len is the number of non-empty records.
func (m *Map) Len() int {
	n := 0
	for _, r := range m.records {
		if !r.Empty() {
			n++
		}
	}
	return n
}

// Retracted reports whether id has been retracted.
func (m *Map) Retracted(id string) bool {
	_, ok := m.retracted[id]
	return ok
}

// RetractedIDs lists the retracted ids, sorted.
func (m *Map) RetractedIDs() []string {
	out := make([]string, 0, len(m.retracted))
	for id := range m.retracted {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// IsEmpty reports whether the map holds nothing at all.
func (m *Map) IsEmpty() bool {
	return len(m.records) == 0 && len(m.retracted) == 0 && m.ctx.IsEmpty()
}

// Join merges o into m. Joining is commutative, associative and idempotent;
// joining a delta equals joining the state that produced it. The cost is
// proportional to o's size, not m's.
func (m *Map) Join(o *Map) {
	m.joins++
	for id := range o.retracted {
		m.retracted[id] = struct{}{}
		delete(m.records, id)
	}
	for id, ob := range o.records {
		if _, gone := m.retracted[id]; gone {
			continue
		}
		m.records[id] = JoinRecord(m.records[id], &m.ctx, ob, &o.ctx)
	}
	m.ctx.Join(&o.ctx)
}

// Joins counts the Join calls made on m (Clone starts again from zero).
// Join is the only way a map changes once built, so an index kept beside a
// map is current as long as this count is what it was when the index was
// last brought up to date.
func (m *Map) Joins() uint64 { return m.joins }

// Clone returns an independent copy.
func (m *Map) Clone() *Map {
	n := NewMap()
	m.ctx.cloneInto(&n.ctx)
	for id, r := range m.records {
		n.records[id] = r.Clone()
	}
	for id := range m.retracted {
		n.retracted[id] = struct{}{}
	}
	return n
}

// Edit starts an edit of record id by replica r against this map's state.
// Apply the edit's delta with Join.
func (m *Map) Edit(r ReplicaID, id string, lim Limits) (*Edit, error) {
	if m.Retracted(id) {
		return nil, ErrRetracted
	}
	return NewEdit(&m.ctx, m.records[id], r, id, lim)
}

// Set writes one field and returns the delta (already joined into m).
func (m *Map) Set(r ReplicaID, ts Timestamp, id, field string, value []byte) (*Map, error) {
	e, err := m.Edit(r, id, DefaultLimits())
	if err != nil {
		return nil, err
	}
	if err := e.Set(ts, field, value); err != nil {
		return nil, err
	}
	d := e.Delta()
	m.Join(d)
	return d, nil
}

// Add adds elem to a set of record id and returns the delta (joined into m).
func (m *Map) Add(r ReplicaID, id, set, elem string) (*Map, error) {
	e, err := m.Edit(r, id, DefaultLimits())
	if err != nil {
		return nil, err
	}
	if err := e.Add(set, elem); err != nil {
		return nil, err
	}
	d := e.Delta()
	m.Join(d)
	return d, nil
}

// Remove removes elem from a set of record id and returns the delta (joined
// into m).
func (m *Map) Remove(r ReplicaID, id, set, elem string) (*Map, error) {
	e, err := m.Edit(r, id, DefaultLimits())
	if err != nil {
		return nil, err
	}
	e.Remove(set, elem)
	d := e.Delta()
	m.Join(d)
	return d, nil
}

// Retract removes id for good and returns the delta (joined into m).
func (m *Map) Retract(id string) *Map {
	d := RetractDelta(m.records[id], id)
	m.Join(d)
	return d
}

// RetractDelta is the delta that retracts id, whose current record (possibly
// nil) is rec: the id joins the retracted set and the context covers the
// record's dots. The empty id names no record (Edit refuses it) and no
// decoder accepts it, so its retract is the empty delta.
func RetractDelta(rec *Record, id string) *Map {
	d := NewMap()
	if id == "" {
		return d
	}
	d.retracted[id] = struct{}{}
	for _, dot := range rec.Dots() {
		d.ctx.Add(dot)
	}
	return d
}

// MaxTimestamp is the largest field timestamp in the map; receivers check it
// against their clock's skew bound before applying a delta.
func (m *Map) MaxTimestamp() Timestamp {
	var t Timestamp
	for _, r := range m.records {
		t = max(t, r.MaxTimestamp())
	}
	return t
}

// Records calls fn for every record entry (empty ones included) in id order.
func (m *Map) Records(fn func(id string, r *Record) bool) {
	for _, id := range m.EntryIDs() {
		if !fn(id, m.records[id]) {
			return
		}
	}
}

// Digest is a SHA-256 of a canonical encoding. Replicas with equal state
// have equal digests.
type Digest [32]byte

func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Digest hashes the canonical encoding of the map.
func (m *Map) Digest() Digest {
	return sha256.Sum256(m.Encode())
}

// AssembleMap builds a Map from parts kept elsewhere (a node's store keeps
// the context and every record entry under separate keys). The parts are
// used as given, not copied.
func AssembleMap(ctx *Context, records map[string]*Record, retracted []string) *Map {
	m := NewMap()
	if ctx != nil {
		m.ctx.iv = ctx.iv
		m.ctx.shared.Store(ctx.shared.Load())
	}
	for id, r := range records {
		m.records[id] = r
	}
	for _, id := range retracted {
		m.retracted[id] = struct{}{}
		delete(m.records, id)
	}
	return m
}

// Missing reports what a replica whose context is have lacks: the record
// entries holding a dot outside have, and the dots of this map's context
// outside have that no record holds (removed here; the other side must drop
// them wherever it holds them). It scans every record (a caller answering
// many syncs keeps an index instead: replica.MemState does), but allocates
// only for what it reports.
func (m *Map) Missing(have *Context) (records map[string]*Record, removed *Context) {
	records = map[string]*Record{}
	var attached []Dot
	for id, r := range m.records {
		n := len(attached)
		attached = r.appendDotsOutside(attached, have)
		if len(attached) > n {
			records[id] = r
		}
	}
	return records, removedDots(&m.ctx, have, attached)
}

// appendDotsOutside appends the dots of r (unsorted, repeats kept) that c
// lacks.
func (r *Record) appendDotsOutside(out []Dot, c *Context) []Dot {
	if r == nil {
		return out
	}
	for _, f := range r.fields {
		if !c.Contains(f.Dot) {
			out = append(out, f.Dot)
		}
	}
	for _, s := range r.sets {
		for _, ds := range s {
			for _, d := range ds {
				if !c.Contains(d) {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// RemovedDots is the dots of ctx outside have that are not in attached.
func RemovedDots(ctx, have *Context, attached map[Dot]struct{}) *Context {
	dots := make([]Dot, 0, len(attached))
	for d := range attached {
		dots = append(dots, d)
	}
	return removedDots(ctx, have, dots)
}

// removedDots is the dots of ctx outside have that are not in attached (in
// any order, repeats allowed; it is sorted in place). It walks the ranges of
// ctx outside have and the sorted attached dots together, so it costs
// O(ranges + attached), not one lookup per counter.
func removedDots(ctx, have *Context, attached []Dot) *Context {
	removed := NewContext()
	ranges := have.Missing(ctx) // ordered by replica, then counter
	if len(ranges) == 0 {
		return removed
	}
	slices.SortFunc(attached, compareDots)
	i := 0
	for _, rg := range ranges {
		lo := max(rg.From, 1) // counter 0 is never a dot
		if lo > rg.To {
			continue
		}
		// skip attached dots before the range
		for i < len(attached) && compareDots(attached[i], Dot{rg.Replica, lo}) < 0 {
			i++
		}
		next, open := lo, true // next counter not yet accounted for
		for ; i < len(attached) && attached[i].Replica == rg.Replica && attached[i].Counter <= rg.To; i++ {
			c := attached[i].Counter
			if !open || c < next {
				continue // a repeat
			}
			if c > next {
				removed.addSpan(span{rg.Replica, next, c - 1})
			}
			if c == rg.To {
				open = false // rg.To may be the largest counter: do not wrap
			} else {
				next = c + 1
			}
		}
		if open {
			removed.addSpan(span{rg.Replica, next, rg.To})
		}
	}
	return removed
}

// DependsOn reports whether every dot of m's context that m's records do
// not hold — a dot m overwrote or removed — is in have, except the dots of
// replica origin from counter from on, which m itself created (and then
// overwrote within the same delta group). A delta that claims a dot stands
// for the operation that made it having been seen; applied before that
// operation's own delta, it would hide the operation's effects (an element
// it removed, say) from every later comparison of contexts. Receivers hold
// a live delta back until DependsOn holds.
func (m *Map) DependsOn(have *Context, origin ReplicaID, from uint64) bool {
	attached := map[Dot]struct{}{}
	for _, r := range m.records {
		for _, d := range r.Dots() {
			attached[d] = struct{}{}
		}
	}
	for _, sp := range m.ctx.iv {
		rid := sp.r
		{
			for c := sp.lo; c <= sp.hi; c++ {
				if rid == origin && c >= from {
					break
				}
				d := Dot{rid, c}
				if _, ok := attached[d]; ok {
					continue
				}
				if !have.Contains(d) {
					return false
				}
			}
		}
	}
	return true
}

// FirstDot is the smallest counter of replica r held by m's records, or 0
// if none: where a local delta's own new dots begin.
func (m *Map) FirstDot(r ReplicaID) uint64 {
	first := uint64(0)
	for _, rec := range m.records {
		for _, d := range rec.Dots() {
			if d.Replica == r && (first == 0 || d.Counter < first) {
				first = d.Counter
			}
		}
	}
	return first
}
