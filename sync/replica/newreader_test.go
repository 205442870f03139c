package replica

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// sentKinds records, per sender and receiver, the kinds of the messages
// c moves from now on.
func (c *cluster) sentKinds() map[[2]PeerID][]wire.Kind {
	sent := map[[2]PeerID][]wire.Kind{}
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		sent[[2]PeerID{from, to}] = append(sent[[2]PeerID{from, to}], m.Kind)
		return false
	}
	return sent
}

// A node's first write in a namespace it came to hold after its peers
// joined goes live to the readers: it never asked whether they may read
// that namespace, so nothing says they were granted it just now (each
// used to be taken for a new reader and synced, one sync per reader for
// every such first write: 17k of the sync requests of mnemo sim --nodes
// 100 --ops 1000 --seed 1 --loss 0.1 --partitions 3).
func TestFirstWriteInNamespaceLearntLateGoesLive(t *testing.T) {
	c := newCluster(t, 3, Config{}, openPolicy{}, 21)
	c.write(0, "team://a", "m0", "title", "created on n0")
	c.pump(10)
	if !c.converged("team://a") {
		t.Fatal("the namespace did not reach n1 and n2")
	}
	sent := c.sentKinds()
	c.write(1, "team://a", "m1", "title", "n1's first write")
	c.pump(10)
	for _, to := range []PeerID{"n0", "n2"} {
		if got := sent[[2]PeerID{"n1", to}]; len(got) == 0 || got[0] != wire.KindDeltas {
			t.Fatalf("n1's first write went to %s as %v; want a live delta first", to, got)
		}
		for _, k := range sent[[2]PeerID{"n1", to}] {
			if k == wire.KindSyncRequest {
				t.Fatalf("n1 synced with %s on its first write: %v", to, sent[[2]PeerID{"n1", to}])
			}
		}
	}
	if !c.converged("team://a") {
		t.Fatal("not converged")
	}
}

// A peer this node knew could not read a namespace, and that may now, is a
// new reader still: it gets the history by sync before any live delta.
func TestKnownNonReaderGrantedIsSynced(t *testing.T) {
	pol := togglePolicy{readers: map[PeerID]bool{"n0": true, "n1": true}}
	c := newCluster(t, 3, Config{}, pol, 23)
	c.write(0, "team://a", "m0", "title", "created on n0")
	c.pump(10)
	c.write(1, "team://a", "m1", "title", "n1 asks about n2: not a reader")
	c.pump(10)
	pol.readers["n2"] = true
	sent := c.sentKinds()
	c.write(1, "team://a", "m2", "title", "after n2's grant")
	c.pump(10)
	if got := sent[[2]PeerID{"n1", "n2"}]; len(got) == 0 || got[0] != wire.KindSyncRequest {
		t.Fatalf("n1 sent the new reader n2 %v; want a sync request first", got)
	}
	if !c.converged("team://a") {
		t.Fatal("the new reader did not converge")
	}
}

// writersPolicy lets every peer read and hold; only the listed replicas
// may write.
type writersPolicy struct{ writers map[crdt.ReplicaID]bool }

func (writersPolicy) ShouldHold(string) bool                            { return true }
func (writersPolicy) PeerMayRead(Peer, string) bool                     { return true }
func (p writersPolicy) ReplicaMayWrite(r crdt.ReplicaID, _ string) bool { return p.writers[r] }

// mayReadOnly is a policy whose peers may read only as readers says.
type mayReadOnly struct {
	writersPolicy
	readers map[PeerID]bool
}

func (p mayReadOnly) PeerMayRead(peer Peer, _ string) bool { return p.readers[peer.ID] }

// A live delta refused because this node does not know its author may
// write is held for that right (writerhold.go); when none comes within
// WriterHoldFor, the node asks the author for a sync (the grant travels
// in the namespace, and the answer brings it with the writes), even when
// it cannot tell the author may read the namespace (a request carries a
// context, no content), and not again while that request is owed. The
// batch used to be sent again twice, refused each time, before the
// author fell back to a sync ten seconds later.
func TestRefusedForWantOfAuthorityAsksAuthor(t *testing.T) {
	pol := mayReadOnly{writersPolicy: writersPolicy{writers: map[crdt.ReplicaID]bool{}}, readers: map[PeerID]bool{"n1": true}}
	c := newCluster(t, 2, Config{}, pol, 25)
	sent := c.sentKinds()
	c.write(0, "team://a", "m0", "title", "n1 does not know n0 may write")
	c.write(0, "team://a", "m1", "title", "nor this")
	c.pump(10)
	requests := func() int {
		n := 0
		for _, k := range sent[[2]PeerID{"n1", "n0"}] {
			if k == wire.KindSyncRequest {
				n++
			}
		}
		return n
	}
	if got := c.nodes[1].eng.Stats()[0].Rejected; got != 2 {
		t.Fatalf("n1 rejected %d deltas; want both", got)
	}
	if n := requests(); n != 0 {
		t.Fatalf("n1 asked n0 for %d syncs while it held the deltas; want none yet", n)
	}
	c.tick(2 * time.Second) // WriterHoldFor: 2×RetransmitAfter
	c.pump(10)
	if n := requests(); n != 1 {
		t.Fatalf("n1 sent n0 %v; want one sync request once the hold's time was up", sent[[2]PeerID{"n1", "n0"}])
	}
	if s := c.nodes[1].eng.SyncStats(); s.WriterHeld != 2 || s.WriterExpired != 2 {
		t.Fatalf("held %d, expired %d; want 2 and 2", s.WriterHeld, s.WriterExpired)
	}
}

// Over a broadcast tree, a node's first write in a namespace it learnt
// late goes over the tree alone, as over direct sends: the readers it
// never asked about are taken for the readers they were, and no sync
// goes to them. (Those syncs, RetransmitAfter after the write, used to
// repair the tree's losses: 17,000 of the 23,600 sync requests in mnemo
// sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3, each reader
// sent back whatever it lacked, in flight over the tree or not; gap.go
// repairs those losses now.)
func TestFirstWriteOverTreeNoSync(t *testing.T) {
	c := treeCluster(t, 8, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 27)
	var sent []*wire.Message // n1's sync messages
	c.drop = func(from, _ PeerID, m *wire.Message) bool {
		if from == "n1" && (m.Kind == wire.KindSyncRequest || m.Kind == wire.KindSyncReply) {
			sent = append(sent, m)
		}
		return false
	}
	c.write(1, "team://a", "m1", "title", "n1's first write")
	c.settle(1500 * time.Millisecond)
	if !c.converged("team://a") {
		t.Fatal("the tree did not bring n1's write")
	}
	if len(sent) > 0 {
		t.Fatalf("n1 sent %d sync messages within a second and a half of its first write over the tree; want none", len(sent))
	}
}
