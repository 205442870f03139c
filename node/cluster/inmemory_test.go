package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/memory"
)

// Three nodes in one process over the in-memory network and membership
// and one stepped clock: no QUIC, no memberlist, no wall-clock ticks. A
// save on one node is pushed to the others without a tick; what was saved
// on either side of a partition reaches the other side once it heals,
// through the engine's timers running on the stepped clock.
func TestInMemoryClusterReplicatesAndHeals(t *testing.T) {
	net, clock := newMemNet(), newStepClock()
	part := &partition{group: map[string]int{}}
	const tick = 50 * time.Millisecond
	nodes := startNodesWith(t, 3, sharedOK{}, net.network, func(i int, id acl.Identity, cfg *Config) {
		part.group[string(id.NodeID())] = min(i, 1) // n0 | n1 n2
		cfg.Clock, cfg.Tick = clock, tick
		cfg.StartTransport = part.transport(string(id.NodeID()), cfg.StartTransport)
		cfg.Engine.AckTimeout = time.Second
		cfg.Engine.AntiEntropyInterval = time.Second
	})
	// step moves the clock one tick and waits until every loop has acted
	// on it (a request to the loop is served after the tick).
	step := func() {
		clock.Step(tick)
		for _, nd := range nodes {
			if err := nd.cl.do(func() {}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// settle waits for cond, moving the clock one tick at every poll.
	settle := func(what string, cond func() bool) {
		t.Helper()
		eventually(t, convergeWithin, what, func() bool {
			if cond() {
				return true
			}
			step()
			return false
		})
	}
	ctx := context.Background()
	has := func(nd *testNode, id string) bool {
		_, err := nd.svc.Get(ctx, nd.me, id, false)
		return err == nil
	}
	save := func(nd *testNode, content string) string {
		t.Helper()
		r, err := nd.svc.Save(ctx, nd.me, memory.SaveRequest{Namespace: "team://core", Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}

	settle("every node knows who hosts whom", func() bool {
		for _, nd := range nodes {
			for j, other := range nodes {
				if nd != other && agentsOn(nd.cl, other.cl.cfg.Identity.NodeID()) != fmt.Sprintf("agent://n%d", j) {
					return false
				}
			}
		}
		return true
	})
	first := save(nodes[0], "a note every node should see")
	for _, nd := range nodes[1:] {
		eventually(t, convergeWithin, "the save on a peer, with the clock standing still", func() bool { return has(nd, first) })
	}

	part.set(true)
	alone := save(nodes[0], "saved on the lone side")
	pair := save(nodes[1], "saved on the side of two")
	eventually(t, convergeWithin, "the pair's save within its side", func() bool { return has(nodes[2], pair) })
	for range 3 * time.Second / tick { // past the ack timeout and anti-entropy: retries are cut too
		step()
	}
	if has(nodes[0], pair) || has(nodes[1], alone) || has(nodes[2], alone) {
		t.Fatal("the partition leaked")
	}
	eventually(t, convergeWithin, "the lone node's frames dropped at the partition", func() bool {
		return nodes[0].cl.Status(false).DroppedFrames > 0
	})

	part.set(false)
	for _, nd := range nodes {
		settle("both sides' saves after the heal", func() bool { return has(nd, alone) && has(nd, pair) })
	}
	want, err := nodes[0].svc.Store().State("team://core")
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes[1:] {
		settle("equal digests", func() bool {
			got, err := nd.svc.Store().State("team://core")
			return err == nil && got.Digest() == want.Digest()
		})
	}
}
