package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
)

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

func startBenchNodes(b *testing.B, features func(i int) []memory.Feature) []*testNode {
	b.Helper()
	key := make([]byte, 32)
	var nodes []*testNode
	var join []string
	for i := range 2 {
		id, err := acl.GenerateIdentity(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		agent := fmt.Sprintf("agent://b%d", i)
		svc, err := memory.Open(memory.Config{Dir: b.TempDir(), Agent: mustAgent(agent), Replica: id.ReplicaID(), Authorizer: sharedOK{}, Identity: id,
			Features: features(i)})
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{Service: svc, Identity: id, ClusterKey: key, Join: join, Tick: 50 * time.Millisecond,
			GossipProbeInterval: 100 * time.Millisecond, GossipPushPull: 500 * time.Millisecond}
		cl, err := Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		join = []string{cl.GossipAddr()}
		nodes = append(nodes, &testNode{svc: svc, cl: cl, me: memory.Caller{Principal: mustAgent(agent)}})
		b.Cleanup(func() { cl.Close(); svc.Close() })
	}
	return nodes
}
