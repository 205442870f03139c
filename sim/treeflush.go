package sim

import "time"

// A node's broadcast trees owe announcements IHaveInterval after a
// payload came and a want GraftTimeout after an announcement of one it
// lacks (sync/epidemic). A real node's loop sends them every
// cluster.Config.TreeTick; the simulator sends them at the very time they
// are owed (cluster.Stepped.FlushTrees), as events of their own (evTrees):
// within a window a node's worker runs the flushes owed before each of
// its events and up to the window's end, and what is owed after goes to
// the queue when the window ends (or at once from a barrier's operation).
// Without them, a lost push waited for the node's next tick (every
// TickInterval) to be announced and asked for.

// treesDue is when n's trees next owe something, in virtual time and never
// before n's clock; false when they owe nothing (or n is down).
func (s *Sim) treesDue(n *simNode) (time.Duration, bool) {
	if !n.up || n.loop == nil {
		return 0, false
	}
	d := n.loop.TreesDue()
	if d.IsZero() {
		return 0, false
	}
	return max(d.Sub(epoch)-n.skew, n.now), true
}

// flushTrees runs, each at its time, n's flushes owed up to until and no
// later than the window's limit.
func (s *Sim) flushTrees(n *simNode, until time.Duration) {
	until = min(until, s.winLimit)
	for {
		d, ok := s.treesDue(n)
		if !ok || d > until {
			return
		}
		n.now = d
		n.loop.FlushTrees()
		if next, ok := s.treesDue(n); ok && next <= d {
			return // owed again at once: the next event or window retries
		}
	}
}

// owe puts n's evTrees event in the queue at at, unless one comes no
// later.
func (s *Sim) owe(n *simNode, at time.Duration) {
	if n.treesSet && n.treesAt <= at {
		return
	}
	n.treesAt, n.treesSet = at, true
	s.schedule(&event{at: at, kind: evTrees, node: n.idx})
}

// scheduleOwed queues, after a window, the flushes its nodes owe past
// it (what they owe within it, their workers ran).
func (s *Sim) scheduleOwed(active []*simNode) {
	for _, n := range active {
		if d, ok := s.treesDue(n); ok && d >= s.winEnd {
			s.owe(n, d)
		}
	}
}

// treesPopped notes that n's queued evTrees event is taken.
func (s *Sim) treesPopped(e *event) {
	if n := s.nodes[e.node]; n.treesSet && n.treesAt == e.at {
		n.treesSet = false
	}
}

// noteTrees queues n's next flush after a barrier's operation on it.
func (s *Sim) noteTrees(n *simNode) {
	if d, ok := s.treesDue(n); ok {
		s.owe(n, max(d, s.now))
	}
}
