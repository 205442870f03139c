package replica

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/wire"
)

// syncRequestsOf counts the sync requests asking about ns in what was sent.
func syncRequestsOf(msgs []*wire.Message, ns string) int {
	n := 0
	for _, m := range msgs {
		if m.Kind != wire.KindSyncRequest {
			continue
		}
		for _, nc := range m.Contexts {
			if nc.Namespace == ns {
				n++
			}
		}
	}
	return n
}

// contentAnswers counts the sync answers that carried records of ns.
func contentAnswers(t *testing.T, msgs []*wire.Message, ns string) int {
	n := 0
	for _, m := range msgs {
		if m.Kind != wire.KindSyncReply {
			continue
		}
		for _, nd := range m.Deltas {
			if nd.Namespace != ns {
				continue
			}
			d, err := crdt.DecodeMap(nd.Delta, crdt.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			records := 0
			d.Records(func(string, *crdt.Record) bool { records++; return true })
			if records > 0 {
				n++
			}
		}
	}
	return n
}

// recordSent keeps every message the cluster sends.
func (c *cluster) recordSent() *[]*wire.Message {
	var sent []*wire.Message
	c.drop = func(_, _ PeerID, m *wire.Message) bool {
		sent = append(sent, m)
		return false
	}
	return &sent
}

// A delta refused because the node does not know its writer may write is
// applied once the binding that says so comes (UpdatePeers: the writer's
// principals changed), with no sync: the content is not sent twice.
func TestHeldForWriterAppliedWhenTheBindingComes(t *testing.T) {
	pol := writersPolicy{writers: map[crdt.ReplicaID]bool{}}
	c := newCluster(t, 2, Config{}, pol, 41)
	sent := c.recordSent()
	c.write(0, "team://a", "m0", "title", "before n1 knows n0 hosts a writer")
	c.pump(10)
	if c.converged("team://a") {
		t.Fatal("n1 took a write of a replica it may not know writes")
	}
	pol.writers[c.nodes[0].rep] = true
	p := testPeer("n0", 0)
	p.Principals = []namespace.Address{namespace.MustParse("agent://w")}
	c.nodes[1].eng.UpdatePeers([]Peer{p})
	c.pump(10)
	if !c.converged("team://a") {
		t.Fatal("the held delta was not applied when its writer's binding came")
	}
	if n := contentAnswers(t, *sent, "team://a"); n != 0 {
		t.Fatalf("%d sync answers brought team://a's records again; want none", n)
	}
	if s := c.nodes[1].eng.SyncStats(); s.WriterHeld != 1 || s.WriterReleased != 1 {
		t.Fatalf("held %d, released %d; want 1 and 1", s.WriterHeld, s.WriterReleased)
	}
	// Its time past, nothing is asked again.
	c.tick(3 * time.Second)
	c.pump(10)
	if s := c.nodes[1].eng.SyncStats(); s.WriterExpired != 0 {
		t.Fatalf("%d expired after it passed", s.WriterExpired)
	}
}

// A grant travels in the namespace it governs: a delta of the namespace
// applied has the held deltas checked again, and one it lets pass is
// applied.
func TestHeldForWriterAppliedWhenTheGrantComes(t *testing.T) {
	pol := writersPolicy{writers: map[crdt.ReplicaID]bool{}}
	c := newCluster(t, 3, Config{}, pol, 43)
	sent := c.recordSent()
	pol.writers[c.nodes[2].rep] = true // n2 writes; n0 not yet
	c.write(0, "team://a", "m0", "title", "n0's, refused")
	c.pump(10)
	pol.writers[c.nodes[0].rep] = true // the grant, which n2's next delta "carries"
	c.write(2, "team://a", "m2", "title", "n2's grant")
	c.pump(10)
	if !c.converged("team://a") {
		t.Fatal("the held delta was not applied once a delta of its namespace came")
	}
	if n := contentAnswers(t, *sent, "team://a"); n != 0 {
		t.Fatalf("%d sync answers brought team://a's records again; want none", n)
	}
}

// The held deltas are bounded: past WriterHoldMax the oldest goes, and its
// sender is asked for a sync at once (here the nodes refuse one another's
// writes, and n1 holds n0's, then n2's).
func TestHeldForWriterBounded(t *testing.T) {
	pol := writersPolicy{writers: map[crdt.ReplicaID]bool{}}
	c := newCluster(t, 3, Config{WriterHoldMax: 1, AntiEntropyInterval: time.Hour}, pol, 47)
	sent := c.recordSent()
	c.write(0, "team://a", "m0", "title", "held, then pushed out")
	c.pump(10)
	c.write(2, "team://b", "m2", "title", "held")
	c.pump(10)
	c.tick(100 * time.Millisecond) // the request goes with the next flush of n0
	c.pump(10)
	if s := c.nodes[1].eng.SyncStats(); s.WriterEvicted == 0 {
		t.Fatalf("held %d, pushed out none; want the first pushed out", s.WriterHeld)
	}
	if n := syncRequestsOf(*sent, "team://a"); n == 0 {
		t.Fatal("the delta pushed out was not asked for again")
	}
}

// Over a broadcast tree, a relayed delta refused for its author's right is
// held, and once the author's binding comes it is stepped into the tree:
// delivered, forwarded and announced, so every node gets it without a
// sync.
func TestHeldRelayedSteppedIntoTheTree(t *testing.T) {
	pol := openPolicy{readOnly: map[crdt.ReplicaID]bool{}}
	c := treeCluster(t, 8, Config{AntiEntropyInterval: time.Hour}, pol, 53)
	pol.readOnly[c.nodes[3].rep] = true
	sent := c.recordSent()
	c.write(3, "team://a", "m3", "title", "before anyone knows n3 writes")
	c.settle(500 * time.Millisecond)
	if c.converged("team://a") {
		t.Fatal("a write of a replica no one knows writes was taken")
	}
	delete(pol.readOnly, c.nodes[3].rep)
	p := testPeer("n3", 3)
	p.Principals = []namespace.Address{namespace.MustParse("agent://w")}
	for i, nd := range c.nodes {
		if i != 3 {
			nd.eng.UpdatePeers([]Peer{p})
		}
	}
	c.settle(time.Second)
	if !c.converged("team://a") {
		t.Fatal("the held relayed delta did not reach every node")
	}
	if n := contentAnswers(t, *sent, "team://a"); n != 0 {
		t.Fatalf("%d sync answers brought team://a's records again; want none", n)
	}
	var released uint64
	for _, nd := range c.nodes {
		released += nd.eng.SyncStats().WriterReleased
	}
	if released == 0 {
		t.Fatal("no held delta passed")
	}
}

// A writer whose node hosts agents known here and who is refused lacks a
// grant, or may not write: its delta is not held (it would pass on a
// grant that came after it), and its sender is asked for a sync at once.
func TestBoundWriterRefusedIsNotHeld(t *testing.T) {
	pol := writersPolicy{writers: map[crdt.ReplicaID]bool{}}
	c := newCluster(t, 2, Config{}, pol, 59)
	p := testPeer("n0", 0)
	p.Principals = []namespace.Address{namespace.MustParse("agent://w")}
	c.nodes[1].eng.UpdatePeers([]Peer{p})
	sent := c.recordSent()
	c.write(0, "team://a", "m0", "title", "by a bound writer without the grant")
	c.pump(10)
	if s := c.nodes[1].eng.SyncStats(); s.WriterHeld != 0 {
		t.Fatalf("%d held; want none", s.WriterHeld)
	}
	if n := syncRequestsOf(*sent, "team://a"); n == 0 {
		t.Fatal("the sender was not asked for a sync at once")
	}
}
