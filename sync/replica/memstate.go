package replica

import (
	"cmp"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
)

// MemState is an in-memory State: one crdt.Map per namespace. The simulator
// and tests use it; the node implements State over its Badger store.
//
// Missing does not scan the namespace: each namespace keeps an index from
// every dot its records hold to the record holding it, so the records a
// requester lacks are found from the ranges of the context it has not seen
// (crdt.Context.Missing) — the cost of answering a digest sync follows what
// is missing, not the size of the namespace. Apply keeps the index up to
// date; a map edited in place (through Map) is noticed by its Join count
// (crdt.Map.Joins) and its index rebuilt on the next Missing.
type MemState struct {
	maps map[string]*memNS
}

type memNS struct {
	m     *crdt.Map
	idx   *dotIndex // nil: to build
	joins uint64    // m.Joins() when idx was last brought up to date
	// ret is m's retracted ids, sorted, as of m.Joins() == retJoins.
	ret      []string
	retJoins uint64
	retOK    bool
}

var _ State = (*MemState)(nil)

// NewMemState returns an empty state.
func NewMemState() *MemState { return &MemState{maps: map[string]*memNS{}} }

func (s *MemState) ns(ns string) *memNS {
	n, ok := s.maps[ns]
	if !ok {
		n = &memNS{m: crdt.NewMap()}
		s.maps[ns] = n
	}
	return n
}

// index returns ns's index, rebuilt if the map changed behind it.
func (n *memNS) index() *dotIndex {
	if n.idx == nil || n.joins != n.m.Joins() {
		n.idx = newDotIndex()
		for _, id := range n.m.EntryIDs() {
			n.idx.update(n.m, id)
		}
		n.joins = n.m.Joins()
	}
	return n.idx
}

// Map returns the state of ns, creating it empty. It may be edited in place
// (Set, Join…); Apply is cheaper for the index.
func (s *MemState) Map(ns string) *crdt.Map { return s.ns(ns).m }

