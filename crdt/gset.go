package crdt

import "slices"

// GSet is a grow-only set of strings: join is union, nothing is ever removed.
// mnemo keeps append-only logs (audit entries, grants) in it, so "append-only"
// holds by construction.
type GSet struct {
	elems map[string]struct{}
}

// NewGSet returns an empty set.
func NewGSet() *GSet { return &GSet{elems: make(map[string]struct{})} }

// Add inserts e and returns the delta.
func (s *GSet) Add(e string) *GSet {
	s.elems[e] = struct{}{}
	d := NewGSet()
	d.elems[e] = struct{}{}
	return d
}

// Contains reports whether e is in the set.
func (s *GSet) Contains(e string) bool { _, ok := s.elems[e]; return ok }

// Len is the number of elements.
func (s *GSet) Len() int { return len(s.elems) }

// Elements lists the elements, sorted.
func (s *GSet) Elements() []string {
	out := make([]string, 0, len(s.elems))
	for e := range s.elems {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Join adds every element of o.
func (s *GSet) Join(o *GSet) {
	for e := range o.elems {
		s.elems[e] = struct{}{}
	}
}

// Clone returns an independent copy.
func (s *GSet) Clone() *GSet {
	n := NewGSet()
	n.Join(s)
	return n
}
