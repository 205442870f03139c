package cluster

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
)

// sharedOK lets every agent read and write team and project namespaces and
// keeps agent namespaces to their owner: enough policy to test transport.
type sharedOK struct{}

func (sharedOK) check(p, ns namespace.Address) error {
	if ns.Kind != namespace.KindAgent {
		return nil
	}
	if o, _ := ns.Owner(); o == p {
		return nil
	}
	return fmt.Errorf("%w: %s on %s", acl.ErrDenied, p, ns)
}
func (s sharedOK) CheckRead(p, ns namespace.Address) error  { return s.check(p, ns) }
func (s sharedOK) CheckWrite(p, ns namespace.Address) error { return s.check(p, ns) }

type testNode struct {
	svc *memory.Service
	cl  *Cluster
	me  memory.Caller
}

// network gives node i of a test cluster its transport and membership
// (Config.StartTransport and StartMembership); started are the clusters
// started before it, which a gossip membership joins. The in-memory one
// is memNet.network; the real one is in realnet_test.go.
type network func(i int, id acl.Identity, cfg *Config, started []*Cluster)

func startNodes(t *testing.T, n int, auth memory.Authorizer, net network) []*testNode {
	t.Helper()
	return startNodesWith(t, n, auth, net, nil)
}

// startNodesWith starts n nodes on net, tweak adjusting each config after
// net has set its transport and membership.
func startNodesWith(t *testing.T, n int, auth memory.Authorizer, net network, tweak func(i int, id acl.Identity, cfg *Config)) []*testNode {
	t.Helper()
	var nodes []*testNode
	var started []*Cluster
	for i := range n {
		id, err := acl.GenerateIdentity(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		agent := namespace.MustParse(fmt.Sprintf("agent://n%d", i))
		svc, err := memory.Open(memory.Config{Agent: agent, Replica: id.ReplicaID(), Authorizer: auth, Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Service: svc, Identity: id, Tick: 50 * time.Millisecond, Logger: testLogger(t, i)}
		net(i, id, &cfg, started)
		if tweak != nil {
			tweak(i, id, &cfg)
		}
		cl, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, cl)
		nd := &testNode{svc: svc, cl: cl, me: memory.Caller{Principal: agent}}
		nodes = append(nodes, nd)
		t.Cleanup(func() { cl.Close(); svc.Close() })
	}
	return nodes
}

// convergeWithin is how long a test waits for replication to happen. It
// is a liveness bound, not a speed figure: a repair left to anti-entropy
// (a random peer every 10 s by default) must still pass on a loaded CI
// machine, so it is several intervals, not one (a run at 10 s timed out
// once in CI while the machine ran two CI runs at once).
const convergeWithin = 60 * time.Second

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// The tests below take the network they run on: over the in-memory one
// here, over QUIC and gossip in realnet_test.go.

func TestTeamMemoryReplicates(t *testing.T) { testTeamMemoryReplicates(t, newMemNet().network) }
func TestPartitionHealConverges(t *testing.T) {
	testPartitionHealConverges(t, newMemNet().network)
}
func TestGrantedTeamReplicatesOnlyToMembers(t *testing.T) {
	testGrantedTeamReplicatesOnlyToMembers(t, newMemNet().network)
}
func TestHandoverMovesAnAgent(t *testing.T) { testHandoverMovesAnAgent(t, newMemNet().network) }

func testTeamMemoryReplicates(t *testing.T, net network) {
	nodes := startNodes(t, 3, sharedOK{}, net)
	ctx := context.Background()
	eventually(t, convergeWithin, "membership", func() bool {
		return len(nodes[0].cl.Members()) == 3 && len(nodes[2].cl.Members()) == 3
	})
	r, err := nodes[0].svc.Save(ctx, nodes[0].me, memory.SaveRequest{Namespace: "team://core", Content: "replicated badger tuning note"})
	if err != nil {
		t.Fatal(err)
	}
	private, err := nodes[0].svc.Save(ctx, nodes[0].me, memory.SaveRequest{Content: "private badger note"})
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes[1:] {
		eventually(t, convergeWithin, "team memory on a peer", func() bool {
			res, err := nd.svc.Search(ctx, nd.me, memory.SearchQuery{Query: "badger", Filter: memory.Filter{Namespace: "team://core"}})
			return err == nil && res.Total == 1 && res.Results[0].Memory.ID == r.ID
		})
	}
	// concurrent edits on two nodes merge
	title1, title2 := "title from n1", "content edit"
	if _, err := nodes[1].svc.Update(ctx, nodes[1].me, r.ID, memory.UpdateRequest{Title: &title1}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[2].svc.Update(ctx, nodes[2].me, r.ID, memory.UpdateRequest{Content: &title2}); err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		eventually(t, convergeWithin, "merged edits", func() bool {
			m, err := nd.svc.Get(ctx, nd.me, r.ID, false)
			return err == nil && m.Title == title1 && m.Content == title2
		})
	}
	// the private memory never left its node
	for _, nd := range nodes[1:] {
		if _, err := nd.svc.Store().Record("agent://n0", private.ID); err != nil {
			t.Fatal(err)
		}
		if rec, _ := nd.svc.Store().Record("agent://n0", private.ID); rec != nil {
			t.Fatal("a private memory was replicated")
		}
	}
}

// partition cuts the frames between two groups of nodes at their
// transports; membership still sees everyone, as when only the frame port
// is firewalled.
type partition struct {
	mu    sync.Mutex
	group map[string]int // node id → side
	on    bool
}

func (p *partition) cut(a, b string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.on && p.group[a] != p.group[b]
}

func (p *partition) set(on bool) {
	p.mu.Lock()
	p.on = on
	p.mu.Unlock()
}

// errCut is what a Send across the partition returns.
var errCut = errors.New("partitioned")

// transport wraps start so that, while the partition is on, sends across
// it fail and frames arriving across it are dropped.
func (p *partition) transport(self string, start func(Inbound) (Transport, error)) func(Inbound) (Transport, error) {
	return func(in Inbound) (Transport, error) {
		deliver := in.Deliver
		in.Deliver = func(from ed25519.PublicKey, frame []byte) {
			if !p.cut(self, string(acl.NodeIDOf(from))) {
				deliver(from, frame)
			}
		}
		tr, err := start(in)
		if err != nil {
			return nil, err
		}
		return cutTransport{Transport: tr, p: p, self: self}, nil
	}
}

type cutTransport struct {
	Transport
	p    *partition
	self string
}

func (t cutTransport) Send(ctx context.Context, addr string, key ed25519.PublicKey, frame []byte) error {
	if t.p.cut(t.self, string(acl.NodeIDOf(key))) {
		return errCut
	}
	return t.Transport.Send(ctx, addr, key, frame)
}

func testPartitionHealConverges(t *testing.T, net network) {
	part := &partition{group: map[string]int{}}
	nodes := startNodesWith(t, 4, sharedOK{}, net, func(i int, id acl.Identity, cfg *Config) {
		part.group[string(id.NodeID())] = i / 2
		// the membership sees everyone; the frames are cut
		cfg.StartTransport = part.transport(string(id.NodeID()), cfg.StartTransport)
		cfg.Engine.AntiEntropyInterval = 300 * time.Millisecond
		cfg.Engine.AckTimeout = time.Second
	})
	ctx := context.Background()
	eventually(t, convergeWithin, "membership", func() bool {
		for _, nd := range nodes {
			if len(nd.cl.Members()) != 4 {
				return false
			}
		}
		return true
	})
	part.set(true)
	var ids []string
	for i, nd := range nodes {
		for j := range 5 {
			r, err := nd.svc.Save(ctx, nd.me, memory.SaveRequest{Namespace: "team://core", Content: fmt.Sprintf("side %d note %d %d", i/2, i, j)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
	}
	// while partitioned, a side sees only its own writes
	res, _ := nodes[0].svc.Search(ctx, nodes[0].me, memory.SearchQuery{Query: "note", Limit: 100, Filter: memory.Filter{Namespace: "team://core"}})
	if res.Total >= 20 {
		t.Fatalf("the partition leaked: node 0 sees %d", res.Total)
	}
	part.set(false)
	for _, nd := range nodes {
		eventually(t, convergeWithin, "convergence after heal", func() bool {
			res, err := nd.svc.Search(ctx, nd.me, memory.SearchQuery{Query: "note", Limit: 100, Filter: memory.Filter{Namespace: "team://core"}})
			return err == nil && res.Total == len(ids)
		})
	}
	want, _ := nodes[0].svc.Store().State("team://core")
	for _, nd := range nodes[1:] {
		eventually(t, convergeWithin, "equal digests", func() bool {
			got, _ := nd.svc.Store().State("team://core")
			return got.Digest() == want.Digest()
		})
	}
}

// With the real acl policy: a team created on one node and granted to a
// second replicates to it (the grant travels inside the namespace), the
// grantee's writes come back, and a node without a grant receives nothing.
func testGrantedTeamReplicatesOnlyToMembers(t *testing.T, net network) {
	nodes := startNodes(t, 3, nil, net)
	ctx := context.Background()
	eventually(t, convergeWithin, "membership", func() bool {
		for _, nd := range nodes {
			if len(nd.cl.Members()) != 3 {
				return false
			}
		}
		return true
	})
	n0, n1, n2 := nodes[0], nodes[1], nodes[2]
	if _, err := n0.svc.CreateNamespace(ctx, n0.me, "team://core"); err != nil {
		t.Fatal(err)
	}
	if _, err := n0.svc.Grant(ctx, n0.me, memory.GrantRequest{Namespace: "team://core", Principal: "agent://n1", Permissions: []string{"read", "write"}}); err != nil {
		t.Fatal(err)
	}
	r0, err := n0.svc.Save(ctx, n0.me, memory.SaveRequest{Namespace: "team://core", Content: "team decision from n0"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeWithin, "the team memory on the grantee", func() bool {
		_, err := n1.svc.Get(ctx, n1.me, r0.ID, false)
		return err == nil
	})
	r1, err := n1.svc.Save(ctx, n1.me, memory.SaveRequest{Namespace: "team://core", Content: "team note from n1"})
	if err != nil {
		t.Fatalf("the grantee cannot write the team namespace: %v", err)
	}
	eventually(t, convergeWithin, "the grantee's write back on the creator", func() bool {
		_, err := n0.svc.Get(ctx, n0.me, r1.ID, false)
		return err == nil
	})
	if err := n2.cl.Sync(""); err != nil {
		t.Fatal(err)
	}
	if err := n0.cl.Sync(""); err != nil {
		t.Fatal(err)
	}
	r2, err := n0.svc.Save(ctx, n0.me, memory.SaveRequest{Namespace: "team://core", Content: "a later team note"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeWithin, "the later note on the grantee", func() bool {
		_, err := n1.svc.Get(ctx, n1.me, r2.ID, false)
		return err == nil
	})
	for _, ns := range n2.svc.Store().Namespaces() {
		if ns == "team://core" {
			t.Fatal("a node without a grant received the team namespace")
		}
	}
}

type logWriter struct {
	t    *testing.T
	i    int
	done *atomic.Bool
}

func (w logWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Logf("n%d: %s", w.i, strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func testLogger(t *testing.T, i int) *slog.Logger {
	if os.Getenv("MNEMO_TEST_LOG") == "" {
		return nil
	}
	w := logWriter{t: t, i: i, done: new(atomic.Bool)}
	t.Cleanup(func() { w.done.Store(true) }) // memberlist may log after Close returns
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A hand-over signed by the host moves an agent on every node; a node
// cannot hand over an agent it does not host.
func testHandoverMovesAnAgent(t *testing.T, net network) {
	nodes := startNodes(t, 2, sharedOK{}, net)
	eventually(t, convergeWithin, "membership and bindings", func() bool {
		return agentsOn(nodes[0].cl, nodes[1].cl.cfg.Identity.NodeID()) == "agent://n1" &&
			agentsOn(nodes[1].cl, nodes[0].cl.cfg.Identity.NodeID()) == "agent://n0"
	})
	n0 := namespace.MustParse("agent://n0")
	if _, err := nodes[1].cl.Handover(n0, nodes[1].cl.cfg.Identity.Public); !errors.Is(err, ErrNotHosted) {
		t.Fatalf("a node handed over an agent it does not host: %v", err)
	}
	if _, err := nodes[0].cl.Handover(n0, nodes[1].cl.cfg.Identity.Public); err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		eventually(t, convergeWithin, "the hand-over on every node", func() bool {
			return agentsOn(nd.cl, nodes[1].cl.cfg.Identity.NodeID()) == "agent://n0,agent://n1" &&
				agentsOn(nd.cl, nodes[0].cl.cfg.Identity.NodeID()) == ""
		})
	}
}

// agentsOn is what c (a Cluster or a Stepped) says node id hosts,
// comma-separated.
func agentsOn(c interface{ Members() []Member }, id acl.NodeID) string {
	for _, m := range c.Members() {
		if m.NodeID == string(id) {
			return strings.Join(m.Agents, ",")
		}
	}
	return "(not a member)"
}

// Start has no default network: the real one is node/cluster/realnet's.
func TestStartNeedsTransportAndMembership(t *testing.T) {
	id, err := acl.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://n0"), Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	net := newMemNet()
	for _, cfg := range []Config{
		{Service: svc, Identity: id, StartMembership: net.membership},
		{Service: svc, Identity: id, StartTransport: net.transport(id.Public)},
	} {
		if cl, err := Start(cfg); err == nil {
			cl.Close()
			t.Fatal("Start ran without a transport or a membership")
		}
	}
}
