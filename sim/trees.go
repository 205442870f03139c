package sim

import (
	"fmt"
	"io"

	"github.com/mnemohq/mnemo/sync/replica"
)

// The broadcast trees' figures: the engines carry live deltas of replica
// sets of Config.Engine.TreeThreshold holders or more over epidemic trees
// (sync/replica/doc.go, "Trees"); the simulator counts their frames like
// the others and sums the engines' tree counters, the crashed
// incarnations' included.

// treeTotals sums every node's tree counters over its incarnations.
func (s *Sim) treeTotals() replica.TreeStats {
	var t replica.TreeStats
	for _, n := range s.nodes {
		t.Add(n.deadTrees)
		if n.up {
			t.Add(n.loop.Status(false).Trees)
		}
	}
	return t
}

// writeTrees prints the wire bytes against the minimum and the trees'
// figures (Report.WriteText).
func (r *Report) writeTrees(w io.Writer) {
	if r.MinDeltaBytes > 0 {
		fmt.Fprintf(w, "  bytes on the wire / minimum: %.2f (delta, sync and tree frames: %.2f)\n", float64(r.Bytes)/float64(r.MinDeltaBytes),
			float64(r.DeltaBytes+r.SyncBytes+r.TreeBytes)/float64(r.MinDeltaBytes))
	}
	t := r.Trees
	fmt.Fprintf(w, "  tree frames %d (%d bytes): %d broadcasts (up to %d trees a node), %d sent direct (no link yet), %d relayed deltas applied;\n"+
		"    %d payload sends, %d announced ids, %d wants, %d grafts, %d given up, %d repairs asked of authors, %d relays distrusted\n",
		r.TreeMessages, r.TreeBytes, t.Broadcasts, t.Trees, t.Direct, t.Relayed, t.Node.PayloadsSent, t.Node.IHaveIDs, t.Node.Wants, t.Node.Grafts, t.Node.GaveUp, t.Repairs, t.Distrusted)
}
