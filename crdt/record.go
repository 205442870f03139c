package crdt

import (
	"bytes"
	"fmt"
	"slices"
)

// Field is one scalar field of a record: a last-writer-wins register tagged
// with the dot of the write that produced it.
type Field struct {
	Dot   Dot
	TS    Timestamp
	Value []byte
}

// Less orders two writes of a field: by timestamp, then replica, then counter,
// then value bytes, so ties resolve the same way on every replica.
func (f Field) Less(o Field) bool {
	if f.TS != o.TS {
		return f.TS < o.TS
	}
	if c := compareDots(f.Dot, o.Dot); c != 0 {
		return c < 0
	}
	return bytes.Compare(f.Value, o.Value) < 0
}

// DotSet is the dots that support one set element, sorted. With add-wins
// semantics an element is present while any of its dots survives.
type DotSet []Dot

func (s DotSet) has(d Dot) bool {
	_, ok := slices.BinarySearchFunc(s, d, compareDots)
	return ok
}

// joinDots keeps a's dots the other side still has or never saw, plus b's
// dots this side never saw.
func joinDots(a DotSet, ac *Context, b DotSet, bc *Context) DotSet {
	var out DotSet
	for _, d := range a {
		if b.has(d) || !bc.Contains(d) {
			out = append(out, d)
		}
	}
	for _, d := range b {
		if !a.has(d) && !ac.Contains(d) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, compareDots)
	return out
}

// Record is the CRDT state of one memory: scalar fields and named sets.
// Callers read it through its methods and change it only through Edit.
type Record struct {
	fields map[string]Field
	sets   map[string]map[string]DotSet
	seals  []Seal // sorted; each covers at least one dot the record holds (seal.go)
	view   bool   // decoded by DecodeRecordView: its seals were not kept
}

// IsView reports whether r was decoded by DecodeRecordView (or cloned from
// such a record): it holds no seals and may be read, not encoded or joined.
func (r *Record) IsView() bool { return r != nil && r.view }

// mustNotBeView panics on a view: encoding or joining it would drop the
// seals it was decoded without, and the result would be refused by every
// peer (a programming error, never bad input).
func mustNotBeView(r *Record, op string) {
	if r.IsView() {
		panic("crdt: " + op + " of a record decoded by DecodeRecordView (it holds no seals)")
	}
}

// NewRecord returns an empty record.
func NewRecord() *Record { return &Record{} }

// Field returns the winning value of a field.
func (r *Record) Field(name string) (Field, bool) {
	if r == nil {
		return Field{}, false
	}
	f, ok := r.fields[name]
	return f, ok
}

