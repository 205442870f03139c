package cluster_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/cluster/realnet"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// The cluster tests over the real network, QUIC and memberlist gossip on
// loopback: the same tests as over the in-memory network (cluster_test.go),
// here because realnet imports node/cluster.

// realNetwork is a cluster.Network of QUIC and gossip with a new cluster
// key; each node joins the one started before it.
func realNetwork(t testing.TB) cluster.Network {
	key := make([]byte, 32)
	rand.Read(key)
	return func(_ int, id acl.Identity, cfg *cluster.Config, started []*cluster.Cluster) {
		var join []string
		if len(started) > 0 {
			join = []string{started[len(started)-1].GossipAddr()}
		}
		cfg.StartTransport = realnet.Transport("", id, cfg.Logger)
		cfg.StartMembership = realnet.Membership(realnet.Gossip{Join: join, ClusterKey: key,
			ProbeInterval: 100 * time.Millisecond, PushPullInterval: 500 * time.Millisecond}, cfg.Logger)
	}
}

func TestTeamMemoryReplicates(t *testing.T) { cluster.RunTeamMemoryReplicates(t, realNetwork(t)) }
func TestPartitionHealConverges(t *testing.T) {
	cluster.RunPartitionHealConverges(t, realNetwork(t))
}
func TestGrantedTeamReplicatesOnlyToMembers(t *testing.T) {
	cluster.RunGrantedTeamReplicatesOnlyToMembers(t, realNetwork(t))
}
func TestHandoverMovesAnAgent(t *testing.T) { cluster.RunHandoverMovesAnAgent(t, realNetwork(t)) }
func TestTreesCarrySaves(t *testing.T)      { cluster.RunTreesCarrySaves(t, realNetwork(t)) }

// BenchmarkPropagation times a save on one node until the memory is
// durable and searchable on a live peer, over real QUIC on loopback.
// go test -run='^$' -bench=Propagation -benchtime=500x ./node/cluster/
func BenchmarkPropagation(b *testing.B) {
	arrived := arrivals{ids: make(chan string, 1024)}
	nodes := startBenchNodes(b, func(i int) []memory.Feature {
		if i == 1 {
			return []memory.Feature{arrived}
		}
		return nil
	})
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(nodes[0].cl.Members()) < 2 || len(nodes[1].cl.Members()) < 2 {
		if time.Now().After(deadline) {
			b.Fatal("no membership")
		}
		<-tick.C
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := nodes[0].svc.Save(ctx, nodes[0].me, memory.SaveRequest{Namespace: "team://bench", Content: fmt.Sprintf("propagation probe %d with some ordinary words in it", i)})
		if err != nil {
			b.Fatal(err)
		}
		for id := range arrived.ids {
			if id == r.ID {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// arrivals is a memory feature that reports the ids of the records each
// change indexed on the node it is attached to: on the receiving node of
// the benchmark, only peers' deltas change anything.
type arrivals struct{ ids chan string }

func (a arrivals) Attach(c *memory.Core) { c.Register(a) }

func (a arrivals) Changed(changes []store.Change) {
	for _, ch := range changes {
		select {
		case a.ids <- ch.ID:
		default:
		}
	}
}

type benchNode struct {
	svc *memory.Service
	cl  *cluster.Cluster
	me  memory.Caller
}

func startBenchNodes(b *testing.B, features func(i int) []memory.Feature) []*benchNode {
	b.Helper()
	net := realNetwork(b)
	var nodes []*benchNode
	var started []*cluster.Cluster
	for i := range 2 {
		id, err := acl.GenerateIdentity(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		agent := namespace.MustParse(fmt.Sprintf("agent://b%d", i))
		kv, err := badgerkv.Open(b.TempDir(), badgerkv.Options{})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := memory.Open(memory.Config{KV: kv, Agent: agent, Replica: id.ReplicaID(), Authorizer: cluster.SharedOK{}, Identity: id,
			Features: features(i)})
		if err != nil {
			b.Fatal(err)
		}
		cfg := cluster.Config{Service: svc, Identity: id, Tick: 50 * time.Millisecond}
		net(i, id, &cfg, started)
		cl, err := cluster.Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		started = append(started, cl)
		nodes = append(nodes, &benchNode{svc: svc, cl: cl, me: memory.Caller{Principal: agent}})
		b.Cleanup(func() { cl.Close(); svc.Close() })
	}
	return nodes
}
