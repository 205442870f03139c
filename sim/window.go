package sim

import (
	"cmp"
	"container/heap"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemohq/mnemo/sync/wire"
)

// The run is a conservative parallel discrete-event simulation with a
// fixed window (YAWNS-like). Every frame takes at least
// Config.LatencyMin to arrive (latency: a link's base latency is at
// least that, jitter and reordering only add), so nothing a node does at
// time t reaches another node before t+LatencyMin: within a window
// [t, t+LatencyMin), where t is the earliest pending event, no node's
// event depends on another node's event of the same window. Run pops
// the window's deliveries and ticks, groups them by node, and runs each
// node's events in (time, sequence) order, the nodes spread over
// Config.Workers goroutines. A node reads its own event's time (its
// clock, simNode.now), its own state, what only barriers write (the
// oracle, the partitions, the hostile relays armed) and the caches every
// node shares (each safe for concurrent use, and none of which changes
// an answer: doc.go, "What the simulated nodes share"). Whatever it does
// to the simulator's shared state — a frame sent (counted, traced, and
// then lost, duplicated or delayed by draws of the run's rng), a trace
// line, a violation, a warning, a crash, a tracked update first held —
// goes into its outbox (emit), with the read check, which reads the
// sender's own policy, made at send time. At the window's end the
// outboxes are merged in (time, node, order) order and applied on the
// calling goroutine, so the trace, the rng's draws and every figure are
// the same whatever the number of workers and whoever ran first.
//
// Workload operations, faults and the quiet phase's checks touch many
// nodes and the oracle: each is a barrier, run alone between windows,
// its effects applied at once (emit outside a window applies).

// outKind is what an outbox item does when applied.
type outKind uint8

const (
	outSend      outKind = iota // a frame the node's loop sent (post)
	outTrace                    // a line of the trace
	outViolation                // a violation found at the node
	outLog                      // a node's warning, for the printed trace only
	outCutWrite                 // the power went in the middle of one of its writes
	outCrash                    // the node died: counted, its incarnation ends
	outSpread                   // it holds a tracked update for the first time
)

// outItem is one effect of a node's event on the simulator's shared
// state, applied at the window's end.
type outItem struct {
	at   time.Duration // the node's time when it did it
	kind outKind
	to   int // send: the receiver; spread: the node whose frame brought the update
	sp   int // spread: the update's index in Sim.tracked
	// A send's frame, what Peek read of it and its SHA-256 (what the trace
	// holds of it), the read check's violations made at send time, and
	// what a hostile relay's tampering reads of it (trees.go).
	g      wire.Glance
	frame  []byte
	sum    [32]byte
	checks []string
	relay  *relayRead
	text   string // trace line, violation, warning
}

// outRef orders an outbox item in the merge.
type outRef struct {
	at   time.Duration
	node int
	i    int
}

// WindowStats is how the run's events fell into windows and where its
// wall time went (window.go): the nodes' events run in parallel, the
// rest (popping the events, merging the outboxes, the barriers) on one
// goroutine. The wall figures vary run to run; the counts do not.
type WindowStats struct {
	Workers   int `json:"workers"`
	Windows   int `json:"windows"`
	Events    int `json:"events"`     // deliveries and ticks run in windows
	MaxEvents int `json:"max_events"` // most in one window
	Nodes     int `json:"nodes"`      // Σ over windows of the nodes with an event
	Parallel  int `json:"parallel"`   // windows whose nodes went to more than one goroutine
	Barriers  int `json:"barriers"`   // operations, faults and checks
	Items     int `json:"items"`      // outbox items merged (the nodes' warnings among them only with Config.Trace set)
	// Wall time popping events (and planning the run), running the
	// nodes' events, merging, in barriers, and checking the invariants at
	// the end.
	PopMS     float64 `json:"pop_ms"`
	NodesMS   float64 `json:"nodes_ms"`
	MergeMS   float64 `json:"merge_ms"`
	BarrierMS float64 `json:"barrier_ms"`
	CheckMS   float64 `json:"check_ms"`
	// BusyMS is the time workers spent running nodes (NodesMS is the wall
	// time of that phase); BoundMS is the least NodesMS could be with no
	// worker ever waiting: each window at least its longest node, and at
	// least its BusyMS over the workers.
	BusyMS  float64 `json:"busy_ms"`
	BoundMS float64 `json:"bound_ms"`
}

