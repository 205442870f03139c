package sim

import (
	"cmp"
	"maps"
	"math"
	"math/rand/v2"
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
	// seen[i]: node i has been found holding it (written by i's worker
	// only); full: got has target entries (written between windows).
	seen []bool
	full bool
}

// maybeTrack tracks the update of one workload operation in every
// Ops/Track, the first dot of its first replicated delta. The set-up's
// writes (s.stats.ops is 0 then) are not updates of the workload: they
// all go at t=0, to nodes that hold none of the namespace yet and refuse
// its tree's traffic, so they measure the join's syncs (a holder whose
// first two exchanges are lost waits AckTimeout for its third), not the
// epidemic; before this rule every tracked update was one of them.
func (s *Sim) maybeTrack(n *simNode, ns string, dot crdt.Dot) {
	every := max(1, s.cfg.Ops/s.cfg.Track)
	if len(s.tracked) >= s.cfg.Track || s.stats.ops == 0 || s.stats.ops%every != 0 ||
		s.stats.ops == s.trackedOp || s.quiet {
		return
	}
	s.trackedOp = s.stats.ops
	j := s.nsIdx[ns]
	sp := &spread{ns: ns, dot: dot, origin: n.idx, at: s.now, target: s.holders(j, n.idx) + 1,
		got: map[int]time.Duration{n.idx: 0}, hops: map[int]int{n.idx: 0}, seen: make([]bool, len(s.nodes))}
	sp.seen[n.idx], sp.full = true, sp.target <= 1
	s.tracked = append(s.tracked, sp)
}

// observeSpread runs after n's loop took a frame from node from, on n's
// worker: a tracked update n now holds for the first time came one hop
// after from's copy (spreadTo, when the window merges).
func (s *Sim) observeSpread(n *simNode, from int) {
	for k, sp := range s.tracked {
		if sp.full || sp.seen[n.idx] {
			continue
		}
		if n.svc.Store().Context(sp.ns).Contains(sp.dot) {
			sp.seen[n.idx] = true
			s.emit(n, outItem{kind: outSpread, sp: k, to: from})
		}
	}
}

