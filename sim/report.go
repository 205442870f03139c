package sim

import (
	"encoding/hex"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Report is the outcome of one run.
type Report struct {
	Seed       uint64   `json:"seed"`
	Nodes      int      `json:"nodes"`
	Converged  bool     `json:"converged"`
	Digest     string   `json:"digest"`     // SHA-256 over every holder's per-namespace digest
	TraceHash  string   `json:"trace_hash"` // SHA-256 over every op, fault and frame sent, in order
	Violations []string `json:"violations"`
	// VirtualMS is the virtual time from the end of the last fault (the
	// network healed) to convergence.
	VirtualMS int64 `json:"virtual_ms"`
	// LastToConverge is the last difference the quiet phase saw before
	// convergence (or at its limit): a namespace, two holders and the dot
	// ranges each lacked of the other's.
	LastToConverge string   `json:"last_to_converge,omitempty"`
	TotalVirtualMS int64    `json:"total_virtual_ms"`
	Messages       uint64   `json:"messages"`
	Bytes          uint64   `json:"bytes"`
	DeltaMessages  uint64   `json:"delta_messages"`
	DeltaBytes     uint64   `json:"delta_bytes"`
	SyncMessages   uint64   `json:"sync_messages"`
	SyncBytes      uint64   `json:"sync_bytes"`
	BindingMsgs    uint64   `json:"binding_messages"`
	BindingBytes   uint64   `json:"binding_bytes"`
	AckMessages    uint64   `json:"ack_messages"`
	AckBytes       uint64   `json:"ack_bytes"`
	DeltasApplied  uint64   `json:"deltas_applied"`
	BytesPerDelta  float64  `json:"bytes_per_delta"`
	MinDeltaBytes  uint64   `json:"min_delta_bytes"`       // Σ over acknowledged ops of delta size × receivers
	StateBytes     uint64   `json:"state_bytes,omitempty"` // the same pushes carrying the origin's full namespace state
	Fallbacks      uint64   `json:"fallbacks"`
	Retransmits    uint64   `json:"retransmits"`
	MaxQueue       int      `json:"max_queue"`
	QueueBound     int      `json:"queue_bound"`
	Rejected       uint64   `json:"rejected"`
	Dropped        uint64   `json:"dropped"`
	WallMS         int64    `json:"wall_ms"`
	Ops            int      `json:"ops"`
	Acked          int      `json:"acked"`
	Forged         int      `json:"forged"`
	Attacks        int      `json:"attacks"` // forged dots, erasures, floods (attack.go)
	Grants         int      `json:"grants"`
	Revokes        int      `json:"revokes"`
	Retracts       int      `json:"retracts"`
	Shares         int      `json:"shares"` // shares and promotions
	Edits          int      `json:"edits"`
	Decisions      int      `json:"decisions"`
	Capsules       int      `json:"capsules"`
	CapsuleRevokes int      `json:"capsule_revokes"`
	Projections    int      `json:"projections"`
	Crashes        int      `json:"crashes"`
	CutWrites      int      `json:"cut_writes"`     // crashes in the middle of a write (its transaction lost)
	MeanHops       float64  `json:"mean_max_hops"`  // tracked updates: hops to the farthest holder
	MeanReachMS    float64  `json:"mean_reach_ms"`  // tracked updates: time until every holder had it
	WorstReachMS   float64  `json:"worst_reach_ms"` // idem, worst
	Replay         string   `json:"replay"`
	Spreads        []Spread `json:"-"`

	// The broadcast trees (trees.go): their frames, and the engines' tree
	// counters summed (Trees.Trees: the most one node had).
	TreeMessages uint64            `json:"tree_messages"`
	TreeBytes    uint64            `json:"tree_bytes"`
	Trees        replica.TreeStats `json:"trees"`
	Syncs        replica.SyncStats `json:"syncs"`  // digest syncs by cause, every engine summed
	Relays       RelayAttacks      `json:"relays"` // hostile relays' tampering (trees.go)
	TreeKinds    []TreeKind        `json:"tree_kinds"`

	SyncRequestMsgs  uint64      `json:"sync_request_messages"` // of SyncMessages
	SyncRequestBytes uint64      `json:"sync_request_bytes"`
	Connections      Connections `json:"connections"`
	Rounds           Rounds      `json:"rounds"`  // spread.go
	Windows          WindowStats `json:"windows"` // window.go
}

func (s *Sim) report(wall time.Duration) *Report {
	start := time.Now()
	v, sv := s.check()
	s.win.CheckMS = ms(time.Since(start))
	t := s.totals()
	r := &Report{
		Seed: s.cfg.Seed, Nodes: len(s.nodes),
		Converged: s.convergedAt != 0 && len(v) == 0, Violations: v,
		Digest:   s.finalDigest(sv),
		Messages: s.stats.messages, Bytes: s.stats.bytes,
		DeltaMessages: s.stats.deltaMsgs, DeltaBytes: s.stats.deltaBytes,
		SyncMessages: s.stats.syncMsgs, SyncBytes: s.stats.syncBytes,
		BindingMsgs: s.stats.bindingMsgs, BindingBytes: s.stats.bindingBytes,
		AckMessages: s.stats.ackMsgs, AckBytes: s.stats.ackBytes,
		TreeMessages: s.stats.treeMsgs, TreeBytes: s.stats.treeBytes, Trees: t.trees, Syncs: t.syncs, Relays: s.relay.counts,
		DeltasApplied: t.applied, MinDeltaBytes: s.stats.minDeltaBytes, StateBytes: s.stats.stateBytes,
		Fallbacks: t.fallbacks, Retransmits: t.retransmits, MaxQueue: t.maxQueue, QueueBound: s.cfg.Engine.QueueMaxDeltas,
		Rejected: t.rejected, Dropped: s.stats.dropped, WallMS: wall.Milliseconds(),
		Ops: s.stats.ops, Acked: len(s.acked), Shares: s.stats.shares,
		Edits: s.stats.edits, Decisions: s.stats.decisions, Capsules: s.stats.capsules, CapsuleRevokes: s.stats.capsuleRevokes,
		Projections: s.stats.projections, Forged: s.stats.forgedN, Attacks: s.stats.attacks, Grants: s.stats.grants,
		Revokes: s.stats.revokes, Retracts: s.stats.retracts, Crashes: s.stats.crashes, CutWrites: s.stats.cutWrites,
		TotalVirtualMS:  s.now.Milliseconds(),
		Replay:          s.cfg.ReplayCommand(),
		Spreads:         s.spreads(),
		TreeKinds:       s.wire.treeKinds(),
		SyncRequestMsgs: s.wire.syncReqMsgs, SyncRequestBytes: s.wire.syncReqBytes,
		Connections: s.wire.connections(),
		Rounds:      s.rounds(),
		Windows:     s.win,
	}
	if r.Violations == nil {
		r.Violations = []string{}
	}
	if s.convergedAt == 0 && len(v) == 0 {
		r.Violations = append(r.Violations, fmt.Sprintf("convergence: not converged within %v after the last fault", s.cfg.QuietLimit))
	}
	if s.convergedAt != 0 {
		r.VirtualMS = (s.convergedAt - s.quietAt).Milliseconds()
	}
	r.LastToConverge = s.lagging
	if t.applied > 0 {
		r.BytesPerDelta = float64(s.stats.bytes) / float64(t.applied)
	}
	var hops, reach float64
	k := 0
	for _, sp := range r.Spreads {
		if sp.Reached == 0 && sp.Target > 1 {
			continue
		}
		k++
		hops += float64(sp.MaxHops)
		ms := float64(sp.Reached) / float64(time.Millisecond)
		reach += ms
		r.WorstReachMS = max(r.WorstReachMS, ms)
	}
	if k > 0 {
		r.MeanHops, r.MeanReachMS = hops/float64(k), reach/float64(k)
	}
	io.WriteString(s.trace, r.Digest)
	r.TraceHash = hex.EncodeToString(s.trace.Sum(nil))
	return r
}

// FirstViolation is the first violated invariant, or "".
func (r *Report) FirstViolation() string {
	if len(r.Violations) == 0 {
		return ""
	}
	return r.Violations[0]
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) {
	if r.Converged {
		fmt.Fprintf(w, "converged: %d nodes, seed %d, digest %.16s\n", r.Nodes, r.Seed, r.Digest)
	} else {
		fmt.Fprintf(w, "FAILED: %s\n", r.FirstViolation())
		for _, v := range r.Violations[1:] {
			fmt.Fprintf(w, "  also: %s\n", v)
		}
		fmt.Fprintf(w, "replay: %s\n", r.Replay)
	}
	fmt.Fprintf(w, "ops: %d (%d acknowledged, %d forged, %d other attacks, %d grants, %d revocations, %d retracts), crashes %d\n",
		r.Ops, r.Acked, r.Forged, r.Attacks, r.Grants, r.Revokes, r.Retracts, r.Crashes)
	fmt.Fprintf(w, "crashes in the middle of a write: %d\n", r.CutWrites)
	fmt.Fprintf(w, "governance: %d shares and promotions, %d edits, %d decisions, %d capsules (%d revoked), %d projections\n",
		r.Shares, r.Edits, r.Decisions, r.Capsules, r.CapsuleRevokes, r.Projections)
	fmt.Fprintf(w, "virtual time to converge after the last fault: %d ms (run: %d ms)\n", r.VirtualMS, r.TotalVirtualMS)
	if r.LastToConverge != "" {
		fmt.Fprintf(w, "  the last to converge: %s\n", r.LastToConverge)
	}
	fmt.Fprintf(w, "messages: %d, %d bytes; deltas applied %d (%.0f bytes per delta)\n", r.Messages, r.Bytes, r.DeltasApplied, r.BytesPerDelta)
	fmt.Fprintf(w, "  delta frames %d (%d bytes), sync frames %d (%d bytes); minimum K·(N−1)·delta %d bytes\n",
		r.DeltaMessages, r.DeltaBytes, r.SyncMessages, r.SyncBytes, r.MinDeltaBytes)
	fmt.Fprintf(w, "  binding frames %d (%d bytes), acks %d (%d bytes)\n", r.BindingMsgs, r.BindingBytes, r.AckMessages, r.AckBytes)
	r.writeTrees(w)
	fmt.Fprintf(w, "fallbacks to state sync: %d, retransmits %d, max queue depth %d (bound %d), rejected %d, dropped %d\n",
		r.Fallbacks, r.Retransmits, r.MaxQueue, r.QueueBound, r.Rejected, r.Dropped)
	fmt.Fprintf(w, "tracked updates: %.2f hops to the farthest holder, %.0f ms mean / %.0f ms worst to reach all\n",
		r.MeanHops, r.MeanReachMS, r.WorstReachMS)
	r.writeScale(w)
	r.Windows.write(w)
	fmt.Fprintf(w, "wall time: %d ms\n", r.WallMS)
}

// WriteSVG draws, for every tracked update, the fraction of its holders
// that have it against virtual time since it was made. Hand-written SVG.
func (r *Report) WriteSVG(w io.Writer) error {
	const W, H, L, B, T, R = 720, 420, 60, 50, 30, 20
	maxT := time.Millisecond
	for _, sp := range r.Spreads {
		if len(sp.Times) > 0 {
			maxT = max(maxT, slices.Max(sp.Times))
		}
	}
	x := func(t time.Duration) float64 { return L + float64(t)/float64(maxT)*(W-L-R) }
	y := func(f float64) float64 { return H - B - f*(H-B-T) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="18">seed %d, %d nodes: fraction of holders with each update vs virtual time</text>`+"\n", L, r.Seed, r.Nodes)
	fmt.Fprintf(&b, `<line x1="%d" y1="%g" x2="%d" y2="%g" stroke="black"/>`+"\n", L, y(0), W-R, y(0))
	fmt.Fprintf(&b, `<line x1="%d" y1="%g" x2="%d" y2="%g" stroke="black"/>`+"\n", L, y(0), L, y(1))
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.2f</text>`+"\n", L-6, y(f)+4, f)
		t := maxT * time.Duration(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%v</text>`+"\n", x(t), H-B+18, t.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">virtual time since the update</text>`+"\n", (W+L)/2, H-10)
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	for i, sp := range r.Spreads {
		var pts []string
		prev := 0.0
		for _, p := range sp.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(p.At), y(prev), x(p.At), y(p.Fraction)))
			prev = p.Fraction
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(maxT), y(prev)))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-opacity="0.8" points="%s"><title>%s</title></polyline>`+"\n",
			colors[i%len(colors)], strings.Join(pts, " "), sp.Namespace)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wireCounts are the frames counted by what they are beyond their wire
// kind (post calls count): sync requests apart from answers, tree frames
// by the epidemic kind inside, and for each node the peers it exchanged
// frames with, by what the frames carried.
type wireCounts struct {
	syncReqMsgs, syncReqBytes uint64
	treeMsgs, treeBytes       [epidemic.KindShuffleReply + 1]uint64 // by epidemic.Kind
	// peers[c][i] is a bitset of the nodes i sent a frame of class c to
	// or got one from (sent: both ends count it, lost or not).
	peers [connClasses][][]uint64
	// window[c]: the same over the current ConnWindow; over past
	// windows, windowSum[c] sums its counts for the windowN (node,
	// window) pairs with any frame, and windows and windowMaxes are each
	// window's mean and most, all classes together.
	window      [connClasses][][]uint64
	windowEnd   time.Duration
	windowSum   [connClasses]int
	windowN     int
	windows     []float64
	windowMaxes []int
}

// Frame classes for Connections.
const (
	connAll      = iota
	connTree     // a tree's payloads, announcements, wants, grafts, prunes
	connOverlay  // HyParView: joins, neighbors, disconnects, shuffles
	connSync     // digest sync requests and answers
	connBindings // who hosts which agent
	connDirect   // direct live deltas and their acks
	connClasses
)

// ConnWindow is the span of the windowed count (Connections.Window*):
// the idle timeout after which the node's transport closes a connection
// that carried nothing (quicnet.DefaultIdleTimeout; a test in cmd/mnemo
// keeps the two equal), so a window's distinct peers are the connections
// a node holds open at once. It was 10 s, a third of the transport's.
const ConnWindow = 30 * time.Second

// count records one frame sent from one node to another.
func (s *Sim) count(from, to int, g wire.Glance, frame []byte) {
	c := &s.wire
	if c.peers[0] == nil {
		for k := range c.peers {
			c.peers[k] = bitsets(len(s.nodes))
		}
		for k := range c.window {
			c.window[k] = bitsets(len(s.nodes))
		}
		c.windowEnd = s.now + ConnWindow
	}
	if from >= len(c.window[connAll]) || to >= len(c.window[connAll]) {
		return // New makes every node, joiners included, before any frame
	}
	if s.now >= c.windowEnd {
		c.closeWindow()
		c.windowEnd = s.now + ConnWindow
	}
	class := connDirect
	switch g.Kind {
	case wire.KindSyncRequest:
		c.syncReqMsgs++
		c.syncReqBytes += uint64(len(frame))
		class = connSync
	case wire.KindSyncReply:
		class = connSync
	case wire.KindBindings:
		class = connBindings
	case wire.KindTree:
		class = connOverlay
		// The tree kind as Peek read it: decoding every tree frame whole
		// here was 1.8% of a 100-node run's CPU.
		k := min(int(g.TreeKind), len(c.treeMsgs)-1)
		c.treeMsgs[k]++
		c.treeBytes[k] += uint64(len(frame))
		if epidemic.Kind(k) <= epidemic.KindPrune {
			class = connTree
		}
	}
	for _, k := range []int{connAll, class} {
		setBit(c.peers[k][from], to)
		setBit(c.peers[k][to], from)
		setBit(c.window[k][from], to)
		setBit(c.window[k][to], from)
	}
}

// closeWindow counts the peers of each node that exchanged frames in
// the window, in all and by class, and clears it; nodes with none are not
// counted. A class's mean is over the windows in which the node exchanged
// any frame, so the classes' means add up to at least the mean in all.
func (c *wireCounts) closeWindow() {
	most, sum, n := 0, 0, 0
	for i, b := range c.window[connAll] {
		k := ones(b)
		if k == 0 {
			continue
		}
		most = max(most, k)
		sum += k
		n++
		for cl := range c.window {
			c.windowSum[cl] += ones(c.window[cl][i])
		}
	}
	c.windowN += n
	if n > 0 {
		c.windows = append(c.windows, float64(sum)/float64(n))
		c.windowMaxes = append(c.windowMaxes, most)
	}
	for cl := range c.window {
		for _, b := range c.window[cl] {
			clear(b)
		}
	}
}

func bitsets(n int) [][]uint64 {
	out := make([][]uint64, n)
	for i := range out {
		out[i] = make([]uint64, (n+63)/64)
	}
	return out
}

func setBit(b []uint64, i int) { b[i/64] |= 1 << (i % 64) }

func ones(b []uint64) int {
	k := 0
	for _, w := range b {
		k += bits.OnesCount64(w)
	}
	return k
}

// Connections are the distinct peers a node exchanged frames with (either
// way): over the whole run, the connections a transport that opens one
// per peer and closes none would hold, in all and by what the frames
// carried; and within windows of ConnWindow, those a transport closing
// a connection idle that long would hold at most at once.
type Connections struct {
	Mean float64 `json:"mean"` // over the nodes
	Max  int     `json:"max"`
	// By what the frames carried, mean and most over the nodes.
	Tree     [2]float64 `json:"tree"`
	Overlay  [2]float64 `json:"overlay"`
	Sync     [2]float64 `json:"sync"`
	Bindings [2]float64 `json:"bindings"`
	Direct   [2]float64 `json:"direct"`
	// WindowMean and WindowMax: per node and window of ConnWindow, over
	// the windows in which the node exchanged a frame.
	WindowMean float64 `json:"window_mean"`
	WindowMax  int     `json:"window_max"`
	// WindowBy is WindowMean by what the frames carried: tree links,
	// overlay upkeep, sync, bindings, direct deltas (a peer may count in
	// several).
	WindowBy [5]float64 `json:"window_by"`
	// Windows is WindowMean window by window, in order (the last one
	// partial), and WindowMaxes the most of each: the overlays' forming at
	// the start weighs on the mean, and the later windows are what a node
	// holds once they have formed.
	Windows     []float64 `json:"windows"`
	WindowMaxes []int     `json:"window_maxes"`
}

func (c *wireCounts) connections() Connections {
	var out Connections
	stat := func(sets [][]uint64) (float64, int) {
		sum, most := 0, 0
		for _, b := range sets {
			k := ones(b)
			sum += k
			most = max(most, k)
		}
		if len(sets) == 0 {
			return 0, 0
		}
		return float64(sum) / float64(len(sets)), most
	}
	out.Mean, out.Max = stat(c.peers[connAll])
	for k, dst := range map[int]*[2]float64{connTree: &out.Tree, connOverlay: &out.Overlay, connSync: &out.Sync, connBindings: &out.Bindings, connDirect: &out.Direct} {
		m, x := stat(c.peers[k])
		*dst = [2]float64{m, float64(x)}
	}
	if c.window[connAll] != nil {
		c.closeWindow() // the last, partial one
	}
	if n := c.windowN; n > 0 {
		out.WindowMean, out.WindowMax = float64(c.windowSum[connAll])/float64(n), slices.Max(c.windowMaxes)
		for k := connTree; k < connClasses; k++ {
			out.WindowBy[k-connTree] = float64(c.windowSum[k]) / float64(n)
		}
		out.Windows, out.WindowMaxes = c.windows, c.windowMaxes
	}
	return out
}

// TreeKind is one epidemic message kind's share of the tree frames.
type TreeKind struct {
	Kind     string `json:"kind"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
}