// write prints the windows' figures (Report.WriteText).
func (w WindowStats) write(out io.Writer) {
	if w.Windows == 0 {
		return
	}
	k := float64(w.Windows)
	total := w.PopMS + w.NodesMS + w.MergeMS + w.BarrierMS + w.CheckMS
	fmt.Fprintf(out, "windows %d: %.1f events and %.1f nodes each on average, at most %d events; %d on more than one of %d workers; %d barriers\n",
		w.Windows, float64(w.Events)/k, float64(w.Nodes)/k, w.MaxEvents, w.Parallel, w.Workers, w.Barriers)
	fmt.Fprintf(out, "  wall: nodes' events %.1f s (%.0f%%), serial %.1f s (merge %.1f s, %d items; barriers %.1f s; popping %.1f s; the checks %.1f s)\n",
		w.NodesMS/1e3, 100*w.NodesMS/max(total, 1), (total-w.NodesMS)/1e3, w.MergeMS/1e3, w.Items, w.BarrierMS/1e3, w.PopMS/1e3, w.CheckMS/1e3)
	fmt.Fprintf(out, "  the nodes' events kept workers busy %.1f s; with no wait, the longest node of each window bounds them to %.1f s\n",
		w.BusyMS/1e3, w.BoundMS/1e3)
}

// emit is n's effect on the simulator's shared state: kept in n's
// outbox within a window, applied at once outside one (a barrier).
func (s *Sim) emit(n *simNode, it outItem) {
	if !s.inWindow {
		s.apply(n, &it)
		return
	}
	it.at = n.now
	n.out = append(n.out, it)
}

// emitf emits a trace line or a violation.
func (s *Sim) emitf(n *simNode, kind outKind, format string, args ...any) {
	s.emit(n, outItem{kind: kind, text: fmt.Sprintf(format, args...)})
}

// eachNode runs fn on every live node at once, as the nodes of a window
// run (fn may read and query its node, and the oracle; what it finds it
// keeps per node), then applies what their outboxes got (nothing, unless
// a query wrote). Outside Run it runs them one by one.
func (s *Sim) eachNode(fn func(*simNode)) {
	live := s.active[:0]
	for _, n := range s.nodes {
		if n.up {
			live = append(live, n)
		}
	}
	s.inWindow = true
	if s.pool != nil {
		s.pool.run(live, fn)
	} else {
		for _, n := range live {
			fn(n)
		}
	}
	s.inWindow = false
	s.merge(live)
	clear(live)
	s.active = live[:0]
}

// apply is what an outbox item does, on the run's goroutine at the item's
// time (s.now).
func (s *Sim) apply(n *simNode, it *outItem) {
	switch it.kind {
	case outSend:
		s.transport(n, it)
	case outTrace:
		s.tracef("%s", it.text)
	case outViolation:
		s.sentViols = append(s.sentViols, it.text)
	case outLog:
		if s.traceOut != nil {
			io.WriteString(s.traceOut, it.text)
		}
	case outCutWrite:
		s.stats.cutWrites++
	case outCrash:
		s.stats.crashes++
		n.inc++ // frames sent to n from now on are its next incarnation's
	case outSpread:
		s.spreadTo(n, it.sp, it.to)
	}
}

// nodeLog is a node's warnings' writer: a line of the printed trace.
type nodeLog struct {
	s *Sim
	n *simNode
}

func (l nodeLog) Write(p []byte) (int, error) {
	l.s.emit(l.n, outItem{kind: outLog, text: string(p)})
	return len(p), nil
}

// setNow sets the run's time and every node's clock to t (a barrier).
func (s *Sim) setNow(t time.Duration) {
	s.now = t
	for _, n := range s.nodes {
		n.now = t
	}
}