// FieldNames lists the fields present, sorted.
func (r *Record) FieldNames() []string {
	if r == nil {
		return nil
	}
	names := make([]string, 0, len(r.fields))
	for n := range r.fields {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Elements lists the elements present in a set, sorted.
func (r *Record) Elements(set string) []string {
	if r == nil {
		return nil
	}
	s := r.sets[set]
	out := make([]string, 0, len(s))
	for e := range s {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// HasElement reports whether elem is in set.
func (r *Record) HasElement(set, elem string) bool {
	if r == nil {
		return false
	}
	_, ok := r.sets[set][elem]
	return ok
}

// Empty reports whether the record holds no field and no element (the
// witness set, bookkeeping for removals, does not count).
func (r *Record) Empty() bool {
	if r == nil || len(r.fields) > 0 {
		return r == nil
	}
	for name := range r.sets {
		if name != WitnessSet {
			return false
		}
	}
	return true
}

// MaxTimestamp is the largest field timestamp in the record.
func (r *Record) MaxTimestamp() Timestamp {
	var m Timestamp
	if r == nil {
		return 0
	}
	for _, f := range r.fields {
		m = max(m, f.TS)
	}
	return m
}

// Dots lists every dot the record holds.
func (r *Record) Dots() []Dot {
	if r == nil {
		return nil
	}
	n := len(r.fields)
	for _, s := range r.sets {
		for _, ds := range s {
			n += len(ds)
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Dot, 0, n) // once: a store lists every entry it writes twice (its dot index)
	for _, f := range r.fields {
		out = append(out, f.Dot)
	}
	for _, s := range r.sets {
		for _, ds := range s {
			out = append(out, ds...)
		}
	}
	slices.SortFunc(out, compareDots)
	return out
}

// Clone returns an independent copy (values are shared: they are never mutated).
func (r *Record) Clone() *Record {
	n := &Record{}
	if r == nil {
		return n
	}
	if len(r.fields) > 0 {
		n.fields = make(map[string]Field, len(r.fields))
		for k, v := range r.fields {
			n.fields[k] = v
		}
	}
	if len(r.sets) > 0 {
		n.sets = make(map[string]map[string]DotSet, len(r.sets))
		for name, s := range r.sets {
			m := make(map[string]DotSet, len(s))
			for e, ds := range s {
				m[e] = slices.Clone(ds)
			}
			n.sets[name] = m
		}
	}
	n.seals = r.seals // never modified in place
	n.view = r.view
	return n
}

// JoinRecord merges b, a record of a state or delta whose context is bc, into
// a, a record of a state whose context is ac, and returns the result. Either
// record may be nil. Neither input is modified. Contexts are not changed: the
// caller joins them after joining every record.
func JoinRecord(a *Record, ac *Context, b *Record, bc *Context) *Record {
	mustNotBeView(a, "join")
	mustNotBeView(b, "join")
	out := &Record{}
	fieldsA, fieldsB := fieldsOf(a), fieldsOf(b)
	// Each field of a, then each of b that a lacks: no union set is built,
	// and out's fields are sized once (this runs twice per local write).
	joinField := func(name string) {
		fa, okA := a.Field(name)
		fb, okB := b.Field(name)
		var win Field
		var have bool
		if okA && ((okB && fa.Dot == fb.Dot) || !bc.Contains(fa.Dot)) {
			win, have = fa, true
		}
		if okB && ((okA && fa.Dot == fb.Dot) || !ac.Contains(fb.Dot)) {
			if !have || win.Less(fb) {
				win, have = fb, true
			}
		}
		if have {
			if out.fields == nil {
				out.fields = make(map[string]Field, max(len(fieldsA), len(fieldsB)))
			}
			out.fields[name] = win
		}
	}
	for name := range fieldsA {
		joinField(name)
	}
	for name := range fieldsB {
		if _, ok := fieldsA[name]; !ok {
			joinField(name)
		}
	}
	for name := range unionKeys(setsOf(a), setsOf(b)) {
		var sa, sb map[string]DotSet
		if a != nil {
			sa = a.sets[name]
		}
		if b != nil {
			sb = b.sets[name]
		}
		for elem := range unionKeys(sa, sb) {
			ds := joinDots(sa[elem], ac, sb[elem], bc)
			if len(ds) == 0 {
				continue
			}
			if out.sets == nil {
				out.sets = make(map[string]map[string]DotSet)
			}
			if out.sets[name] == nil {
				out.sets[name] = make(map[string]DotSet)
			}
			out.sets[name][elem] = ds
		}
	}
	out.seals = joinSeals(out, a, b)
	return out
}

func fieldsOf(r *Record) map[string]Field {
	if r == nil {
		return nil
	}
	return r.fields
}

func setsOf(r *Record) map[string]map[string]DotSet {
	if r == nil {
		return nil
	}
	return r.sets
}

func unionKeys[V any](a, b map[string]V) map[string]struct{} {
	out := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

// Edit builds one delta against one record: field writes and element adds and
// removes, with dots allocated after everything the context has seen. It does
// not change the context or record it was made from; the caller joins the
// delta into its state (Map.Join, or JoinRecord plus Context.Join).
type Edit struct {
	ctx     *Context
	base    *Record
	replica ReplicaID
	id      string
	next    uint64
	lim     Limits
	delta   *Map
	rec     *Record
	removed bool // the edit removed an element someone may still hold
	sealed  bool
}

// WitnessSet is the reserved set in which a record keeps, per replica, the
// dot of that replica's latest edit that removed an element. Removals add
// no dot of their own, and a field written with them can be overwritten by
// a concurrent edit that never saw them; the witness cannot (nobody removes
// it), so digest sync, which finds records through dots the other side
// lacks, still finds every record a removal touched. It costs at most one
// dot per replica that ever removed an element from the record.
const WitnessSet = "~w"

// NewEdit starts an edit of record id (base may be nil for a new record) by
// replica r, in a state whose context is ctx.
func NewEdit(ctx *Context, base *Record, r ReplicaID, id string, lim Limits) (*Edit, error) {
	if r == 0 {
		return nil, fmt.Errorf("%w: zero replica id", ErrInvalid)
	}
	if err := lim.checkID(id); err != nil {
		return nil, err
	}
	lim = lim.withDefaults()
	e := &Edit{ctx: ctx, base: base, replica: r, id: id, next: ctx.Max(r) + 1, lim: lim, delta: NewMap(), rec: &Record{}}
	e.delta.records[id] = e.rec
	return e, nil
}

func (e *Edit) dot() Dot {
	d := Dot{e.replica, e.next}
	e.next++
	e.delta.ctx.Add(d)
	return d
}

// Set writes a field. ts must order after the field's current value
// (ErrStaleTimestamp otherwise); value is limited by Limits.MaxValue.
func (e *Edit) Set(ts Timestamp, field string, value []byte) error {
	if err := e.lim.checkName(field); err != nil {
		return err
	}
	if len(value) > e.lim.MaxValue {
		return fmt.Errorf("%w: field %q is %d bytes (max %d)", ErrTooLarge, field, len(value), e.lim.MaxValue)
	}
	if cur, ok := e.base.Field(field); ok {
		if ts <= cur.TS {
			return fmt.Errorf("%w: field %q at %v, write at %v", ErrStaleTimestamp, field, cur.TS, ts)
		}
		e.delta.ctx.Add(cur.Dot)
	}
	if prev, ok := e.rec.fields[field]; ok && ts <= prev.TS {
		return fmt.Errorf("%w: field %q written twice in one edit", ErrStaleTimestamp, field)
	}
	if e.rec.fields == nil {
		e.rec.fields = make(map[string]Field)
	}
	e.rec.fields[field] = Field{Dot: e.dot(), TS: ts, Value: slices.Clone(value)}
	return nil
}

// Add adds elem to set (add-wins against concurrent removes).
func (e *Edit) Add(set, elem string) error {
	if err := e.lim.checkName(set); err != nil {
		return err
	}
	if len(elem) == 0 || len(elem) > e.lim.MaxString {
		return fmt.Errorf("%w: element of %q must be 1..%d bytes", ErrInvalid, set, e.lim.MaxString)
	}
	e.coverElement(set, elem)
	if e.rec.sets == nil {
		e.rec.sets = make(map[string]map[string]DotSet)
	}
	if e.rec.sets[set] == nil {
		e.rec.sets[set] = make(map[string]DotSet)
	}
	e.rec.sets[set][elem] = DotSet{e.dot()}
	return nil
}

// Remove removes elem from set: the delta covers the dots this replica has
// seen for it; a concurrent add elsewhere survives.
func (e *Edit) Remove(set, elem string) {
	if e.base.HasElement(set, elem) {
		e.removed = true
	}
	e.coverElement(set, elem)
	if s := e.rec.sets[set]; s != nil {
		delete(s, elem)
		if len(s) == 0 {
			delete(e.rec.sets, set)
		}
	}
}

func (e *Edit) coverElement(set, elem string) {
	if e.base != nil {
		for _, d := range e.base.sets[set][elem] {
			e.delta.ctx.Add(d)
		}
	}
}

// Delta returns the delta built so far. The edit must not be used afterwards.
func (e *Edit) Delta() *Map {
	if e.removed && !e.sealed {
		e.sealed = true
		w := e.replica.String()
		e.coverElement(WitnessSet, w)
		if e.rec.sets == nil {
			e.rec.sets = make(map[string]map[string]DotSet)
		}
		if e.rec.sets[WitnessSet] == nil {
			e.rec.sets[WitnessSet] = make(map[string]DotSet)
		}
		e.rec.sets[WitnessSet][w] = DotSet{e.dot()}
	}
	return e.delta
}

// HasDotOutside reports whether any dot of r is missing from c.
func (r *Record) HasDotOutside(c *Context) bool {
	for _, d := range r.Dots() {
		if !c.Contains(d) {
			return true
		}
	}
	return false
}
