package replica

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/wire"
)

// openPolicy lets every replica hold and write every namespace, except the
// replicas listed in readOnly (they may read but not write).
type openPolicy struct{ readOnly map[crdt.ReplicaID]bool }

func (openPolicy) ShouldHold(string) bool                            { return true }
func (openPolicy) PeerMayRead(Peer, string) bool                     { return true }
func (p openPolicy) ReplicaMayWrite(r crdt.ReplicaID, _ string) bool { return !p.readOnly[r] }

// cluster is a tiny in-process harness: engines over MemStates and a
// message pump with optional loss.
type cluster struct {
	t     *testing.T
	codec *wire.Codec
	nodes []*node
	now   time.Time
	rng   *rand.Rand
	loss  float64
	bytes int
	msgs  int
	// drop, when set, loses the messages it picks.
	drop func(from, to PeerID, m *wire.Message) bool
	// alter, when set, may replace a message on its way (a malicious
	// sender); it sees every message before drop does.
	alter func(from, to PeerID, m *wire.Message) *wire.Message
}

type node struct {
	signer crdt.Signer
	id     PeerID
	rep    crdt.ReplicaID
	st     *MemState
	eng    *Engine
	clock  *crdt.Clock
	inbox  []envelopeFrom
	stall  bool
	// refuse, when set, is the driver refusing the deltas it picks, with
	// refuseErr if set.
	refuse    func(a Apply) bool
	refuseErr error
}

type envelopeFrom struct {
	from  PeerID
	frame []byte
}

func newCluster(t *testing.T, n int, cfg Config, pol Policy, seed uint64) *cluster {
	c := &cluster{t: t, codec: wire.NewCodec(0), now: time.Unix(1_800_000_000, 0), rng: rand.New(rand.NewPCG(seed, 1))}
	var peers []Peer
	for i := range n {
		nd := &node{id: PeerID(fmt.Sprintf("n%d", i)), st: NewMemState(), clock: crdt.NewClock(0)}
		nd.signer, nd.rep = testSigner(i)
		cc := testConfig(cfg, nd.id, i)
		cc.Seed = seed
		nd.eng = New(cc, nd.st, pol)
		c.nodes = append(c.nodes, nd)
		peers = append(peers, testPeer(nd.id, i))
	}
	for _, nd := range c.nodes {
		nd.eng.SetPeers(peers)
	}
	return c
}

func (c *cluster) byID(id PeerID) *node {
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	c.t.Fatalf("no node %s", id)
	return nil
}

// write makes a local edit on node i and hands its delta to the engine.
func (c *cluster) write(i int, ns, id, field, value string) {
	nd := c.nodes[i]
	m := nd.st.Map(ns)
	nd.clock.Observe(m.MaxTimestamp(), c.now)
	d, err := m.Set(nd.rep, nd.clock.Now(c.now), id, field, []byte(value))
	if err != nil {
		c.t.Fatal(err)
	}
	// every edit also touches updated_at, as the node does
	d2, err := m.Set(nd.rep, nd.clock.Now(c.now), id, "ua", []byte(value))
	if err != nil {
		c.t.Fatal(err)
	}
	d.Join(d2)
	nd.eng.LocalDelta(ns, sealInto(m, ns, d, nd.signer))
}