// Run drives the cluster to the end: workload and faults, then quiet until
// convergence or Config.QuietLimit, then the invariant checks.
func (s *Sim) Run() *Report {
	start := time.Now()
	s.plan()
	for i := range s.nodes {
		phase := time.Duration(s.rng.Int64N(int64(s.cfg.TickInterval)))
		s.schedule(&event{at: phase, kind: evTick, node: i})
	}
	p := newPool(s.cfg.Workers)
	s.pool = p
	defer func() { p.close(); s.pool = nil }()
	s.win.Workers = s.cfg.Workers
	s.win.PopMS += ms(time.Since(start))
	limit := time.Duration(math.MaxInt64)
	for s.q.Len() > 0 {
		e := s.q[0]
		if e.at > limit {
			break
		}
		if e.kind == evDeliver || e.kind == evTick || e.kind == evTrees {
			s.window(p, limit)
			continue
		}
		t0 := time.Now()
		heap.Pop(&s.q)
		s.barrier(e, &limit)
		s.win.Barriers++
		s.win.BarrierMS += ms(time.Since(t0))
	}
	s.setNow(s.now)
	return s.report(time.Since(start))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// barrier runs an operation, a fault or a check alone.
func (s *Sim) barrier(e *event, limit *time.Duration) {
	s.setNow(e.at)
	switch e.kind {
	case evOp:
		s.wr = rand.New(rand.NewPCG(e.seed, 0x6f70))
		s.op()
	case evFault:
		s.applyFault(e.fault)
		if e.fault.kind == fQuiet {
			*limit = s.now + s.cfg.QuietLimit
			s.schedule(&event{at: s.now, kind: evCheck})
		}
	case evCheck:
		if s.convergedAt == 0 && s.converged() {
			s.convergedAt = s.now
		}
		// Anti-entropy never stops, so "quiet" is: converged, and then
		// nothing in flight or two ack timeouts passed (stragglers land).
		if s.convergedAt != 0 && (s.pending == 0 || s.now-s.convergedAt >= 2*s.cfg.Engine.AckTimeout) {
			*limit = s.now
			return
		}
		s.schedule(&event{at: s.now + 100*time.Millisecond, kind: evCheck})
	}
}

// window pops the deliveries and ticks of [t, t+LatencyMin) (t: the
// earliest event; up to the first barrier or limit), runs each node's on
// the pool, and merges the outboxes.
func (s *Sim) window(p *pool, limit time.Duration) {
	t0 := time.Now()
	end := s.q[0].at + s.cfg.LatencyMin
	active := s.active[:0]
	events := 0
	for s.q.Len() > 0 {
		e := s.q[0]
		if e.at >= end || e.at > limit || e.kind != evDeliver && e.kind != evTick && e.kind != evTrees {
			break
		}
		heap.Pop(&s.q)
		s.now = e.at
		events++
		switch e.kind {
		case evDeliver:
			s.pending--
		case evTick: // the node's next tick, whether it is up or not
			s.schedule(&event{at: e.at + s.cfg.TickInterval, kind: evTick, node: e.node})
		case evTrees:
			s.treesPopped(e)
		}
		n := s.nodes[e.node]
		if len(n.evs) == 0 {
			active = append(active, n)
		}
		n.evs = append(n.evs, e)
	}
	last := s.now
	// The busiest nodes first, so the last node a worker takes is a short
	// one (the order changes nothing else: the merge sorts).
	slices.SortStableFunc(active, func(a, b *simNode) int { return cmp.Compare(len(b.evs), len(a.evs)) })
	t1 := time.Now()
	s.inWindow = true
	s.winEnd, s.winLimit = end, limit
	if p.run(active, s.runNode) {
		s.win.Parallel++
	}
	s.inWindow = false
	s.scheduleOwed(active)
	t2 := time.Now()
	var busy, longest time.Duration
	for _, n := range active {
		busy += n.busy
		longest = max(longest, n.busy)
	}
	s.win.BusyMS += ms(busy)
	s.win.BoundMS += ms(max(longest, busy/time.Duration(s.cfg.Workers)))
	s.merge(active)
	s.now = last
	s.active = active[:0]
	clear(active)
	s.win.Windows++
	s.win.Events += events
	s.win.MaxEvents = max(s.win.MaxEvents, events)
	s.win.Nodes += len(active)
	s.win.PopMS += ms(t1.Sub(t0))
	s.win.NodesMS += ms(t2.Sub(t1))
	s.win.MergeMS += ms(time.Since(t2))
}

// runNode runs n's events of the window, in order, at their times.
func (s *Sim) runNode(n *simNode) {
	start := time.Now()
	defer func() { n.busy = time.Since(start) }()
	for i, e := range n.evs {
		s.flushTrees(n, e.at)
		n.now = e.at
		switch {
		case e.kind == evTrees: // flushed above
		case e.kind == evDeliver:
			s.deliver(n, e)
		case n.up:
			n.loop.Tick()
			if s.cfg.hooks.leakOnTick && n.idx == 0 && n.now >= time.Second && !n.leaked {
				n.leaked = true
				s.leak(n, 0)
			}
			s.diedInWrite(n)
		}
		n.evs[i] = nil
	}
	n.evs = n.evs[:0]
	s.flushTrees(n, s.winEnd-1)
}

// merge applies the window's outbox items in (time, node, order) order.
func (s *Sim) merge(active []*simNode) {
	refs := s.refs[:0]
	for _, n := range active {
		s.stats.dropped += n.dropped
		n.dropped = 0
		for i := range n.out {
			refs = append(refs, outRef{n.out[i].at, n.idx, i})
		}
	}
	slices.SortFunc(refs, func(a, b outRef) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.node, b.node), cmp.Compare(a.i, b.i))
	})
	for _, r := range refs {
		n := s.nodes[r.node]
		s.now = r.at
		s.apply(n, &n.out[r.i])
	}
	for _, n := range active {
		clear(n.out)
		n.out = n.out[:0]
	}
	s.win.Items += len(refs)
	s.refs = refs[:0]
}

