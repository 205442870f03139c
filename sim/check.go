package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/sync/replica"
)

func (n *simNode) digest(ns string) crdt.Digest {
	if d, ok := n.digests[ns]; ok && !n.dirty[ns] {
		return d
	}
	d := n.st.Map(ns).Digest()
	n.digests[ns] = d
	delete(n.dirty, ns)
	return d
}

// finalHolders are the nodes that must hold ns once the network is quiet:
// every member whose principal may read it.
func (s *Sim) finalHolders(j int) []*simNode {
	var out []*simNode
	for i, n := range s.nodes {
		if n.up && n.member && s.read[i][j] {
			out = append(out, n)
		}
	}
	return out
}

func (s *Sim) converged() bool {
	for j, ns := range s.nss {
		want := s.ref[ns].Digest()
		for _, n := range s.finalHolders(j) {
			if n.digest(ns) != want {
				return false
			}
		}
	}
	return true
}

// check runs every invariant over the quiet cluster and returns the
// violations, most fundamental first.
func (s *Sim) check() []string {
	var v []string
	if s.cfg.hooks.tamper {
		s.tamperOne()
	}
	// Convergence: every replica equals the join of every acknowledged op.
	for j, ns := range s.nss {
		want := s.ref[ns].Digest()
		for _, n := range s.finalHolders(j) {
			if got := n.digest(ns); got != want {
				v = append(v, fmt.Sprintf("convergence: %s on %s has digest %.12s, reference %.12s (%d vs %d memories)",
					ns, n.id, got, want, n.st.Map(ns).Len(), s.ref[ns].Len()))
			}
		}
	}
	// No acknowledged write lost.
	lost := 0
	for _, op := range s.acked {
		j := s.nsIdx[op.ns]
		for _, n := range s.finalHolders(j) {
			m := n.st.Map(op.ns)
			ok := true
			if op.retract {
				ok = m.Retracted(op.id)
			} else {
				ok = m.Entry(op.id) != nil || m.Retracted(op.id)
				for _, d := range op.dots {
					ok = ok && m.Context().Contains(d)
				}
			}
			if !ok {
				if lost < 3 {
					v = append(v, fmt.Sprintf("lost write: %s %s %s (t=%v) missing on %s", op.kind, op.ns, op.id, op.at, n.id))
				}
				lost++
			}
		}
	}
	if lost > 3 {
		v = append(v, fmt.Sprintf("lost write: %d more", lost-3))
	}
	// Nothing written without write permission applied anywhere: the forged
	// ids are on no replica, and every dot held belongs to a replica that
	// held write on that namespace at some point (write is never revoked).
	for _, f := range s.forged {
		for _, n := range s.nodes {
			if n.st.Map(f.ns).Entry(f.id) != nil && n.idx != f.by {
				v = append(v, fmt.Sprintf("write: forged %s %s by %s applied on %s", f.ns, f.id, s.nodes[f.by].id, n.id))
			}
		}
	}
	for _, n := range s.nodes {
		for _, ns := range n.st.Namespaces() {
			j, ok := s.nsIdx[ns]
			if !ok {
				v = append(v, fmt.Sprintf("write: %s holds unknown namespace %s", n.id, ns))
				continue
			}
			bad := ""
			n.st.Map(ns).Records(func(id string, r *crdt.Record) bool {
				for _, d := range r.Dots() {
					if w, ok := s.byRep[d.Replica]; !ok || !s.everWrit[w][j] {
						bad = fmt.Sprintf("write: %s on %s holds %s written by replica %v without write", ns, n.id, id, d.Replica)
						return false
					}
				}
				return true
			})
			if bad != "" {
				v = append(v, bad)
			}
		}
	}
	// Nothing sent to a node that may not read it (checked at send time).
	if len(s.sentViols) > 0 {
		v = append(v, s.sentViols[:min(3, len(s.sentViols))]...)
		if len(s.sentViols) > 3 {
			v = append(v, fmt.Sprintf("read: %d more", len(s.sentViols)-3))
		}
	}
	// No retracted memory visible.
	for _, op := range s.acked {
		if !op.retract {
			continue
		}
		for _, n := range s.finalHolders(s.nsIdx[op.ns]) {
			if _, ok := n.st.Map(op.ns).Get(op.id); ok {
				v = append(v, fmt.Sprintf("retract: %s %s still visible on %s", op.ns, op.id, n.id))
			}
		}
	}
	// Every queue within its bound.
	bound := s.cfg.Engine.QueueMaxDeltas
	if s.cfg.hooks.queueBound > 0 {
		bound = s.cfg.hooks.queueBound
	}
	if q := s.maxQueue(); q > bound {
		v = append(v, fmt.Sprintf("queue: depth %d over the bound %d", q, bound))
	}
	return v
}

