package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

type faultKind uint8

const (
	fPartition faultKind = iota
	fHeal
	fCrash
	fRestart
	fStall
	fUnstall
	fLeave
	fJoin
	fQuiet        // end of faults: heal everything and let the network go quiet
	fCrashInWrite // the node dies in the middle of its next write (or at its restart, if it writes none)
)

var faultNames = [...]string{"partition", "heal", "crash", "restart", "stall", "unstall", "leave", "join", "quiet", "crash-in-write"}

// plannedOp is one workload operation: when, and the seed of its choices.
type plannedOp struct {
	at   time.Duration
	seed uint64
}

type fault struct {
	at     time.Duration
	kind   faultKind
	node   int
	groups [][]int // partition: nodes of each side; unlisted nodes join the first
}

func (f *fault) String() string {
	switch f.kind {
	case fPartition:
		var parts []string
		for _, g := range f.groups {
			var ns []string
			for _, n := range g {
				ns = append(ns, fmt.Sprintf("n%d", n))
			}
			parts = append(parts, strings.Join(ns, ","))
		}
		return "partition " + strings.Join(parts, " | ")
	case fHeal, fQuiet:
		return faultNames[f.kind]
	}
	return fmt.Sprintf("%s n%d", faultNames[f.kind], f.node)
}

// plan schedules the operations (each with its own seed) and the fault
// schedule: random from the seed, or the scenario's script.
func (s *Sim) plan() {
	span := s.cfg.Span
	if sc := s.cfg.Scenario; sc != nil && sc.ops != nil {
		s.ops = slices.Clone(sc.ops)
	} else {
		s.ops = make([]plannedOp, s.cfg.Ops)
		for i := range s.ops {
			s.ops[i].at = time.Duration(s.rng.Int64N(int64(span)))
		}
		slices.SortStableFunc(s.ops, func(a, b plannedOp) int { return int(a.at - b.at) })
		for i := range s.ops {
			s.ops[i].seed = s.rng.Uint64()
		}
	}
	for _, op := range s.ops {
		s.schedule(&event{at: op.at, kind: evOp, seed: op.seed})
	}
	var fs []*fault
	if s.cfg.Scenario != nil {
		fs = append(fs, s.cfg.Scenario.faults...)
	} else {
		fs = s.randomFaults(span)
	}
	last := span
	for _, f := range fs {
		last = max(last, f.at)
	}
	fs = append(fs, &fault{at: last + time.Millisecond, kind: fQuiet})
	for _, f := range fs {
		s.schedule(&event{at: f.at, kind: evFault, fault: f})
	}
	s.faults = fs
}

func (s *Sim) randomFaults(span time.Duration) []*fault {
	var fs []*fault
	n := len(s.nodes)
	window := func(slots, i int) (time.Duration, time.Duration) {
		w := span / time.Duration(slots)
		return w * time.Duration(i), w
	}
	if n >= 2 {
		for i := range s.cfg.Partitions {
			start, w := window(s.cfg.Partitions, i)
			at := start + time.Duration(s.rng.Int64N(int64(w/2)+1))
			heal := at + time.Duration(s.rng.Int64N(int64(w/2)+1)) + time.Second
			perm := s.rng.Perm(n)
			k := 1 + s.rng.IntN(n-1)
			a, b := slices.Clone(perm[:k]), slices.Clone(perm[k:])
			slices.Sort(a)
			slices.Sort(b)
			fs = append(fs, &fault{at: at, kind: fPartition, groups: [][]int{a, b}}, &fault{at: heal, kind: fHeal})
		}
	}
	pair := func(count int, down, up faultKind, minD, maxD time.Duration) {
		for range count {
			node := s.rng.IntN(n)
			at := time.Duration(s.rng.Int64N(int64(span)))
			d := minD + time.Duration(s.rng.Int64N(int64(maxD-minD)+1))
			fs = append(fs, &fault{at: at, kind: down, node: node}, &fault{at: at + d, kind: up, node: node})
		}
	}
	first := len(fs)
	pair(s.cfg.Crashes, fCrash, fRestart, time.Second, 15*time.Second)
	for i := first; i < len(fs); i += 2 {
		if s.rng.IntN(2) == 0 {
			fs[i].kind = fCrashInWrite // half the crashes cut a transaction short
		}
	}
	pair(s.cfg.Stalls, fStall, fUnstall, 2*time.Second, 20*time.Second)
	pair(s.cfg.Churn, fLeave, fJoin, time.Second, 15*time.Second)
	for i := n - s.cfg.Joins; i < n; i++ {
		fs = append(fs, &fault{at: time.Duration(s.rng.Int64N(int64(span))), kind: fJoin, node: i})
	}
	slices.SortStableFunc(fs, func(a, b *fault) int { return int(a.at - b.at) })
	return fs
}

func (s *Sim) applyFault(f *fault) {
	s.tracef("fault %v", f)
	if f.kind != fQuiet {
		s.lastFault = s.now
	}
	switch f.kind {
	case fPartition:
		for i := range s.part {
			s.part[i] = 0
		}
		for g, nodes := range f.groups {
			for _, i := range nodes {
				if i >= 0 && i < len(s.part) {
					s.part[i] = g
				}
			}
		}
	case fHeal:
		for i := range s.part {
			s.part[i] = 0
		}
	case fCrash:
		s.crash(s.nodes[f.node])
	case fCrashInWrite:
		if n := s.nodes[f.node]; n.up {
			n.cutInWrite, n.cutAtSync = true, s.stats.crashes%2 == 1 || s.cfg.hooks.lyingSync
			n.lyingSync = s.cfg.hooks.lyingSync
		}
	case fRestart:
		if n := s.nodes[f.node]; n.cutInWrite { // it wrote nothing since: it dies now
			s.crash(n)
		}
		s.restart(s.nodes[f.node])
	case fStall:
		s.nodes[f.node].stalled = true
	case fUnstall:
		s.unstall(s.nodes[f.node])
	case fLeave:
		if n := s.nodes[f.node]; n.member {
			n.member = false
			s.setPeers()
		}
	case fJoin:
		if n := s.nodes[f.node]; !n.member {
			n.member = true
			s.setPeers()
		}
	case fQuiet:
		s.quiet, s.quietAt = true, s.now
		s.loss, s.dup, s.reorder = 0, 0, 0
		for i := range s.part {
			s.part[i] = 0
		}
		changed := false
		for _, n := range s.nodes {
			if !n.up {
				s.restart(n)
			}
			if n.stalled {
				s.unstall(n)
			}
			if !n.member {
				n.member, changed = true, true
			}
		}
		if changed {
			s.setPeers()
		}
	}
}

func (s *Sim) unstall(n *simNode) {
	n.stalled = false
	in := n.inbox
	n.inbox = nil
	for _, e := range in {
		if !n.up || e.inc != n.inc {
			break
		}
		s.step(n, e)
	}
}
