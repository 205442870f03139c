package crdt

import (
	"bytes"
	"fmt"
	"slices"
)

// Structural invariants the package relies on but cannot afford to check on
// every call. The property tests check them after every join.

// checkContext reports a context that is not in its normal form: an empty
// or zero-based interval, or intervals out of order, overlapping or
// touching. Equal dot sets must have equal representations, or digests differ.
func checkContext(c *Context) error {
	for i, sp := range c.iv {
		if sp.r == 0 {
			return fmt.Errorf("replica 0 in interval %d", i)
		}
		if sp.lo == 0 || sp.hi < sp.lo {
			return fmt.Errorf("bad interval %v:%d..%d", sp.r, sp.lo, sp.hi)
		}
		if i == 0 {
			continue
		}
		prev := c.iv[i-1]
		if prev.r > sp.r {
			return fmt.Errorf("replicas %v and %v out of order", prev.r, sp.r)
		}
		if prev.r == sp.r && sp.lo <= prev.hi+1 {
			return fmt.Errorf("intervals %v:%d..%d and ..%d not disjoint and apart", sp.r, prev.lo, prev.hi, sp.lo)
		}
	}
	return nil
}

// checkMap verifies that every stored dot is in the context and held once,
// that no retracted id keeps an entry, that no element has an empty dot set
// and that the canonical encoding round-trips.
func checkMap(m *Map) error {
	if err := checkContext(&m.ctx); err != nil {
		return err
	}
	seen := make(map[Dot]string)
	for id, r := range m.records {
		if r == nil {
			return fmt.Errorf("nil entry %q", id)
		}
		if m.Retracted(id) {
			return fmt.Errorf("retracted id %q has an entry", id)
		}
		for name, s := range r.sets {
			if len(s) == 0 {
				return fmt.Errorf("%s: empty set %q kept", id, name)
			}
			for e, ds := range s {
				if len(ds) == 0 || !slices.IsSortedFunc(ds, compareDots) {
					return fmt.Errorf("%s: %s/%s bad dot set %v", id, name, e, ds)
				}
			}
		}
		for _, d := range r.Dots() {
			if !m.ctx.Contains(d) {
				return fmt.Errorf("%s: stored dot %v not in context", id, d)
			}
			if prev, dup := seen[d]; dup {
				return fmt.Errorf("dot %v held by %s and %s", d, prev, id)
			}
			seen[d] = id
		}
	}
	b := m.Encode()
	back, err := DecodeMap(b, Limits{})
	if err != nil {
		return fmt.Errorf("decode own encoding: %v", err)
	}
	if !bytes.Equal(back.Encode(), b) {
		return fmt.Errorf("encoding does not round-trip")
	}
	return nil
}

// checkORSet is checkMap for an ORSet.
func checkORSet(s *ORSet) error {
	if err := checkContext(&s.ctx); err != nil {
		return err
	}
	for e, ds := range s.elems {
		if len(ds) == 0 || !slices.IsSortedFunc(ds, compareDots) {
			return fmt.Errorf("%s: bad dot set %v", e, ds)
		}
		for _, d := range ds {
			if !s.ctx.Contains(d) {
				return fmt.Errorf("%s: dot %v not in context", e, d)
			}
		}
	}
	b := s.Encode()
	back, err := DecodeORSet(b, Limits{})
	if err != nil {
		return fmt.Errorf("decode own encoding: %v", err)
	}
	if !bytes.Equal(back.Encode(), b) {
		return fmt.Errorf("encoding does not round-trip")
	}
	return nil
}