// tamperOne gives one replica a write nobody else sees (test hook).
func (s *Sim) tamperOne() {
	for j, ns := range s.nss {
		for _, n := range s.finalHolders(j) {
			if !s.write[n.idx][j] {
				continue
			}
			m := n.st.Map(ns)
			if d, err := m.Set(n.rep, n.clock.Now(s.wall()), "tampered", schema.FieldUpdatedAt, schema.EncodeTime(s.wall())); err == nil {
				d.Seal(ns, n.signer())
				m.Join(d)
				n.dirty[ns] = true
				return
			}
		}
	}
}

func (s *Sim) maxQueue() int {
	q := 0
	for _, n := range s.nodes {
		q = max(q, n.deadMaxQueue)
		if n.eng != nil {
			for _, st := range n.eng.Stats() {
				q = max(q, st.MaxQueueDepth)
			}
		}
	}
	return q
}

func (s *Sim) fallbacks() uint64 {
	var f uint64
	for _, n := range s.nodes {
		f += n.deadFallbacks
		if n.eng != nil {
			for _, st := range n.eng.Stats() {
				f += st.Fallbacks
			}
		}
	}
	return f
}

// finalDigest hashes every holder's per-namespace digest, sorted by
// namespace then node.
func (s *Sim) finalDigest() string {
	h := sha256.New()
	for j, ns := range s.nss {
		for _, n := range s.finalHolders(j) {
			d := n.digest(ns)
			fmt.Fprintf(h, "%s %s ", ns, n.id)
			h.Write(d[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// spread follows one update through the cluster: when each node first
// held it, and in how many hops.
type spread struct {
	ns     string
	dot    crdt.Dot
	origin int
	at     time.Duration
	target int // holders of ns when the update was made (origin included)
	got    map[int]time.Duration
	hops   map[int]int
}

func (s *Sim) maybeTrack(n *simNode, ns string, dot crdt.Dot) {
	every := max(1, s.cfg.Ops/s.cfg.Track)
	if len(s.tracked) >= s.cfg.Track || s.stats.ops%every != 0 || s.quiet {
		return
	}
	j := s.nsIdx[ns]
	sp := &spread{ns: ns, dot: dot, origin: n.idx, at: s.now, target: s.holders(j, n.idx) + 1,
		got: map[int]time.Duration{n.idx: 0}, hops: map[int]int{n.idx: 0}}
	s.tracked = append(s.tracked, sp)
}

func (s *Sim) observeSpread(n *simNode, a replica.Apply) {
	for _, sp := range s.tracked {
		if sp.ns != a.Namespace {
			continue
		}
		if _, ok := sp.got[n.idx]; ok {
			continue
		}
		if n.st.Map(sp.ns).Context().Contains(sp.dot) {
			sp.got[n.idx] = s.now - sp.at
			from := s.byID[a.From]
			h, ok := sp.hops[from]
			if !ok {
				h = 1 // the sender no longer holds it (retracted): count one hop
			}
			sp.hops[n.idx] = h + 1
			if from == sp.origin {
				sp.hops[n.idx] = 1
			}
		}
	}
}

// Spread is one tracked update's curve: the fraction of the nodes that
// should hold it that do, against virtual time since it was made.
type Spread struct {
	Namespace string          `json:"namespace"`
	Points    []SpreadPoint   `json:"points"`
	Reached   time.Duration   `json:"reached_ns"` // time until the last holder got it (0 if never)
	MaxHops   int             `json:"max_hops"`
	Target    int             `json:"target"`
	Times     []time.Duration `json:"-"`
}

// SpreadPoint is one step of a Spread curve.
type SpreadPoint struct {
	At       time.Duration `json:"at_ns"`
	Fraction float64       `json:"fraction"`
}

func (s *Sim) spreads() []Spread {
	var out []Spread
	for _, sp := range s.tracked {
		var ts []time.Duration
		maxHops := 0
		for _, i := range sortedInts(sp.got) {
			ts = append(ts, sp.got[i])
			maxHops = max(maxHops, sp.hops[i])
		}
		slices.Sort(ts)
		sd := Spread{Namespace: sp.ns, Target: sp.target, MaxHops: maxHops, Times: ts}
		for k, t := range ts {
			sd.Points = append(sd.Points, SpreadPoint{At: t, Fraction: min(1, float64(k+1)/float64(sp.target))})
		}
		if len(ts) >= sp.target {
			sd.Reached = ts[sp.target-1]
		}
		out = append(out, sd)
	}
	return out
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
