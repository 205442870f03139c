package replica

import (
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
	c := newCluster(t, 3, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 11)
	n2 := c.byID("n2")
	cc := testConfig(Config{AntiEntropyInterval: time.Hour}, n2.id, 2)
	n2.eng = New(cc, n2.st, blindWhileEmpty{n2.st})
	n2.eng.SetPeers([]Peer{testPeer("n0", 0), testPeer("n1", 1), testPeer("n2", 2)})
	n2.eng.Tick(c.now)
	n2.eng.Ready()
	ihave := func() *wire.Message {
		return &wire.Message{Kind: wire.KindTree, Overlay: "team://a", Tree: &wire.Tree{Kind: uint8(epidemic.KindIHave),
			IHave: []wire.Announcement{{ID: make([]byte, wire.TreeIDSize), Round: 1}}}}
	}
	asked := func() map[PeerID]bool {
		n2.eng.Tick(c.now)
		out := map[PeerID]bool{}
		for _, env := range n2.eng.Ready().Messages {
			if env.Msg.Kind != wire.KindSyncRequest {
				continue
			}
			for _, nc := range env.Msg.Contexts {
				if nc.Namespace == "team://a" {
					out[env.To] = true
				}
			}
		}
		return out
	}
	if err := n2.eng.Step("n0", ihave()); err != nil {
		t.Fatal(err)
	}
	if got := asked(); !got["n0"] {
		t.Fatalf("sync requests of team://a after refusing n0's tree message: %v; want one to n0", got)
	}
	if err := n2.eng.Step("n1", ihave()); err != nil {
		t.Fatal(err)
	}
	if got := asked(); len(got) != 0 {
		t.Fatalf("sync requests of team://a while n0's is owed: %v; want none (one peer at a time)", got)
	}
}
