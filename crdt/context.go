package crdt

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
)

// ReplicaID names a replica (a node). Zero is not a valid replica.
type ReplicaID uint64

func (r ReplicaID) String() string { return fmt.Sprintf("%016x", uint64(r)) }

// Dot identifies one event: the counter-th event of a replica.
type Dot struct {
	Replica ReplicaID
	Counter uint64
}

func (d Dot) String() string { return fmt.Sprintf("%v:%d", d.Replica, d.Counter) }

// span is the counters lo..hi (inclusive) of one replica: an interval of
// a Context.
type span struct {
	r      ReplicaID
	lo, hi uint64
}

// Context is a causal context: the set of dots a replica has seen. Each
// replica's dots are kept as sorted, disjoint, non-adjacent intervals, so a
// replica that has received everything holds one interval per replica (a
// version vector), and one with gaps holds one interval per gap — not one
// entry per dot, however scattered the losses were. The zero value is an
// empty context.
//
// Every replica's intervals are in one slice, sorted by replica then
// counter, rather than a map of replica to intervals: a namespace's
// context names every replica that wrote it (a hundred in the simulator),
// and it is copied on every delta a store applies, encoded on every
// commit and decoded on every digest sync it answers. A slice is copied
// by one memmove, encoded in order without sorting its replicas, decoded
// into one allocation (a map was a hash insert and an allocation per
// replica: 314 allocations to decode 100 replicas, BenchmarkContextDecode),
// and a replica's intervals are found by binary search.
type Context struct {
	iv []span
	// shared is set once Clone has handed iv to another Context: from
	// then on neither writes it, and the first of them to change copies
	// it first (own). Stores and engines clone contexts of a hundred
	// replicas to read them far more often than to change them (Clone was
	// 4% of a 100-node simulation's CPU, and 6% of what it allocated).
	// Atomic because concurrent readers may Clone the same context.
	shared atomic.Bool
}

// NewContext returns an empty context.
func NewContext() *Context { return &Context{} }

// at returns the index of the first interval of s past (r, x): of a
// replica after r, or of r ending at or after x.
func at(s []span, r ReplicaID, x uint64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].r < r || s[m].r == r && s[m].hi < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// of returns r's intervals in s.
func of(s []span, r ReplicaID) []span {
	i := at(s, r, 0)
	j := i
	for j < len(s) && s[j].r == r {
		j++
	}
	return s[i:j]
}

// Contains reports whether d has been seen.
func (c *Context) Contains(d Dot) bool {
	i := at(c.iv, d.Replica, d.Counter)
	return i < len(c.iv) && c.iv[i].r == d.Replica && c.iv[i].lo <= d.Counter
}

// Max is the largest counter of r seen.
func (c *Context) Max(r ReplicaID) uint64 {
	i := at(c.iv, r, math.MaxUint64) // past r's intervals (counters stay below 1<<62)
	if i == 0 || c.iv[i-1].r != r {
		return 0
	}
	return c.iv[i-1].hi
}

// Add records d as seen.
func (c *Context) Add(d Dot) {
	if d.Counter == 0 {
		return
	}
	c.addSpan(span{d.Replica, d.Counter, d.Counter})
}

// addSpan inserts sp, merging what it overlaps or touches.
func (c *Context) addSpan(sp span) {
	c.own()
	// the first interval of sp.r that ends at or after sp.lo-1 (it may touch sp)
	i := at(c.iv, sp.r, max(sp.lo, 1)-1)
	j := i
	for j < len(c.iv) && c.iv[j].r == sp.r && c.iv[j].lo <= sp.hi+1 {
		sp.lo = min(sp.lo, c.iv[j].lo)
		sp.hi = max(sp.hi, c.iv[j].hi)
		j++
	}
	c.iv = slices.Replace(c.iv, i, j, sp)
}

// Join adds every dot of o. A context that holds them all already is left
// as it is (not copied if Clone shared it). One that Clone shared is
// rebuilt by one merge into a new slice (a store joins each delta it
// applies into a copy of the namespace's context); one of its own takes
// o's intervals in place.
func (c *Context) Join(o *Context) {
	if len(o.iv) == 0 || c.covers(o) {
		return
	}
	if !c.shared.Load() && len(o.iv) <= 4 {
		for _, sp := range o.iv {
			c.addSpan(sp)
		}
		return
	}
	c.iv = unionSpans(c.iv, o.iv)
	c.shared.Store(false)
}

// covers reports whether c holds every dot of o.
func (c *Context) covers(o *Context) bool {
	return spansCover(c.iv, o.iv)
}

// spansCover reports whether the intervals a hold every counter of the
// intervals b (both sorted by replica and counter, each replica's
// disjoint and non-adjacent: each of b lies within one of a).
func spansCover(a, b []span) bool {
	i := 0
	for _, sp := range b {
		for i < len(a) && (a[i].r < sp.r || a[i].r == sp.r && a[i].hi < sp.lo) {
			i++
		}
		if i == len(a) || a[i].r != sp.r || a[i].lo > sp.lo || a[i].hi < sp.hi {
			return false
		}
	}
	return true
}

// unionSpans merges a and b (as spansCover has them) into a new slice.
func unionSpans(a, b []span) []span {
	out := make([]span, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var next span
		if j >= len(b) || (i < len(a) && (a[i].r < b[j].r || a[i].r == b[j].r && a[i].lo <= b[j].lo)) {
			next, i = a[i], i+1
		} else {
			next, j = b[j], j+1
		}
		if n := len(out); n > 0 && out[n-1].r == next.r && next.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, next.hi)
		} else {
			out = append(out, next)
		}
	}
	return out
}

