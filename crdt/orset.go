package crdt

import (
	"fmt"
	"slices"
)

// ORSet is an add-wins observed-remove set of strings without tombstones: each
// element carries the dots of the adds that support it, removes only extend
// the causal context. Its metadata is one dot per live element plus the
// context, whatever the history of removes.
type ORSet struct {
	ctx   Context
	elems map[string]DotSet
}

// NewORSet returns an empty set.
func NewORSet() *ORSet { return &ORSet{elems: make(map[string]DotSet)} }

// Add inserts e by replica r and returns the delta (joined into s). The
// element must be 1..DefaultLimits().MaxString bytes, what DecodeORSet
// accepts, so every state this builds can be stored and loaded again.
func (s *ORSet) Add(r ReplicaID, e string) (*ORSet, error) {
	if r == 0 {
		return nil, fmt.Errorf("%w: zero replica id", ErrInvalid)
	}
	if err := (Limits{}).checkID(e); err != nil {
		return nil, err
	}
	d := NewORSet()
	for _, old := range s.elems[e] {
		d.ctx.Add(old)
	}
	dot := Dot{r, s.ctx.Max(r) + 1}
	d.ctx.Add(dot)
	d.elems[e] = DotSet{dot}
	// Joining d into s only replaces e's dots (d covers exactly those) and
	// adds the new dot; done directly, a local add costs O(1), not a Join's
	// scan of every element.
	s.elems[e] = DotSet{dot}
	s.ctx.Add(dot)
	return d, nil
}

// Remove deletes e and returns the delta (joined into s). Adds this replica
// has not seen survive.
func (s *ORSet) Remove(e string) *ORSet {
	d := NewORSet()
	for _, old := range s.elems[e] {
		d.ctx.Add(old)
	}
	delete(s.elems, e) // what s.Join(d) does, without scanning every element
	return d
}

// Contains reports whether e is present.
func (s *ORSet) Contains(e string) bool { _, ok := s.elems[e]; return ok }

// Elements lists the present elements, sorted.
func (s *ORSet) Elements() []string {
	out := make([]string, 0, len(s.elems))
	for e := range s.elems {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Context is the set's causal context. Callers must not modify it.
func (s *ORSet) Context() *Context { return &s.ctx }

// Join merges o into s. Elements of o are visited; elements of s that o does
// not carry but whose dots o's context covers are found by scanning s, so a
// join costs O(|s| + |o|).
func (s *ORSet) Join(o *ORSet) {
	for e, ds := range s.elems {
		if _, ok := o.elems[e]; ok || !anyContained(ds, &o.ctx) {
			continue // visited below, or untouched by o
		}
		kept := joinDots(ds, &s.ctx, nil, &o.ctx)
		if len(kept) == 0 {
			delete(s.elems, e)
		} else {
			s.elems[e] = kept
		}
	}
	for e, ds := range o.elems {
		kept := joinDots(s.elems[e], &s.ctx, ds, &o.ctx)
		if len(kept) == 0 {
			delete(s.elems, e)
		} else {
			s.elems[e] = kept
		}
	}
	s.ctx.Join(&o.ctx)
}

func anyContained(ds DotSet, c *Context) bool {
	for _, d := range ds {
		if c.Contains(d) {
			return true
		}
	}
	return false
}

// Clone returns an independent copy.
func (s *ORSet) Clone() *ORSet {
	n := NewORSet()
	s.ctx.cloneInto(&n.ctx)
	for e, ds := range s.elems {
		n.elems[e] = slices.Clone(ds)
	}
	return n
}

// MetadataSize is the causal metadata held: dots on live elements, vector
// entries and cloud dots. It does not grow with removes.
func (s *ORSet) MetadataSize() (elementDots, vectorEntries, cloudDots int) {
	for _, ds := range s.elems {
		elementDots += len(ds)
	}
	v, c := s.ctx.Size()
	return elementDots, v, c
}
