package replica

import (
	"slices"

	"github.com/mnemohq/mnemo/crdt"
)

// MemState is an in-memory State: one crdt.Map per namespace. The simulator
// and tests use it; the node implements State over its Badger store.
type MemState struct {
	maps map[string]*crdt.Map
}

var _ State = (*MemState)(nil)

// NewMemState returns an empty state.
func NewMemState() *MemState { return &MemState{maps: map[string]*crdt.Map{}} }

// Map returns the state of ns, creating it empty.
func (s *MemState) Map(ns string) *crdt.Map {
	m, ok := s.maps[ns]
	if !ok {
		m = crdt.NewMap()
		s.maps[ns] = m
	}
	return m
}

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
func (s *MemState) Context(ns string) *crdt.Context { return s.Map(ns).Context().Clone() }

// Missing reports what a replica with context have lacks in ns.
func (s *MemState) Missing(ns string, have *crdt.Context, fn func(string, *crdt.Record) error) (*crdt.Context, error) {
	recs, removed := s.Map(ns).Missing(have)
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := fn(id, recs[id]); err != nil {
			return nil, err
		}
	}
	return removed, nil
}

// Retracted lists ns's retracted ids.
func (s *MemState) Retracted(ns string) ([]string, error) { return s.Map(ns).RetractedIDs(), nil }

// Apply joins an accepted delta.
func (s *MemState) Apply(a Apply) {
	m := s.Map(a.Namespace)
	m.Join(a.Delta)
}

// Clone returns an independent copy (for simulating a crash that keeps
// only what was persisted).
func (s *MemState) Clone() *MemState {
	n := NewMemState()
	for ns, m := range s.maps {
		n.maps[ns] = m.Clone()
	}
	return n
}