// spreadTo records that n holds tracked update k since now, from node
// from's copy, unless every holder it was made for has it already.
func (s *Sim) spreadTo(n *simNode, k, from int) {
	sp := s.tracked[k]
	if _, ok := sp.got[n.idx]; ok || len(sp.got) >= sp.target {
		return
	}
	sp.got[n.idx] = s.now - sp.at
	h, ok := sp.hops[from]
	if !ok {
		h = 0 // the sender no longer holds it (retracted): count one hop
	}
	sp.hops[n.idx] = h + 1
	sp.full = len(sp.got) >= sp.target
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
		for i, t := range sp.got {
			ts = append(ts, t)
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

// Rounds is how many rounds the tracked updates took to reach 99.99% of
// the nodes that should hold them (all of them below 10,000 holders;
// hostile relays that alter what they forward are not counted once they
// are: distrusted), against the push-epidemic model. Two measures of a round:
//
//   - Hops: one hop is one frame from a node that held the update to one
//     that did not, whatever carried it (an eager push, the answer to a
//     want or graft, a sync answer, a direct send). Per update, the most
//     hops on the paths to the first 99.99% of its holders; a copy that
//     was lost costs no hop, only time.
//   - Latencies: the time until 99.99% held it, over the mean one-way
//     latency of a link (Config.LatencyMin and LatencyMax: the base
//     latency's mean plus the jitter's). A lost copy costs here what it
//     cost in time: a tree's repair waits for a tick (announcements and
//     wants leave on Tick), a direct send's for its retransmission.
//
// Model is the push-epidemic model: each node that holds the update
// tells one random node a round, each message lost with the run's loss
// (sync/epidemic's tests use the same), in rounds to reach 99.99% of
// each update's holders, averaged over the updates.
type Rounds struct {
	Updates   int     `json:"updates"`   // tracked updates of 2 holders or more that reached 99.99% of them
	Short     int     `json:"short"`     // tracked updates of 2 holders or more that did not
	Holders   float64 `json:"holders"`   // mean holders of the updates counted
	Hops      float64 `json:"hops"`      // mean over the updates
	Latencies float64 `json:"latencies"` // mean over the updates
	Model     float64 `json:"model"`
}

// HopsRatio is Hops over Model (the goal: ≤ 1.2).
func (r Rounds) HopsRatio() float64 { return ratio(r.Hops, r.Model) }

// LatenciesRatio is Latencies over Model.
func (r Rounds) LatenciesRatio() float64 { return ratio(r.Latencies, r.Model) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// rounds measures the tracked updates (Rounds).
func (s *Sim) rounds() Rounds {
	var r Rounds
	lat := float64(s.cfg.LatencyMin+s.cfg.LatencyMax)/2 + float64(s.cfg.LatencyMax-s.cfg.LatencyMin)/4
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0x5eed))
	model := map[int]float64{}
	for _, sp := range s.tracked {
		excluded := s.distrusted(sp)
		target := sp.target - len(excluded)
		if target < 2 {
			continue
		}
		q := int(math.Ceil(0.9999 * float64(target)))
		ids := slices.SortedFunc(maps.Keys(sp.got), func(a, b int) int {
			return cmp.Or(cmp.Compare(sp.got[a], sp.got[b]), cmp.Compare(a, b))
		})
		ids = slices.DeleteFunc(ids, func(i int) bool { return excluded[i] })
		if len(ids) < q {
			r.Short++
			continue
		}
		hops := 0
		for _, i := range ids[:q] {
			hops = max(hops, sp.hops[i])
		}
		m, ok := model[target]
		if !ok {
			m = epidemicRounds(rng, target, s.cfg.Loss, 200)
			model[target] = m
		}
		r.Updates++
		r.Holders += float64(target)
		r.Hops += float64(hops)
		r.Latencies += float64(sp.got[ids[q-1]]) / lat
		r.Model += m
	}
	if r.Updates > 0 {
		k := float64(r.Updates)
		r.Holders, r.Hops, r.Latencies, r.Model = r.Holders/k, r.Hops/k, r.Latencies/k, r.Model/k
	}
	return r
}

// distrusted lists the holders of sp's namespace that are not counted in
// its rounds: the hostile relays that alter what they forward, turned so
// before sp was made. Their neighbours find the bytes altered, distrust
// them and leave them out of their trees (as they must: routed around),
// so they get sp from syncs, seconds later; that delay is the attack's
// cost to the attacker, not the spread's. (In TestScaleFigures at
// 100/300/0.1 the last to get four of the updates, 3.3-5.7 s after, was
// such a relay.) A relay that drops is counted: nothing tells its
// neighbours, and it receives as any member does.
func (s *Sim) distrusted(sp *spread) map[int]bool {
	j := s.nsIdx[sp.ns]
	var out map[int]bool
	for k, h := range s.relay.hostile {
		if k[1] == j && !h.drop && h.at <= sp.at {
			if out == nil {
				out = map[int]bool{}
			}
			out[k[0]] = true
		}
	}
	return out
}

// epidemicRounds is the push-epidemic model (Rounds): the mean rounds,
// over trials, for one node's update to reach 99.99% of n when every
// node that holds it tells one random other node a round and each
// message is lost with probability loss.
func epidemicRounds(rng *rand.Rand, n int, loss float64, trials int) float64 {
	target := int(math.Ceil(0.9999 * float64(n)))
	informed := make([]bool, n)
	var holders, told []int
	sum := 0
	for range trials {
		clear(informed)
		informed[0] = true
		holders = append(holders[:0], 0)
		r := 0
		for len(holders) < target {
			r++
			told = told[:0]
			for _, i := range holders {
				j := rng.IntN(n - 1)
				if j >= i {
					j++
				}
				if rng.Float64() >= loss {
					told = append(told, j)
				}
			}
			for _, j := range told {
				if !informed[j] {
					informed[j] = true
					holders = append(holders, j)
				}
			}
		}
		sum += r
	}
	return float64(sum) / float64(trials)
}
