package replica

import (
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// A sync answer split in batches must not leave the requester past a
// removal without the removed dot: n1 gets the batch carrying m1 after
// n0 removed a tag, loses the batch that follows, and then answers n2,
// which still holds the tag. Once every sync has run, every node must
// have dropped the tag; a node left holding it with the same context as
// the others is never repaired (found by the simulator at 100 nodes).
func TestSplitSyncAnswerCarriesRemovals(t *testing.T) {
	c := newCluster(t, 3, Config{BatchMaxBytes: 1}, openPolicy{}, 9) // one record per batch
	c.pump(10)
	n0, n1, n2 := c.nodes[0], c.nodes[1], c.nodes[2]
	const ns = "team://a"
	m := n0.st.Map(ns)
	local := func(d *crdt.Map) { n0.eng.LocalDelta(ns, sealInto(m, ns, d, n0.signer)) }

	// n0 saves m1 with the tag "auth"; only n2 hears of it.
	c.drop = func(_, to PeerID, _ *wire.Message) bool { return to == n1.id }
	n0.clock.Observe(m.MaxTimestamp(), c.now)
	d1, _ := m.Set(n0.rep, n0.clock.Now(c.now), "m1", "title", []byte("t"))
	d2, _ := m.Add(n0.rep, "m1", "tags", "auth")
	d1.Join(d2)
	local(d1)
	c.pump(10)

	// n0 removes the tag and saves m2; nobody hears of either.
	c.drop = func(from, _ PeerID, _ *wire.Message) bool { return from == n0.id }
	e, _ := m.Edit(n0.rep, "m1", crdt.DefaultLimits())
	e.Remove("tags", "auth")
	_ = e.Set(n0.clock.Now(c.now), "ua", []byte("x"))
	local(e.Delta())
	d3, _ := m.Set(n0.rep, n0.clock.Now(c.now), "m2", "title", []byte("u"))
	local(d3)
	c.pump(10)

	// n1 asks n0 for a sync: the batch with m1 arrives, those after it
	// (m2's, and the last, which claims the removed dot) are lost.
	c.drop = func(from, to PeerID, msg *wire.Message) bool {
		if from != n0.id || to != n1.id || msg.Kind != wire.KindSyncReply {
			return from == n0.id // n0 stays cut off from n2
		}
		for _, d := range msg.Deltas {
			dm, err := crdt.DecodeMap(d.Delta, crdt.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if dm.Entry("m1") != nil {
				return false
			}
		}
		return len(msg.Deltas) > 0
	}
	if err := n1.eng.RequestSync(n0.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	if r, _ := n1.st.Map(ns).Get("m1"); r == nil || r.HasElement("tags", "auth") {
		t.Fatal("the scenario did not happen: n1 should hold m1 without the tag")
	}
	// n2, which still holds the tag, syncs with n1.
	c.drop = func(from, _ PeerID, _ *wire.Message) bool { return from == n0.id }
	if err := n2.eng.RequestSync(n1.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)

	// Everyone heals and syncs with everyone.
	c.drop = nil
	for range 3 {
		for _, a := range c.nodes {
			for _, b := range c.nodes {
				if a != b {
					if err := a.eng.RequestSync(b.id, ns); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		c.pump(20)
	}
	for _, nd := range c.nodes {
		if r, _ := nd.st.Map(ns).Get("m1"); r == nil || r.HasElement("tags", "auth") {
			t.Fatalf("%s: the removed tag survived every sync (m1 %v)", nd.id, r != nil)
		}
	}
	if !c.converged(ns) {
		t.Fatal("not converged")
	}
}
