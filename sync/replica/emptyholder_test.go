package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// blindWhileEmpty is an acl that cannot tell who may read a namespace
// while it holds none of it (the grants travel in the namespace).
type blindWhileEmpty struct{ st *MemState }

func (blindWhileEmpty) ShouldHold(string) bool                      { return true }
func (p blindWhileEmpty) PeerMayRead(_ Peer, ns string) bool        { return !p.st.Context(ns).IsEmpty() }
func (blindWhileEmpty) ReplicaMayWrite(crdt.ReplicaID, string) bool { return true }

// A holder whose first sync of a namespace was lost holds none of it, so
// refuses the tree traffic its neighbours push to it: it asks a peer it
// refused for a sync (authority: it cannot tell the peer may read), one
// peer at a time, rather than wait for the lost sync to be asked again
// or for anti-entropy.
func TestEmptyHolderRefusingTreeAsksSync(t *testing.T) {
	e, now := newEmptyHolder(t)
	if err := e.Step("n0", treeIHave("team://a")); err != nil {
		t.Fatal(err)
	}
	e.Tick(now)
	if got := syncAsks(e, "team://a"); got["n0"] == 0 {
		t.Fatalf("sync requests of team://a after refusing n0's tree message: %v; want one to n0", got)
	}
	if err := e.Step("n1", treeIHave("team://a")); err != nil {
		t.Fatal(err)
	}
	e.Tick(now)
	if got := syncAsks(e, "team://a"); len(got) != 0 {
		t.Fatalf("sync requests of team://a while n0's is owed: %v; want none (one peer at a time)", got)
	}
}

// An empty holder's ask lost on the way is asked again (as an authority
// ask: n0's read is still unknown here), and once its tries are spent
// another peer offering the tree is asked: the entry does not stay owed
// for ever while n0 keeps talking. Without the authority kept on retries
// n0 was asked once in 60 s and n1 never.
func TestEmptyHolderLostAskIsAskedAgain(t *testing.T) {
	e, now := newEmptyHolder(t)
	asked := map[PeerID]int{}
	for range 240 { // 60 s of both peers offering the tree; every request lost
		for _, from := range []PeerID{"n0", "n1"} {
			if err := e.Step(from, treeIHave("team://a")); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(250 * time.Millisecond)
		e.Tick(now)
		for id, n := range syncAsks(e, "team://a") {
			asked[id] += n
		}
	}
	if asked["n0"] < 2 || asked["n0"]+asked["n1"] <= syncTries {
		t.Fatalf("requests of team://a over 60 s, all lost: %v; want n0 asked again, and more than its %d tries in all", asked, syncTries)
	}
}

// A peer naming many namespaces in tree frames gets at most
// maxAuthorityAsks of them asked at a time (5,000 before).
func TestEmptyHolderAsksOnePeerAboutFewNamespaces(t *testing.T) {
	e, now := newEmptyHolder(t)
	for i := range 1000 {
		if err := e.Step("n0", treeIHave(fmt.Sprintf("team://x%d", i))); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			e.Tick(now)
		}
	}
	e.Tick(now)
	if asked := syncAsks(e, "")["n0"]; asked == 0 || asked > maxAuthorityAsks {
		t.Fatalf("%d namespaces asked of n0; want 1 to %d", asked, maxAuthorityAsks)
	}
}

// An empty holder whose neighbour only reads (it answers a request with
// its context alone) asks again no sooner than RetransmitAfter, however
// often that neighbour's tree frames come: 100 requests for 100
// announcements over 10 s before.
func TestEmptyHolderAsksAReaderAgainOnlyAfterAWhile(t *testing.T) {
	e, now := newEmptyHolder(t)
	// n0 reads only: its answer is its context, empty here.
	reply := &wire.Message{Kind: wire.KindSyncReply, Contexts: []wire.NamespaceContext{{Namespace: "team://a", Context: crdt.NewContext().Encode()}}}
	asked := 0
	for range 100 { // 10 s
		if err := e.Step("n0", treeIHave("team://a")); err != nil {
			t.Fatal(err)
		}
		now = now.Add(100 * time.Millisecond)
		e.Tick(now)
		if n := syncAsks(e, "team://a")["n0"]; n > 0 {
			asked += n
			if err := e.Step("n0", reply); err != nil {
				t.Fatal(err)
			}
		}
	}
	if limit := int(10*time.Second/e.cfg.RetransmitAfter) + 1; asked == 0 || asked > limit {
		t.Fatalf("%d requests of team://a over 10 s of announcements from a reader; want 1 to %d", asked, limit)
	}
}

