package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/sync/replica"
)

func TestTreesCarrySaves(t *testing.T) { testTreesCarrySaves(t, newMemNet().network) }

// Five nodes read team://core, at a threshold of four: the cluster loop
// carries the engine's tree frames like any other, and once the tree has
// formed, saves on three writers go over it and reach every node. (With
// five nodes and active views of five, each writer reaches every reader
// itself; relaying through readers is tested in sync/replica.)
func testTreesCarrySaves(t *testing.T, net network) {
	const n, writers, saves = 5, 3, 4
	nodes := startNodesWith(t, n, sharedOK{}, net, func(_ int, _ acl.Identity, cfg *Config) { cfg.Engine.TreeThreshold = 4 })
	ctx := context.Background()
	eventually(t, convergeWithin, "every node knows who hosts whom", func() bool {
		for _, nd := range nodes {
			for j, other := range nodes {
				if nd != other && agentsOn(nd.cl, other.cl.cfg.Identity.NodeID()) != fmt.Sprintf("agent://n%d", j) {
					return false
				}
			}
		}
		return true
	})
	// The first save of the namespace goes direct while its tree forms
	// (no link yet): wait for every node's links before the counted ones.
	var ids []string
	for w := range writers {
		r, err := nodes[w].svc.Save(ctx, nodes[w].me, memory.SaveRequest{Namespace: "team://core", Content: fmt.Sprintf("first note of writer %d", w)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	eventually(t, convergeWithin, "every node linked in team://core's tree", func() bool {
		for _, nd := range nodes {
			var links int
			if err := nd.cl.do(func() { links = len(nd.cl.eng.TreeActive("team://core")) }); err != nil || links == 0 {
				return false
			}
		}
		return true
	})
	for i := range saves {
		for w := range writers {
			r, err := nodes[w].svc.Save(ctx, nodes[w].me, memory.SaveRequest{Namespace: "team://core", Content: fmt.Sprintf("note %d of writer %d", i, w)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
	}
	for _, nd := range nodes {
		for _, id := range ids {
			eventually(t, convergeWithin, "every save on every node", func() bool {
				_, err := nd.svc.Get(ctx, nd.me, id, false)
				return err == nil
			})
		}
	}
	var trees replica.TreeStats
	for _, nd := range nodes {
		st := nd.cl.Status(false).Trees
		trees.Broadcasts += st.Broadcasts
		trees.Relayed += st.Relayed
		trees.Node.PayloadsSent += st.Node.PayloadsSent
	}
	if trees.Broadcasts == 0 || trees.Relayed == 0 {
		t.Fatalf("no save went over a tree: %+v", trees)
	}
	t.Logf("%d saves on %d nodes: %d broadcast over the tree, %d relayed deltas applied, %d payload sends", len(ids), n, trees.Broadcasts, trees.Relayed, trees.Node.PayloadsSent)
}