// Clone returns an independent copy. It copies nothing until one of the
// two changes (shared).
func (c *Context) Clone() *Context {
	n := &Context{}
	c.cloneInto(n)
	return n
}

// cloneInto makes n a copy of c, as Clone.
func (c *Context) cloneInto(n *Context) {
	n.iv = c.iv
	n.shared.Store(len(c.iv) > 0)
	if len(c.iv) > 0 && !c.shared.Load() {
		c.shared.Store(true)
	}
}

// own makes c's intervals its own to write: a copy if Clone shared them,
// with room for a few more.
func (c *Context) own() {
	if !c.shared.Load() {
		return
	}
	c.iv = append(make([]span, 0, len(c.iv)+4), c.iv...)
	c.shared.Store(false)
}

// Equal reports whether both contexts hold the same dots.
func (c *Context) Equal(o *Context) bool {
	return slices.Equal(c.iv, o.iv)
}

// Intersect returns the dots seen by both c and o.
func (c *Context) Intersect(o *Context) *Context {
	n := &Context{}
	a, b := c.iv, o.iv
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].r < b[j].r:
			i++
			continue
		case a[i].r > b[j].r:
			j++
			continue
		}
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			if n.iv == nil {
				n.iv = make([]span, 0, min(len(a), len(b)))
			}
			n.iv = append(n.iv, span{a[i].r, lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return n
}

// IsEmpty reports whether no dot has been seen.
func (c *Context) IsEmpty() bool { return len(c.iv) == 0 }

// Size is the causal metadata held: replicas whose dots start at 1 (vector
// entries) and the dots beyond that first contiguous run (the cloud).
func (c *Context) Size() (vectorEntries, cloudDots int) {
	for i, sp := range c.iv {
		if (i == 0 || c.iv[i-1].r != sp.r) && sp.lo == 1 {
			vectorEntries++
			continue
		}
		cloudDots += int(sp.hi - sp.lo + 1)
	}
	return vectorEntries, cloudDots
}

// Intervals is the number of intervals held: the context's real size.
func (c *Context) Intervals() int { return len(c.iv) }

// Vector returns, per replica, the counter up to which every dot is seen.
func (c *Context) Vector() map[ReplicaID]uint64 {
	out := make(map[ReplicaID]uint64)
	for i, sp := range c.iv {
		if (i == 0 || c.iv[i-1].r != sp.r) && sp.lo == 1 {
			out[sp.r] = sp.hi
		}
	}
	return out
}

// CoversVector reports whether every dot up to vv[r], for every r, is seen.
func (c *Context) CoversVector(vv map[ReplicaID]uint64) bool {
	for r, n := range vv {
		if n == 0 {
			continue
		}
		i := at(c.iv, r, 0)
		if i == len(c.iv) || c.iv[i].r != r || c.iv[i].lo != 1 || c.iv[i].hi < n {
			return false
		}
	}
	return true
}

// Missing lists the dots of o that c lacks, as ranges ordered by replica
// and counter.
func (c *Context) Missing(o *Context) []DotRange {
	var out []DotRange
	// A few intervals (a delta's) are looked up; as many as c's (a peer's
	// whole context) are walked beside c's.
	search := len(o.iv)*8 < len(c.iv)
	i := 0
	for _, sp := range o.iv {
		r, lo := sp.r, sp.lo
		if search {
			i = at(c.iv, r, lo)
		} else {
			for i < len(c.iv) && (c.iv[i].r < r || c.iv[i].r == r && c.iv[i].hi < lo) {
				i++
			}
		}
		for j := i; j < len(c.iv) && c.iv[j].r == r && c.iv[j].lo <= sp.hi && lo <= sp.hi; j++ {
			if c.iv[j].lo > lo {
				out = append(out, DotRange{r, lo, c.iv[j].lo - 1})
			}
			lo = max(lo, c.iv[j].hi+1)
		}
		if lo <= sp.hi {
			out = append(out, DotRange{r, lo, sp.hi})
		}
	}
	return out
}

// replicaList is the replicas c names, sorted.
func (c *Context) replicaList() []ReplicaID {
	var rs []ReplicaID
	for i, sp := range c.iv {
		if i == 0 || c.iv[i-1].r != sp.r {
			rs = append(rs, sp.r)
		}
	}
	return rs
}

func sortedReplicas[V any](m map[ReplicaID]V) []ReplicaID {
	rs := make([]ReplicaID, 0, len(m))
	for r := range m {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}

// DotRange is the dots From..To (inclusive) of one replica.
type DotRange struct {
	Replica  ReplicaID
	From, To uint64
}

// Contains reports whether d lies in the range.
func (r DotRange) Contains(d Dot) bool {
	return d.Replica == r.Replica && d.Counter >= r.From && d.Counter <= r.To
}

// replicas adds the replica ids mentioned by the context to into.
func (c *Context) replicas(into map[ReplicaID]struct{}) {
	for _, sp := range c.iv {
		into[sp.r] = struct{}{}
	}
}

func compareDots(a, b Dot) int {
	if a.Replica != b.Replica {
		return cmpU64(uint64(a.Replica), uint64(b.Replica))
	}
	return cmpU64(a.Counter, b.Counter)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
