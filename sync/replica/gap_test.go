package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// A partition keeps each side's writes from the other, and the trees
// never bring them again once it heals. The links across it speak again
// after a silence, and the nodes sync the trees' namespaces over them
// (heardFrom): converged within seconds of the heal, with anti-entropy an
// hour apart and no write after it.
func TestTreePartitionHealSyncs(t *testing.T) {
	const n = 12
	c := treeCluster(t, n, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
	cut := true
	c.drop = func(from, to PeerID, _ *wire.Message) bool { return cut && parity(from) != parity(to) }
	for i := range 12 {
		c.write(i%n, "team://a", fmt.Sprintf("p%d", i), "title", fmt.Sprintf("during %d", i))
		c.settle(300 * time.Millisecond)
	}
	c.settle(3 * time.Second)
	if c.converged("team://a") {
		t.Fatal("converged across the partition: the test cuts nothing")
	}
	cut = false
	// Something crosses again: the trees' own traffic (a write on one side).
	c.write(0, "team://a", "after", "title", "healed")
	c.settle(5 * time.Second)
	var heals uint64
	for _, nd := range c.nodes {
		s := nd.eng.SyncStats()
		heals += s.Heals
	}
	if !c.converged("team://a") {
		t.Fatalf("not converged 5s after the partition healed (%d heals seen)", heals)
	}
	if heals == 0 {
		t.Fatal("converged without a heal seen: the test heals nothing")
	}
}

// A reader's context that holds dots this node lacks makes it ask their
// author, which may write, for a sync: a reader sends no content itself.
// n5 missed n0's write over the tree (every copy and announcement to it
// lost), then asks reader n3 for a sync: n3's answer is its context, and
// n5 gets the write from n0 without waiting for anti-entropy.
func TestReaderContextAsksWriter(t *testing.T) {
	_, w0 := testSigner(0)
	c := treeCluster(t, 10, Config{AntiEntropyInterval: time.Hour}, writersPolicy{writers: map[crdt.ReplicaID]bool{w0: true}}, 11)
	c.drop = func(_, to PeerID, m *wire.Message) bool { return to == "n5" && m.Kind == wire.KindTree }
	c.write(0, "team://a", "m1", "title", "n5 misses this")
	c.settle(3 * time.Second)
	c.drop = nil
	if c.byID("n5").st.Context("team://a").Equal(c.nodes[0].st.Context("team://a")) {
		t.Fatal("n5 got the write: the test drops nothing")
	}
	if err := c.byID("n5").eng.RequestSync("n3", "team://a"); err != nil {
		t.Fatal(err)
	}
	c.settle(time.Second)
	if !c.converged("team://a") {
		t.Fatal("n5 still lacks n0's write a second after reader n3 told its context")
	}
	if got := c.byID("n5").eng.SyncStats().Asked[CauseGap]; got == 0 {
		t.Fatal("converged without asking the writer: the test asks nothing")
	}
}

// A reader's context shows dots whose author has left: another writer,
// which holds them, is asked, and the gap is repaired without waiting for
// anti-entropy.
func TestGapAsksAnotherWriterWhenTheAuthorLeft(t *testing.T) {
	_, w0 := testSigner(0)
	_, w1 := testSigner(1)
	c := treeCluster(t, 10, Config{AntiEntropyInterval: time.Hour}, writersPolicy{writers: map[crdt.ReplicaID]bool{w0: true, w1: true}}, 11)
	c.drop = func(_, to PeerID, m *wire.Message) bool { return to == "n5" && m.Kind == wire.KindTree }
	c.write(0, "team://a", "m1", "title", "n5 misses this")
	c.settle(1500 * time.Millisecond)
	// n0 leaves: every other node drops it from its peers.
	c.drop = func(from, to PeerID, _ *wire.Message) bool { return from == "n0" || to == "n0" }
	var peers []Peer
	for i, nd := range c.nodes[1:] {
		peers = append(peers, testPeer(nd.id, i+1))
	}
	for _, nd := range c.nodes[1:] {
		nd.eng.SetPeers(peers)
	}
	c.settle(300 * time.Millisecond)
	if c.byID("n5").st.Context("team://a").Equal(c.byID("n1").st.Context("team://a")) {
		t.Fatal("n5 got the write it was to miss")
	}
	if err := c.byID("n5").eng.RequestSync("n3", "team://a"); err != nil { // a reader: its context shows the gap
		t.Fatal(err)
	}
	c.settle(time.Second)
	if !c.byID("n5").st.Context("team://a").Equal(c.byID("n1").st.Context("team://a")) {
		t.Fatalf("n5 still lacks the write of a writer gone (asked %v)", c.byID("n5").eng.SyncStats().Asked)
	}
}

// A writer that went silent owing this node a sync (crashed, not yet
// retired) does not hold back the repair another peer's evidence asks for.
func TestSilentWriterOwingASyncHoldsNoRepairBack(t *testing.T) {
	_, w0 := testSigner(0)
	_, w2 := testSigner(2)
	c := treeCluster(t, 10, Config{AntiEntropyInterval: time.Hour}, writersPolicy{writers: map[crdt.ReplicaID]bool{w0: true, w2: true}}, 11)
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		return from == "n2" || to == "n2" || to == "n5" && m.Kind == wire.KindTree && m.Tree != nil && len(m.Deltas) > 0
	}
	if err := c.byID("n5").eng.RequestSync("n2", "team://a"); err != nil { // as an anti-entropy round would
		t.Fatal(err)
	}
	c.settle(300 * time.Millisecond)
	c.write(0, "team://a", "m1", "title", "n5 misses this")
	c.settle(1500 * time.Millisecond)
	if err := c.byID("n5").eng.RequestSync("n3", "team://a"); err != nil {
		t.Fatal(err)
	}
	c.settle(2 * time.Second)
	if !c.byID("n5").st.Context("team://a").Equal(c.byID("n0").st.Context("team://a")) {
		t.Fatalf("n5 still lacks n0's write 2 s after the gap showed (asked %v)", c.byID("n5").eng.SyncStats().Asked)
	}
}

// parity is the side of a cut between even and odd node ids (nN) a peer
// is on.
func parity(id PeerID) int {
	var i int
	fmt.Sscanf(string(id), "n%d", &i)
	return i % 2
}
