package sim

import (
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
)

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

// observeSpread runs after n's loop took a frame from node from: a tracked
// update n now holds for the first time came one hop after from's copy.
func (s *Sim) observeSpread(n *simNode, from int) {
	for _, sp := range s.tracked {
		if _, ok := sp.got[n.idx]; ok || len(sp.got) >= sp.target {
			continue
		}
		if n.svc.Store().Context(sp.ns).Contains(sp.dot) {
			sp.got[n.idx] = s.now - sp.at
			h, ok := sp.hops[from]
			if !ok {
				h = 0 // the sender no longer holds it (retracted): count one hop
			}
			sp.hops[n.idx] = h + 1
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
		for _, i := range slices.Sorted(maps.Keys(sp.got)) {
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
