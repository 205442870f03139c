package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// oneSided cuts a tree cluster of 12 in two (even and odd ids) while n0,
// a writer on the even side, writes 40 times: every odd node is a reader, and
// most of them have no link across the cut, so notice no silence. After
// the cut heals, n2 (a writer that wrote nothing during it, so its delta
// depends on nothing the odd side lacks) writes once: something crosses
// again. Every node must hold everything within 5 s, with anti-entropy an
// hour apart. cutFor is how long the cut lasts after the last write in
// it: longer than epidemic PayloadTTL, the payloads announced again at
// the heal are gone and only their ids are left.
func oneSided(t *testing.T, seed uint64, cutFor time.Duration) {
	_, w0 := testSigner(0)
	_, w2 := testSigner(2)
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour},
		writersPolicy{writers: map[crdt.ReplicaID]bool{w0: true, w2: true}}, seed)
	cut := true
	c.drop = func(from, to PeerID, _ *wire.Message) bool { return cut && parity(from) != parity(to) }
	for i := range 40 { // 80 dots: above spreadMinDots
		c.write(0, "team://a", fmt.Sprintf("p%d", i), "title", fmt.Sprintf("during %d", i))
		c.settle(100 * time.Millisecond)
	}
	c.settle(cutFor)
	if c.converged("team://a") {
		t.Fatal("converged across the partition: the test cuts nothing")
	}
	cut = false
	c.write(2, "team://a", "after", "title", "healed")
	c.settle(5 * time.Second)
	if !c.converged("team://a") {
		var lack []PeerID
		var s SyncStats
		for _, nd := range c.nodes {
			s.Add(nd.eng.SyncStats())
			if !nd.st.Context("team://a").Equal(c.nodes[0].st.Context("team://a")) {
				lack = append(lack, nd.id)
			}
		}
		t.Fatalf("seed %d: %v lack writes 5 s after the heal (%d probes, %d heals, asked %v)", seed, lack, s.HealProbes, s.Heals, s.Asked)
	}
}

// A one-sided partition with readers on both sides converges without
// anti-entropy: each link across the cut that lost payloads is its own
// heal (not only the first per namespace), and what it brings goes on
// over the tree to the readers beyond it.
func TestOneSidedPartitionReadersConverge(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		oneSided(t, seed, 3*time.Second)
	}
}

// The same, with the cut lasting past the payloads' PayloadTTL: the heal
// announces ids whose payloads are gone, and the sync brings them.
func TestLongOneSidedPartitionReadersConverge(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		oneSided(t, seed, 35*time.Second)
	}
}

// A leaf of the trees that is only pushed to says nothing back for
// seconds at a time: that silence is no heal. Writes 3 s apart without
// faults: peers are heard again after silences (probes), but none asks
// for what is announced again, so no heal sync is asked for.
func TestSilentLeafIsNoHeal(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
	for i := range 6 {
		c.write(i%3, "team://a", fmt.Sprintf("q%d", i), "title", "quiet")
		c.settle(3 * time.Second)
	}
	if !c.converged("team://a") {
		t.Fatal("not converged without faults")
	}
	var s SyncStats
	for _, nd := range c.nodes {
		s.Add(nd.eng.SyncStats())
	}
	if s.HealProbes == 0 {
		t.Fatal("no peer heard again after a silence: the test probes nothing")
	}
	if s.Heals != 0 || s.Asked[CauseHeal] != 0 {
		t.Fatalf("%d heals, %d namespaces asked for them, without a fault (%d probes)", s.Heals, s.Asked[CauseHeal], s.HealProbes)
	}
}

// A cluster gone idle after a few writes sends (nearly) no announcements:
// a heal probe's own re-announcement is no new silence to probe, or each
// frame a leaf sent next (a shuffle) would re-announce the same ids again
// for as long as they are kept (214 IHave frames over 3 idle minutes
// before, 3 after).
func TestIdleClusterStopsProbing(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
	for i := range 6 {
		c.write(i%3, "team://a", fmt.Sprintf("q%d", i), "title", "quiet")
		c.settle(3 * time.Second)
	}
	ihaves := 0
	c.drop = func(_, _ PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindTree && m.Tree.Kind == uint8(epidemic.KindIHave) {
			ihaves++
		}
		return false
	}
	c.settle(180 * time.Second)
	if ihaves > 12 {
		t.Fatalf("%d IHave frames over 3 idle minutes; want at most one per node", ihaves)
	}
}

// The evidence of a heal is a want of a payload a probe announced again,
// after the probe: a want of any other payload, or one in the frame that
// ended the silence (same instant: it asks for what came before), is no
// heal, and one heal per probe at most.
func TestHealNeedsAWantOfAProbedPayload(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
	e := c.nodes[0].eng
	tr := e.trees["team://a"]
	p := e.peers[c.nodes[1].id]
	probed, other := epidemic.MsgID{1}, epidemic.MsgID{2}
	heals := func() uint64 { return e.SyncStats().Heals }
	if tr.probed == nil {
		tr.probed = map[PeerID]probe{}
	}
	tr.probed[p.ID] = probe{at: e.now, ids: []epidemic.MsgID{probed}}
	if got := e.wantFrom(p, tr, []epidemic.MsgID{probed}); len(got) != 1 || heals() != 0 {
		t.Fatalf("a want in the frame that ended the silence: answered %d, heals %d; want it answered, no heal", len(got), heals())
	}
	e.now = e.now.Add(time.Second)
	if got := e.wantFrom(p, tr, []epidemic.MsgID{other}); len(got) != 1 || heals() != 0 {
		t.Fatalf("a want of a payload not probed: answered %d, heals %d; want it answered, no heal", len(got), heals())
	}
	if got := e.wantFrom(p, tr, []epidemic.MsgID{probed, other}); len(got) != 1 || got[0] != other || heals() != 1 {
		t.Fatalf("a want of the probed payload: answered %v, heals %d; want the other only answered, one heal", got, heals())
	}
	if e.wantFrom(p, tr, []epidemic.MsgID{probed}); heals() != 1 {
		t.Fatalf("a second want of it: heals %d; want still one", heals())
	}
}