// newEmptyHolder returns n2 of a cluster of three, blind while empty
// (blindWhileEmpty), with its peers set and its first tick taken, and the
// cluster's time.
func newEmptyHolder(t *testing.T) (*Engine, time.Time) {
	c := newCluster(t, 3, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 11)
	n2 := c.byID("n2")
	n2.eng = New(testConfig(Config{AntiEntropyInterval: time.Hour}, n2.id, 2), n2.st, blindWhileEmpty{n2.st})
	n2.eng.SetPeers([]Peer{testPeer("n0", 0), testPeer("n1", 1), testPeer("n2", 2)})
	n2.eng.Tick(c.now)
	n2.eng.Ready()
	return n2.eng, c.now
}

// treeIHave is a tree announcement of one payload in ns's overlay.
func treeIHave(ns string) *wire.Message {
	return &wire.Message{Kind: wire.KindTree, Overlay: ns, Tree: &wire.Tree{Kind: uint8(epidemic.KindIHave),
		IHave: []wire.Announcement{{ID: make([]byte, wire.TreeIDSize), Round: 1}}}}
}

// syncAsks takes e's messages out and counts, per peer, the sync requests'
// contexts of ns ("": of any namespace).
func syncAsks(e *Engine, ns string) map[PeerID]int {
	out := map[PeerID]int{}
	for _, env := range e.Ready().Messages {
		if env.Msg.Kind != wire.KindSyncRequest {
			continue
		}
		for _, nc := range env.Msg.Contexts {
			if ns == "" || nc.Namespace == ns {
				out[env.To]++
			}
		}
	}
	return out
}

// blindUntilHeld is an acl that cannot tell who may read or write a
// namespace while it holds none of it (the grants travel in it); a delta
// carries the grants that let it apply (DeltaPolicy).
type blindUntilHeld struct{ st *MemState }

func (blindUntilHeld) ShouldHold(string) bool               { return true }
func (p blindUntilHeld) PeerMayRead(_ Peer, ns string) bool { return !p.st.Context(ns).IsEmpty() }
func (blindUntilHeld) ForDelta(string, *crdt.Map) Policy    { return openPolicy{} }
func (p blindUntilHeld) ReplicaMayWrite(_ crdt.ReplicaID, ns string) bool {
	return !p.st.Context(ns).IsEmpty()
}

// A writer asks a holder of none of a namespace for a sync (a join), gets
// its empty context back, and answers with the namespace, which is lost.
// The holder cannot tell the writer may write, but the writer's context
// holds the writer's own dots: the answer is held owed and asked for
// again within seconds. Before, nothing was owed on either side, and the
// holder lacked the whole namespace until the writer's anti-entropy
// picked it (133.8 s in the simulator's sweep).
func TestEmptyHolderAsksAgainForAWritersLostAnswer(t *testing.T) {
	cfg := Config{AntiEntropyInterval: time.Hour}
	c := newCluster(t, 2, cfg, openPolicy{}, 11)
	n1 := c.byID("n1")
	n1.eng = New(testConfig(cfg, n1.id, 1), n1.st, blindUntilHeld{n1.st})
	n1.eng.SetPeers([]Peer{testPeer("n0", 0), testPeer("n1", 1)})
	c.tick(0)
	c.pump(10)
	answers := 0
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindDeltas {
			return true // the live write lost: the sync is what must bring it
		}
		if from == "n0" && m.Kind == wire.KindSyncReply && len(m.Deltas) > 0 {
			answers++
			return answers == 1 // the first answer lost
		}
		return false
	}
	c.write(0, "team://a", "r1", "f", "v")
	if err := c.nodes[0].eng.RequestSync("n1", "team://a"); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	if answers != 1 {
		t.Fatalf("set-up: %d answers of n0 sent; want its first, lost", answers)
	}
	// Well within n0's AckTimeout (10 s), whose fallback would repair it.
	for range 5 {
		c.tick(time.Second)
		c.pump(10)
	}
	if !c.converged("team://a") {
		t.Fatalf("after 5 s, n1 still lacks n0's write (n0's answers sent: %d; want the lost one asked for again)", answers)
	}
}
