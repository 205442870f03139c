package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/sync/replica"
)

// The digest's turns at 300 members: a node tells, in each round, the
// peers that tell it in that round (so its connections in a window are
// the turn's, not twice as many), every pair has exactly one turn in each
// cycle of rounds, and a round's turn is bindingsSummaryFanout on average.
func TestSummaryTurnsAreMutual(t *testing.T) {
	const n = 300
	ids := make([]replica.PeerID, n)
	for i := range ids {
		ids[i] = replica.PeerID(fmt.Sprintf("node-%03d", i))
	}
	others := func(self replica.PeerID) []replica.PeerID {
		return slices.DeleteFunc(slices.Clone(ids), func(p replica.PeerID) bool { return p == self })
	}
	xs := make([]bindingsExchange, n)
	for i := range xs {
		xs[i] = newBindingsExchange(time.Time{}, ids[i])
	}
	start := time.Unix(1_800_000_000, 0)
	cycle := (n - 1 + bindingsSummaryFanout - 1) / bindingsSummaryFanout
	turns := map[[2]int]int{} // pair -> turns over one cycle
	most, total := 0, 0
	for r := range cycle {
		now := start.Add(time.Duration(r)*BindingsInterval + time.Duration(r%7)*time.Second) // sends drift within their round
		told := make([]map[replica.PeerID]bool, n)
		for i := range xs {
			turn := xs[i].summaryTurn(others(ids[i]), n-1, now)
			most, total = max(most, len(turn)), total+len(turn)
			told[i] = map[replica.PeerID]bool{}
			for _, p := range turn {
				told[i][p] = true
			}
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				a, b := told[i][ids[j]], told[j][ids[i]]
				if a != b {
					t.Fatalf("round %d: %s tells %s %v, but %s tells %s %v", r, ids[i], ids[j], a, ids[j], ids[i], b)
				}
				if a {
					turns[[2]int{i, j}]++
				}
			}
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if k := turns[[2]int{i, j}]; k != 1 {
				t.Fatalf("%s and %s had %d turns in a cycle of %d rounds, want 1", ids[i], ids[j], k, cycle)
			}
		}
	}
	if mean := float64(total) / float64(n*cycle); mean < 0.75*bindingsSummaryFanout || mean > bindingsSummaryFanout || most > 3*bindingsSummaryFanout {
		t.Errorf("a round's turn held %.1f peers on average, at most %d; want about %d", mean, most, bindingsSummaryFanout)
	}
	// A round missed by the sends' drift is served with the next; a short
	// list goes whole.
	x := newBindingsExchange(time.Time{}, ids[0])
	x.summaryTurn(others(ids[0]), n-1, start)
	two := x.summaryTurn(others(ids[0]), n-1, start.Add(2*BindingsInterval))
	y := newBindingsExchange(time.Time{}, ids[0])
	one := len(y.summaryTurn(others(ids[0]), n-1, start.Add(BindingsInterval))) + len(y.summaryTurn(others(ids[0]), n-1, start.Add(2*BindingsInterval)))
	if len(two) != one {
		t.Errorf("rounds 1 and 2 served at once: %d peers, one at a time %d", len(two), one)
	}
	if few := x.summaryTurn(ids[1:5], n-1, start.Add(3*BindingsInterval)); len(few) != 4 {
		t.Errorf("4 peers whose digests may differ: turn %v, want all", few)
	}
}
