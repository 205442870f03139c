package replica

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/sync/wire"
)

// fewReaders lets only the peers in readers read team://t; every peer
// reads the rest.
type fewReaders struct {
	openPolicy
	readers map[PeerID]bool
}

func (p fewReaders) PeerMayRead(peer Peer, ns string) bool {
	return ns != "team://t" || p.readers[peer.ID]
}

// Every anti-entropy round asks a reader of each namespace held, however
// few of the node's peers read it. Before, a round picked one random peer
// for all namespaces: a namespace one of six peers reads went unsynced
// five rounds in six (the simulator's seed 1291 waited 82 s).
func TestAntiEntropyAsksAReaderOfEachNamespace(t *testing.T) {
	pol := fewReaders{readers: map[PeerID]bool{"n0": true, "n1": true}}
	c := newCluster(t, 7, Config{AntiEntropyInterval: time.Second}, pol, 3)
	c.write(0, "team://t", "m1", "title", "team")
	c.write(0, "project://p", "m2", "title", "project")
	c.tick(time.Millisecond)
	c.pump(20)
	asked := map[PeerID]int{} // n0's anti-entropy requests of team://t, by peer
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if from == "n0" && m.Kind == wire.KindSyncRequest {
			for _, nc := range m.Contexts {
				if nc.Namespace == "team://t" {
					asked[to]++
				}
			}
		}
		return false
	}
	const rounds = 12
	for range rounds {
		c.tick(time.Second)
		c.pump(20)
	}
	if asked["n1"] < rounds || len(asked) != 1 {
		t.Fatalf("in %d anti-entropy rounds n0 asked its peers for team://t %v times, want n1 (its only reader) every round", rounds, asked)
	}
}