// Namespaces lists the namespaces held, sorted.
func (s *MemState) Namespaces() []string {
	out := make([]string, 0, len(s.maps))
	for ns := range s.maps {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// Context returns a copy of ns's causal context.
func (s *MemState) Context(ns string) *crdt.Context { return s.ns(ns).m.Context().Clone() }

// Missing reports what a replica with context have lacks in ns: exactly
// what crdt.Map.Missing reports, found through the index; records in id
// order.
func (s *MemState) Missing(ns string, have *crdt.Context, fn func(string, *crdt.Record) error) (*crdt.Context, error) {
	n := s.ns(ns)
	ids, removed := n.index().missing(n.m, have)
	for _, id := range ids {
		if err := fn(id, n.m.Entry(id)); err != nil {
			return nil, err
		}
	}
	return removed, nil
}

// Retracted lists ns's retracted ids (a copy).
func (s *MemState) Retracted(ns string) ([]string, error) {
	n := s.ns(ns)
	if !n.retOK || n.retJoins != n.m.Joins() {
		n.ret, n.retJoins, n.retOK = n.m.RetractedIDs(), n.m.Joins(), true
	}
	return slices.Clone(n.ret), nil
}

// Apply joins an accepted delta. Joining changes only the entries the delta
// holds or retracts, so only those are re-indexed (if the index is current;
// otherwise the next Missing rebuilds it).
func (s *MemState) Apply(a Apply) {
	n := s.ns(a.Namespace)
	current := n.idx != nil && n.joins == n.m.Joins()
	retCurrent := n.retOK && n.retJoins == n.m.Joins()
	n.m.Join(a.Delta)
	if retCurrent && len(a.Delta.RetractedIDs()) == 0 {
		n.retJoins = n.m.Joins() // no id retracted: the list stands
	}
	if !current {
		return
	}
	for _, id := range a.Delta.EntryIDs() {
		n.idx.update(n.m, id)
	}
	for _, id := range a.Delta.RetractedIDs() {
		n.idx.update(n.m, id)
	}
	n.joins = n.m.Joins()
}

// Clone returns an independent copy (for simulating a crash that keeps
// only what was persisted).
func (s *MemState) Clone() *MemState {
	c := NewMemState()
	for ns, n := range s.maps {
		c.maps[ns] = &memNS{m: n.m.Clone()} // index built when first used
	}
	return c
}

// dotIndex maps every dot held by a namespace's records to its record.
type dotIndex struct {
	// byReplica holds, per replica, the (counter, id) pairs of the dots
	// held, sorted by counter then id.
	byReplica map[crdt.ReplicaID][]dotEntry
	// dots is each indexed record's distinct dots, sorted.
	dots map[string][]crdt.Dot
	// outside is the records holding a dot the map's context lacked when
	// they were indexed. Decoded and edited maps never have one (their
	// context covers their records), but Missing must report such dots
	// too, so they are checked one by one.
	outside map[string]struct{}
}

type dotEntry struct {
	counter uint64
	id      string
}

func cmpEntry(a, b dotEntry) int {
	if c := cmp.Compare(a.counter, b.counter); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

func newDotIndex() *dotIndex {
	return &dotIndex{byReplica: map[crdt.ReplicaID][]dotEntry{}, dots: map[string][]crdt.Dot{}, outside: map[string]struct{}{}}
}

// update re-indexes entry id of m (gone, retracted or changed).
func (x *dotIndex) update(m *crdt.Map, id string) {
	dots := slices.Compact(m.Entry(id).Dots()) // sorted; nil entry: none
	old, had := x.dots[id]
	if had && slices.Equal(old, dots) {
		// The same dots (a join that brought nothing new for id): only
		// whether some lie outside the context may have changed, and the
		// context only grows, so an entry can only leave outside, which
		// missing notices.
		return
	}
	for _, d := range old {
		es := x.byReplica[d.Replica]
		if i, ok := slices.BinarySearchFunc(es, dotEntry{d.Counter, id}, cmpEntry); ok {
			es = slices.Delete(es, i, i+1)
		}
		if len(es) == 0 {
			delete(x.byReplica, d.Replica)
		} else {
			x.byReplica[d.Replica] = es
		}
	}
	delete(x.dots, id)
	delete(x.outside, id)
	if len(dots) == 0 {
		return
	}
	x.dots[id] = dots
	ctx := m.Context()
	for _, d := range dots {
		e := dotEntry{d.Counter, id}
		es := x.byReplica[d.Replica]
		i, _ := slices.BinarySearchFunc(es, e, cmpEntry)
		x.byReplica[d.Replica] = slices.Insert(es, i, e)
		if !ctx.Contains(d) {
			x.outside[id] = struct{}{}
		}
	}
}

// missing returns, sorted, the ids of m's records holding a dot outside
// have, and the dots of m's context outside have that no record holds.
//
// Equivalence with crdt.Map.Missing: a record dot outside have is either in
// m's context, and then in one of the ranges have.Missing(ctx) lists, where
// the index finds it, or outside m's context, and then its record is in
// outside and checked dot by dot. The removed dots are those ranges minus
// the record dots found in them, which crdt.RemovedDots computes.
func (x *dotIndex) missing(m *crdt.Map, have *crdt.Context) ([]string, *crdt.Context) {
	ctx := m.Context()
	found := map[string]struct{}{}
	attached := map[crdt.Dot]struct{}{}
	for _, rg := range have.Missing(ctx) {
		es := x.byReplica[rg.Replica]
		i, _ := slices.BinarySearchFunc(es, rg.From, func(e dotEntry, c uint64) int { return cmp.Compare(e.counter, c) })
		for ; i < len(es) && es[i].counter <= rg.To; i++ {
			found[es[i].id] = struct{}{}
			attached[crdt.Dot{Replica: rg.Replica, Counter: es[i].counter}] = struct{}{}
		}
	}
	for id := range x.outside {
		stillOutside := false
		for _, d := range x.dots[id] {
			if !ctx.Contains(d) {
				stillOutside = true
			}
			if !have.Contains(d) {
				found[id] = struct{}{}
			}
		}
		if !stillOutside {
			delete(x.outside, id) // the context has caught up (it only grows)
		}
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, crdt.RemovedDots(ctx, have, attached)
}
