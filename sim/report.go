package sim

import (
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/sync/replica"
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
	Relays       RelayAttacks      `json:"relays"` // hostile relays' tampering (trees.go)
}

func (s *Sim) report(wall time.Duration) *Report {
	v, sv := s.check()
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
		TreeMessages: s.stats.treeMsgs, TreeBytes: s.stats.treeBytes, Trees: s.treeTotals(), Relays: s.relay.counts,
		DeltasApplied: t.applied, MinDeltaBytes: s.stats.minDeltaBytes, StateBytes: s.stats.stateBytes,
		Fallbacks: t.fallbacks, Retransmits: t.retransmits, MaxQueue: t.maxQueue, QueueBound: s.cfg.Engine.QueueMaxDeltas,
		Rejected: t.rejected, Dropped: s.stats.dropped, WallMS: wall.Milliseconds(),
		Ops: s.stats.ops, Acked: len(s.acked), Shares: s.stats.shares,
		Edits: s.stats.edits, Decisions: s.stats.decisions, Capsules: s.stats.capsules, CapsuleRevokes: s.stats.capsuleRevokes,
		Projections: s.stats.projections, Forged: s.stats.forgedN, Attacks: s.stats.attacks, Grants: s.stats.grants,
		Revokes: s.stats.revokes, Retracts: s.stats.retracts, Crashes: s.stats.crashes, CutWrites: s.stats.cutWrites,
		TotalVirtualMS: s.now.Milliseconds(),
		Replay:         s.cfg.ReplayCommand(),
		Spreads:        s.spreads(),
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