// pump moves messages until the network is quiet (or rounds run out).
func (c *cluster) pump(rounds int) {
	for r := 0; r < rounds; r++ {
		moved := false
		for _, nd := range c.nodes {
			for nd.eng.HasReady() {
				moved = c.drain(nd) || moved
			}
		}
		for _, nd := range c.nodes {
			if nd.stall {
				continue
			}
			in := nd.inbox
			nd.inbox = nil
			for _, m := range in {
				msg, err := c.codec.Decode(m.frame)
				if err != nil {
					c.t.Fatal(err)
				}
				if err := nd.eng.Step(m.from, msg); err != nil {
					c.t.Fatal(err)
				}
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// drain takes one Ready of nd as the node does (doc.go, "The loop"): apply,
// Advance, send. It reports whether a message went out.
func (c *cluster) drain(nd *node) (moved bool) {
	rd := nd.eng.Ready()
	var refused []Refusal
	for i, a := range rd.Apply {
		if nd.refuse != nil && nd.refuse(a) {
			err := errors.New("test: refused by the driver")
			if nd.refuseErr != nil {
				err = nd.refuseErr
			}
			refused = append(refused, Refusal{Index: i, Err: err})
			continue
		}
		nd.clock.Observe(a.Delta.MaxTimestamp(), c.now)
		nd.st.Apply(a)
	}
	nd.eng.Advance(refused)
	for _, rj := range rd.Rejected {
		c.t.Logf("%s rejected from %s: %v", nd.id, rj.From, rj.Err)
	}
	for _, env := range rd.Messages {
		if c.alter != nil {
			env.Msg = c.alter(nd.id, env.To, env.Msg)
		}
		f, err := c.codec.Encode(env.Msg)
		if err != nil {
			c.t.Fatal(err)
		}
		c.msgs++
		c.bytes += len(f)
		if c.loss > 0 && c.rng.Float64() < c.loss {
			continue
		}
		if c.drop != nil && c.drop(nd.id, env.To, env.Msg) {
			continue
		}
		to := c.byID(env.To)
		to.inbox = append(to.inbox, envelopeFrom{nd.id, f})
		moved = true
	}
	return moved
}

func (c *cluster) tick(d time.Duration) {
	c.now = c.now.Add(d)
	for _, nd := range c.nodes {
		nd.eng.Tick(c.now)
	}
}

func (c *cluster) converged(ns string) bool {
	want := c.nodes[0].st.Map(ns).Digest()
	for _, nd := range c.nodes[1:] {
		if nd.st.Map(ns).Digest() != want {
			return false
		}
	}
	return true
}

func TestLiveDeltasConverge(t *testing.T) {
	c := newCluster(t, 3, Config{}, openPolicy{}, 1)
	c.pump(10)
	for i := range 30 {
		c.write(i%3, "team://a", fmt.Sprintf("m%d", i%7), "title", fmt.Sprintf("v%d", i))
	}
	c.pump(20)
	if !c.converged("team://a") {
		t.Fatal("not converged after lossless delivery")
	}
	if n := c.nodes[0].st.Map("team://a").Len(); n != 7 {
		t.Fatalf("want 7 memories, got %d", n)
	}
}

func TestLossRepairedByAntiEntropy(t *testing.T) {
	c := newCluster(t, 4, Config{AntiEntropyInterval: time.Second}, openPolicy{}, 2)
	c.loss = 0.3
	for i := range 60 {
		c.write(i%4, "team://a", fmt.Sprintf("m%d", i%11), "title", fmt.Sprintf("v%d", i))
		c.pump(3)
	}
	c.loss = 0
	for round := 0; round < 40 && !c.converged("team://a"); round++ {
		c.tick(time.Second)
		c.pump(20)
	}
	if !c.converged("team://a") {
		t.Fatal("anti-entropy did not repair losses")
	}
}

func TestStalledPeerFallsBackToSync(t *testing.T) {
	c := newCluster(t, 2, Config{QueueMaxDeltas: 5, Window: 1}, openPolicy{}, 3)
	c.pump(10)
	c.nodes[1].stall = true
	for i := range 50 {
		c.write(0, "team://a", fmt.Sprintf("m%d", i), "title", "x")
		c.pump(2)
	}
	st := c.nodes[0].eng.Stats()[0]
	if st.Fallbacks == 0 {
		t.Fatalf("no fallback recorded: %+v", st)
	}
	if st.MaxQueueDepth > 5 {
		t.Fatalf("queue exceeded its bound: %d", st.MaxQueueDepth)
	}
	c.nodes[1].stall = false
	for round := 0; round < 10 && !c.converged("team://a"); round++ {
		c.tick(11 * time.Second) // ack timeout → digest sync
		c.pump(20)
	}
	if !c.converged("team://a") {
		t.Fatal("stalled peer did not catch up by state sync")
	}
}

func TestReadOnlyAuthorRejected(t *testing.T) {
	readOnly := map[crdt.ReplicaID]bool{}
	c := newCluster(t, 2, Config{}, openPolicy{readOnly: readOnly}, 4)
	readOnly[c.nodes[1].rep] = true
	c.pump(10)
	c.write(1, "team://a", "m1", "title", "forged")
	c.pump(10)
	if _, ok := c.nodes[0].st.Map("team://a").Get("m1"); ok {
		t.Fatal("write by a replica without write permission was applied")
	}
	if c.nodes[0].eng.Stats()[0].Rejected == 0 {
		t.Fatal("rejection not counted")
	}
}

func TestRemovedDotsReachRecordsNotResent(t *testing.T) {
	// n1 misses a tag removal made on n0 while n1 is cut off; digest sync must
	// still drop the tag on n1.
	c := newCluster(t, 2, Config{}, openPolicy{}, 5)
	c.pump(10)
	n0 := c.nodes[0]
	m := n0.st.Map("team://a")
	n0.clock.Observe(m.MaxTimestamp(), c.now)
	d1, _ := m.Set(n0.rep, n0.clock.Now(c.now), "m1", "title", []byte("t"))
	d2, _ := m.Add(n0.rep, "m1", "tags", "auth")
	n0.eng.LocalDelta("team://a", sealInto(m, "team://a", d1, n0.signer))
	n0.eng.LocalDelta("team://a", sealInto(m, "team://a", d2, n0.signer))
	c.pump(10)
	c.loss = 1 // cut off
	e, _ := m.Edit(n0.rep, "m1", crdt.DefaultLimits())
	e.Remove("tags", "auth")
	_ = e.Set(n0.clock.Now(c.now), "ua", []byte("x"))
	d3 := e.Delta()
	n0.eng.LocalDelta("team://a", sealInto(m, "team://a", d3, n0.signer))
	c.pump(5)
	c.loss = 0
	if err := c.nodes[1].eng.RequestSync(n0.id, "team://a"); err != nil {
		t.Fatal(err)
	}
	c.pump(20)
	r, _ := c.nodes[1].st.Map("team://a").Get("m1")
	if r.HasElement("tags", "auth") {
		t.Fatal("removed tag survived digest sync")
	}
	if !c.converged("team://a") {
		t.Fatal("not converged")
	}
}

// togglePolicy lets a set of peers read; others may not.
type togglePolicy struct{ readers map[PeerID]bool }

func (togglePolicy) ShouldHold(string) bool                      { return true }
func (p togglePolicy) PeerMayRead(peer Peer, _ string) bool      { return p.readers[peer.ID] }
func (togglePolicy) ReplicaMayWrite(crdt.ReplicaID, string) bool { return true }

// A peer granted read on a namespace with history gets that history by sync
// before any live delta, so nothing it receives depends on records (such as
// the grant itself) it has not seen yet.
func TestNewReaderSyncsBeforeLiveDeltas(t *testing.T) {
	pol := togglePolicy{readers: map[PeerID]bool{}}
	c := newCluster(t, 2, Config{}, pol, 9)
	c.pump(10)
	for i := range 3 {
		c.write(0, "team://a", fmt.Sprintf("m%d", i), "title", "before the grant")
	}
	c.pump(10)
	pol.readers["n1"] = true
	n0 := c.nodes[0]
	m := n0.st.Map("team://a")
	n0.clock.Observe(m.MaxTimestamp(), c.now)
	d, err := m.Set(n0.rep, n0.clock.Now(c.now), "m9", "title", []byte("after the grant"))
	if err != nil {
		t.Fatal(err)
	}
	n0.eng.LocalDelta("team://a", sealInto(m, "team://a", d, n0.signer))
	d2, _ := m.Set(n0.rep, n0.clock.Now(c.now), "m10", "title", []byte("and another"))
	n0.eng.LocalDelta("team://a", sealInto(m, "team://a", d2, n0.signer))
	var kinds []wire.Kind
	for _, env := range n0.eng.Ready().Messages {
		kinds = append(kinds, env.Msg.Kind)
		if env.Msg.Kind == wire.KindDeltas {
			t.Fatalf("a live delta went to the new reader before its sync: %v", kinds)
		}
		f, err := c.codec.Encode(env.Msg)
		if err != nil {
			t.Fatal(err)
		}
		c.byID(env.To).inbox = append(c.byID(env.To).inbox, envelopeFrom{n0.id, f})
	}
	if len(kinds) == 0 || kinds[0] != wire.KindSyncRequest {
		t.Fatalf("no sync with the new reader: %v", kinds)
	}
	c.pump(20)
	if !c.converged("team://a") {
		t.Fatal("the new reader did not converge")
	}
}

// A local delta queued for every peer goes out as the same bytes to each:
// flushAll signs it once, and every copy carries a signature that
// verifies; the cluster converges.
func TestLocalDeltaSignedOncePerFlush(t *testing.T) {
	c := newCluster(t, 4, Config{}, openPolicy{}, 1)
	c.pump(20)
	n0 := c.nodes[0]
	cc := testConfig(Config{Seed: 1}, n0.id, 0)
	sign, signs := cc.Signer.Sign, 0
	cc.Signer.Sign = func(m []byte) []byte { signs++; return sign(m) }
	n0.eng = New(cc, n0.st, openPolicy{})
	var peers []Peer
	for i, nd := range c.nodes {
		peers = append(peers, testPeer(nd.id, i))
	}
	n0.eng.SetPeers(peers)
	for n0.eng.HasReady() {
		n0.eng.Ready()
		n0.eng.Advance(nil)
	}
	signs = 0
	c.write(0, "team://a", "m1", "ti", "hello")
	rd := n0.eng.Ready()
	sent := 0
	for _, env := range rd.Messages {
		for _, nd := range env.Msg.Deltas {
			sent++
			if env.Msg.Kind != wire.KindDeltas || !nd.Verify(wire.KindDeltas, cc.Signer.Key) {
				t.Fatalf("the delta to %s does not verify", env.To)
			}
		}
	}
	if sent != 3 || signs != 1 {
		t.Fatalf("%d copies of the delta sent with %d signatures, want 3 with 1", sent, signs)
	}
	n0.eng.Advance(nil)
	for _, env := range rd.Messages {
		f, err := c.codec.Encode(env.Msg)
		if err != nil {
			t.Fatal(err)
		}
		c.byID(env.To).inbox = append(c.byID(env.To).inbox, envelopeFrom{from: n0.id, frame: f})
	}
	c.pump(50)
	want := n0.st.Map("team://a").Digest()
	for _, nd := range c.nodes[1:] {
		if nd.st.Map("team://a").Digest() != want {
			t.Fatalf("%s did not converge", nd.id)
		}
	}
}

// A peer that joins after the engine has sent anything is sent to like
// the others: the engine keeps its peers in order between changes
// (sortedPeers), and a join must change that order too.
func TestPeerJoiningLaterGetsLiveDeltas(t *testing.T) {
	c := newCluster(t, 3, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 1)
	all := make([]Peer, 0, len(c.nodes))
	for i, nd := range c.nodes {
		all = append(all, testPeer(nd.id, i))
	}
	for _, nd := range c.nodes[:2] {
		nd.eng.SetPeers(all[:2])
	}
	c.nodes[2].eng.SetPeers(nil)
	c.pump(10)
	c.write(0, "team://a", "m0", "title", "before the join")
	c.pump(10)
	for _, nd := range c.nodes {
		nd.eng.SetPeers(all)
	}
	c.pump(10)
	c.write(0, "team://a", "m1", "title", "after the join")
	c.write(1, "team://a", "m2", "title", "after the join")
	c.pump(20)
	if !c.converged("team://a") {
		t.Fatalf("the node that joined holds %d of 3 memories", c.nodes[2].st.Map("team://a").Len())
	}
}

// principalPolicy lets the peers hosting agent://r read.
type principalPolicy struct{}

func (principalPolicy) ShouldHold(string) bool { return true }
func (principalPolicy) PeerMayRead(peer Peer, _ string) bool {
	return slices.Contains(peer.Principals, namespace.MustParse("agent://r"))
}
func (principalPolicy) ReplicaMayWrite(crdt.ReplicaID, string) bool { return true }

// UpdatePeers with the peers that changed does what SetPeers with every
// peer does: the same messages, the same peers after.
func TestUpdatePeersIsSetPeersForTheListed(t *testing.T) {
	var outs, peers []string
	for _, update := range []bool{false, true} {
		c := newCluster(t, 3, Config{}, principalPolicy{}, 7)
		c.pump(10)
		c.write(0, "team://a", "m1", "title", "before n2 hosts a reader")
		c.pump(10)
		n0 := c.nodes[0]
		all := n0.eng.Peers()
		i := slices.IndexFunc(all, func(p Peer) bool { return p.ID == "n2" })
		all[i].Principals = []namespace.Address{namespace.MustParse("agent://r")}
		if update {
			n0.eng.UpdatePeers([]Peer{all[i]})
		} else {
			n0.eng.SetPeers(all)
		}
		var out []string
		asked := false
		for _, env := range n0.eng.Ready().Messages {
			f, err := c.codec.Encode(env.Msg)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %x", env.To, f))
			asked = asked || env.To == "n2" && env.Msg.Kind == wire.KindSyncRequest
		}
		if !asked {
			t.Fatalf("update=%v: the new reader n2 was not asked for a sync: %v", update, out)
		}
		outs = append(outs, strings.Join(out, "\n"))
		peers = append(peers, fmt.Sprint(n0.eng.Peers()))
	}
	if outs[0] != outs[1] || peers[0] != peers[1] {
		t.Fatalf("SetPeers and UpdatePeers differ:\n%s\n%s\n\n%s\n%s", outs[0], outs[1], peers[0], peers[1])
	}
}
