package crdt

import (
	"fmt"
	"slices"
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

// Context is a causal context: the set of dots a replica has seen, kept as a
// version vector (every counter up to vv[r] seen) plus a cloud of dots beyond
// the vector. Adding a dot that fills a gap compacts the cloud into the
// vector, so a replica that has received everything holds one counter per
// replica. The zero value is an empty context.
type Context struct {
	vv    map[ReplicaID]uint64
	cloud map[Dot]struct{}
}

// NewContext returns an empty context.
func NewContext() *Context { return &Context{} }

// Contains reports whether d has been seen.
func (c *Context) Contains(d Dot) bool {
	if d.Counter <= c.vv[d.Replica] {
		return true
	}
	_, ok := c.cloud[d]
	return ok
}

// Max is the largest counter of r seen, in the vector or the cloud.
func (c *Context) Max(r ReplicaID) uint64 {
	m := c.vv[r]
	for d := range c.cloud {
		if d.Replica == r && d.Counter > m {
			m = d.Counter
		}
	}
	return m
}

// Add records d as seen.
func (c *Context) Add(d Dot) {
	if c.Contains(d) {
		return
	}
	if c.vv == nil {
		c.vv = make(map[ReplicaID]uint64)
	}
	if d.Counter == c.vv[d.Replica]+1 {
		c.vv[d.Replica] = d.Counter
		c.absorb(d.Replica)
		return
	}
	if c.cloud == nil {
		c.cloud = make(map[Dot]struct{})
	}
	c.cloud[d] = struct{}{}
}

// absorb moves dots of r that now continue the vector out of the cloud.
func (c *Context) absorb(r ReplicaID) {
	for {
		d := Dot{r, c.vv[r] + 1}
		if _, ok := c.cloud[d]; !ok {
			return
		}
		delete(c.cloud, d)
		c.vv[r] = d.Counter
	}
}

// Join adds every dot of o. It costs O(|o|), plus one pass over c's cloud
// when o raises a vector entry while c has a cloud: only a raised entry can
// cover cloud dots or be continued by them (Add keeps the rest in order).
func (c *Context) Join(o *Context) {
	var raised []ReplicaID
	for r, n := range o.vv {
		if n > c.vv[r] {
			if c.vv == nil {
				c.vv = make(map[ReplicaID]uint64)
			}
			c.vv[r] = n
			raised = append(raised, r)
		}
	}
	if len(raised) > 0 && len(c.cloud) > 0 {
		for d := range c.cloud {
			if d.Counter <= c.vv[d.Replica] {
				delete(c.cloud, d)
			}
		}
		for _, r := range raised {
			c.absorb(r)
		}
	}
	for d := range o.cloud {
		c.Add(d)
	}
}

// compact drops cloud dots covered by the vector and absorbs those that
// continue it.
func (c *Context) compact() {
	for d := range c.cloud {
		if d.Counter <= c.vv[d.Replica] {
			delete(c.cloud, d)
		}
	}
	for r := range c.vv {
		c.absorb(r)
	}
	for d := range c.cloud {
		if d.Counter == 1 {
			if c.vv == nil {
				c.vv = make(map[ReplicaID]uint64)
			}
			c.vv[d.Replica] = 1
			delete(c.cloud, d)
			c.absorb(d.Replica)
		}
	}
}

// Clone returns an independent copy.
func (c *Context) Clone() *Context {
	n := &Context{}
	if len(c.vv) > 0 {
		n.vv = make(map[ReplicaID]uint64, len(c.vv))
		for r, v := range c.vv {
			n.vv[r] = v
		}
	}
	if len(c.cloud) > 0 {
		n.cloud = make(map[Dot]struct{}, len(c.cloud))
		for d := range c.cloud {
			n.cloud[d] = struct{}{}
		}
	}
	return n
}

// Equal reports whether both contexts hold the same dots.
func (c *Context) Equal(o *Context) bool {
	if len(c.vv) != len(o.vv) || len(c.cloud) != len(o.cloud) {
		return false
	}
	for r, v := range c.vv {
		if o.vv[r] != v {
			return false
		}
	}
	for d := range c.cloud {
		if _, ok := o.cloud[d]; !ok {
			return false
		}
	}
	return true
}

// Intersect returns the dots seen by both c and o.
func (c *Context) Intersect(o *Context) *Context {
	n := &Context{}
	for r, v := range c.vv {
		if m := min(v, o.vv[r]); m > 0 {
			if n.vv == nil {
				n.vv = make(map[ReplicaID]uint64)
			}
			n.vv[r] = m
		}
	}
	for d := range c.cloud {
		if o.Contains(d) {
			n.Add(d)
		}
	}
	for d := range o.cloud {
		if c.Contains(d) {
			n.Add(d)
		}
	}
	n.compact()
	return n
}

// IsEmpty reports whether no dot has been seen.
func (c *Context) IsEmpty() bool { return len(c.vv) == 0 && len(c.cloud) == 0 }

// Size is the causal metadata held: vector entries and cloud dots.
func (c *Context) Size() (vectorEntries, cloudDots int) { return len(c.vv), len(c.cloud) }

// Vector returns a copy of the version vector.
func (c *Context) Vector() map[ReplicaID]uint64 {
	out := make(map[ReplicaID]uint64, len(c.vv))
	for r, v := range c.vv {
		out[r] = v
	}
	return out
}

// CoversVector reports whether every dot up to vv[r], for every r, is seen.
func (c *Context) CoversVector(vv map[ReplicaID]uint64) bool {
	for r, n := range vv {
		if c.vv[r] < n {
			return false
		}
	}
	return true
}

// Missing lists the dots in o that c lacks, for a replica deciding what to
// send to a peer whose context is c. It is exact for cloud dots and returns
// per-replica counter ranges for vector gaps as (replica, from, to) triples.
func (c *Context) Missing(o *Context) []DotRange {
	var out []DotRange
	for r, n := range o.vv {
		have := c.vv[r]
		if n > have {
			out = append(out, DotRange{r, have + 1, n})
		}
	}
	for d := range o.cloud {
		if !c.Contains(d) {
			out = append(out, DotRange{d.Replica, d.Counter, d.Counter})
		}
	}
	slices.SortFunc(out, func(a, b DotRange) int {
		if a.Replica != b.Replica {
			return cmpU64(uint64(a.Replica), uint64(b.Replica))
		}
		return cmpU64(a.From, b.From)
	})
	return out
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

// replicas returns the sorted replica ids mentioned by the context.
func (c *Context) replicas(into map[ReplicaID]struct{}) {
	for r := range c.vv {
		into[r] = struct{}{}
	}
	for d := range c.cloud {
		into[d.Replica] = struct{}{}
	}
}

// sortedCloud returns the cloud dots ordered by replica then counter.
func (c *Context) sortedCloud() []Dot {
	out := make([]Dot, 0, len(c.cloud))
	for d := range c.cloud {
		out = append(out, d)
	}
	slices.SortFunc(out, compareDots)
	return out
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