func (c *wireCounts) treeKinds() []TreeKind {
	var out []TreeKind
	for k := range c.treeMsgs {
		if c.treeMsgs[k] > 0 {
			out = append(out, TreeKind{Kind: epidemic.Kind(k).String(), Messages: c.treeMsgs[k], Bytes: c.treeBytes[k]})
		}
	}
	return out
}

// writeScale prints the figures of replication at scale (issue 14), one
// line each: where the tree frames' bytes go, the rounds to reach 99.99%
// of an update's holders, and the connections per node.
func (r *Report) writeScale(w io.Writer) {
	if len(r.TreeKinds) > 0 {
		var parts []string
		for _, k := range r.TreeKinds {
			parts = append(parts, fmt.Sprintf("%s %d (%d bytes)", k.Kind, k.Messages, k.Bytes))
		}
		fmt.Fprintf(w, "tree frames by kind: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "sync requests %d (%d bytes), answers %d (%d bytes)\n", r.SyncRequestMsgs, r.SyncRequestBytes,
		r.SyncMessages-r.SyncRequestMsgs, r.SyncBytes-r.SyncRequestBytes)
	var causes []string
	for c := replica.SyncCause(1); c < replica.NumSyncCauses; c++ {
		if sc := r.Syncs; sc.Asked[c] > 0 || sc.Answers[c] > 0 {
			causes = append(causes, fmt.Sprintf("%s %d (%d answered, %d bytes)", c, sc.Asked[c], sc.Answers[c], sc.AnswerBytes[c]))
		}
	}
	if len(causes) > 0 || r.Syncs.Unasked > 0 {
		fmt.Fprintf(w, "  namespaces asked by cause: %s; unasked answers %d (%d bytes)\n", strings.Join(causes, ", "), r.Syncs.Unasked, r.Syncs.UnaskedBytes)
	}
	if sc := r.Syncs; sc.WriterHeld > 0 {
		fmt.Fprintf(w, "  held for their writer's right: %d deltas, %d passed once it came, %d asked again when their time was up, %d pushed out\n",
			sc.WriterHeld, sc.WriterReleased, sc.WriterExpired, sc.WriterEvicted)
	}
	if rd := r.Rounds; rd.Updates > 0 || rd.Short > 0 {
		fmt.Fprintf(w, "rounds to 99.99%% of an update's holders: %.2f hops, %.2f link latencies; push-epidemic model %.2f (ratios %.2f, %.2f); %d updates of %.0f holders on average, %d short of 99.99%%\n",
			rd.Hops, rd.Latencies, rd.Model, rd.HopsRatio(), rd.LatenciesRatio(), rd.Updates, rd.Holders, rd.Short)
	}
	c := r.Connections
	fmt.Fprintf(w, "connections per node (distinct peers it exchanged frames with, mean/max): run %.1f/%d (tree links %.1f/%.0f, overlay upkeep %.1f/%.0f, sync %.1f/%.0f, bindings %.1f/%.0f, direct deltas %.1f/%.0f); any %v %.1f/%d (tree links %.1f, overlay upkeep %.1f, sync %.1f, bindings %.1f, direct deltas %.1f); window by window %s\n",
		c.Mean, c.Max, c.Tree[0], c.Tree[1], c.Overlay[0], c.Overlay[1], c.Sync[0], c.Sync[1], c.Bindings[0], c.Bindings[1], c.Direct[0], c.Direct[1],
		ConnWindow, c.WindowMean, c.WindowMax, c.WindowBy[0], c.WindowBy[1], c.WindowBy[2], c.WindowBy[3], c.WindowBy[4], windowSeries(c.Windows, c.WindowMaxes))
}

// windowSeries prints the windows' means and most, the first three and
// the last three of a longer run.
func windowSeries(ws []float64, most []int) string {
	var parts []string
	for i, w := range ws {
		if len(ws) > 6 && i == 3 {
			parts = append(parts, "…")
		}
		if len(ws) <= 6 || i < 3 || i >= len(ws)-3 {
			parts = append(parts, fmt.Sprintf("%.1f/%d", w, most[i]))
		}
	}
	return strings.Join(parts, " ")
}