// sendItem is a frame n's loop sends, as its outbox keeps it: what Peek
// reads of it, its hash, and the read check made now, against n's own
// policy (checkMayReceive).
func (s *Sim) sendItem(n *simNode, to int, g wire.Glance, frame []byte) outItem {
	it := outItem{kind: outSend, to: to, g: g, frame: frame, sum: sha256.Sum256(frame)}
	for _, ns := range g.Namespaces {
		if v := s.checkMayReceive(n, to, ns, g.Kind); v != "" {
			it.checks = append(it.checks, v)
		}
	}
	if g.Kind == wire.KindTree && len(s.relay.hostile) > 0 {
		it.relay = s.relayPrepare(n, to, g, frame)
	}
	return it
}

// pool runs a window's nodes on a fixed set of goroutines: the caller and
// workers-1 helpers, each taking the next node not yet taken. A helper
// parks between windows (on start); spinning for up to 100 µs before
// parking, at both ends of a window, was tried: at 100 x 1000 the same
// wall time for 14% more CPU at load 1.4-1.6, and 22.6 s of wall
// against 15.3 s when another process held one of the two cores (a
// spinning goroutine then takes the time slices its partner needs).
type pool struct {
	helpers int
	start   chan struct{}
	done    sync.WaitGroup
	next    atomic.Int64
	nodes   []*simNode
	fn      func(*simNode)

	mu     sync.Mutex
	failed any // a helper's panic, raised again on the caller's goroutine
}

func newPool(workers int) *pool {
	p := &pool{helpers: workers - 1, start: make(chan struct{})}
	for range p.helpers {
		go func() {
			for range p.start {
				p.help()
			}
		}()
	}
	return p
}

func (p *pool) help() {
	defer p.done.Done()
	defer func() {
		if v := recover(); v != nil {
			p.mu.Lock()
			if p.failed == nil {
				// The helper's stack, or the caller's panic would show
				// only its own.
				p.failed = fmt.Sprintf("%v\n[panic on a sim worker goroutine]\n%s", v, debug.Stack())
			}
			p.mu.Unlock()
		}
	}()
	p.work()
}

func (p *pool) work() {
	for {
		i := int(p.next.Add(1)) - 1
		if i >= len(p.nodes) {
			return
		}
		p.fn(p.nodes[i])
	}
}

// run runs fn on every node and reports whether helpers took part.
func (p *pool) run(nodes []*simNode, fn func(*simNode)) bool {
	k := min(p.helpers, len(nodes)-1)
	if k <= 0 {
		for _, n := range nodes {
			fn(n)
		}
		return false
	}
	p.nodes, p.fn = nodes, fn
	p.next.Store(0)
	p.done.Add(k)
	for range k {
		p.start <- struct{}{}
	}
	p.work()
	p.done.Wait()
	p.nodes, p.fn = nil, nil
	if p.failed != nil {
		panic(p.failed)
	}
	return true
}

func (p *pool) close() { close(p.start) }
