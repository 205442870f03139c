package replica

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// catchUpCluster is 12 nodes with anti-entropy every 10 s (rounds at
// about 10.1, 20.1, 30.1 s of its time), n0 and n1 the writers of
// team://a, cut in two by parity from cutAt to healAt (times since the
// cluster was made), n0 writing one record (two dots: far fewer than
// spreadMinDots, so no spread) at cutAt. It returns the cluster at until.
func catchUpCluster(t *testing.T, seed uint64, cutAt, healAt, until time.Duration) *cluster {
	t.Helper()
	_, w0 := testSigner(0)
	_, w1 := testSigner(1)
	start := time.Unix(1_800_000_000, 0)
	c := treeCluster(t, 12, Config{AntiEntropyInterval: 10 * time.Second},
		writersPolicy{writers: map[crdt.ReplicaID]bool{w0: true, w1: true}}, seed)
	cut := false
	c.drop = func(from, to PeerID, _ *wire.Message) bool { return cut && parity(from) != parity(to) }
	c.settle(start.Add(cutAt).Sub(c.now))
	cut = true
	c.write(0, "team://a", "during", "title", "cut")
	c.settle(healAt - cutAt)
	if c.converged("team://a") {
		t.Fatal("converged across the partition: the test cuts nothing")
	}
	cut = false
	c.settle(start.Add(until).Sub(c.now))
	return c
}

// A write the tree could not carry to the far side of a partition, too
// small to be spread, reaches every reader there within the first
// anti-entropy round after the heal: a writer that a sync brings it to
// sends it to the readers that had told it lately that they lacked it,
// rather than leaving them to ask again a round later (catchup.go). With
// readers asking one of two writers at random, one of which lacks the
// write, five readers all picking the one that has it is 1 in 32.
func TestOldWriteCaughtUpInFirstRoundAfterHeal(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		c := catchUpCluster(t, seed, 10500*time.Millisecond, 19*time.Second, 22*time.Second)
		if !c.converged("team://a") {
			var lack []PeerID
			for _, nd := range c.nodes {
				if !nd.st.Context("team://a").Equal(c.nodes[0].st.Context("team://a")) {
					lack = append(lack, nd.id)
				}
			}
			t.Fatalf("seed %d: %v still lack the write made in the cut, 3 s after the heal (one anti-entropy round)", seed, lack)
		}
	}
}

// A write younger than catchUpAge is left to the tree and its repairs:
// no node catches up its peers with it, though the first round after the
// heal brings it to writers and readers that lacked it.
func TestYoungWriteNotCaughtUp(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		c := catchUpCluster(t, seed, 18*time.Second, 18500*time.Millisecond, 21*time.Second)
		var catchUps uint64
		for _, nd := range c.nodes {
			catchUps += nd.eng.TreeStats().CatchUps
		}
		if catchUps != 0 {
			t.Fatalf("seed %d: %d catch-ups of a write %v old", seed, catchUps, 3*time.Second)
		}
	}
}
