package cluster

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// steppedNet runs Stepped nodes over real memory services (each on a
// store.MemKV) in the test's goroutine. A node's send only queues the
// frame; run delivers the queue in order until it is empty, so no node is
// re-entered and every frame's order follows from the calls. trace hashes
// every frame sent, with its sender and receiver.
type steppedNet struct {
	t     *testing.T
	clock *stepClock
	nodes []*steppedNode
	queue []steppedFrame
	trace hash.Hash
	sent  int
	// cut, when set, drops the frames from one node to another it holds
	// for, as a partition would.
	cut func(from, to int) bool
	// observe, when set, sees every frame delivered.
	observe func(from, to int, frame []byte)
	// lose, when set, drops the frames it picks (after cut, before observe).
	lose func(from, to int, frame []byte) bool
}

type steppedNode struct {
	i   int
	id  acl.Identity
	svc *memory.Service
	st  *Stepped
	me  memory.Caller
}

type steppedFrame struct {
	from  *steppedNode
	addr  string
	key   ed25519.PublicKey
	frame []byte
}

const steppedTick = 100 * time.Millisecond

// newSteppedNet builds n nodes whose identities, ids, clocks and engine
// seeds all derive from seed, so that two nets of one seed are the same.
// Each tune changes node i's Config before its loop is made.
func newSteppedNet(t *testing.T, n int, seed uint64, tune ...func(i int, c *Config)) *steppedNet {
	t.Helper()
	return newSteppedNetKV(t, n, seed, func(int) store.KV { return store.NewMemKV() }, tune...)
}

// newSteppedNetKV is newSteppedNet with node i's store over kvFor(i).
func newSteppedNetKV(t *testing.T, n int, seed uint64, kvFor func(i int) store.KV, tune ...func(i int, c *Config)) *steppedNet {
	t.Helper()
	net := &steppedNet{t: t, clock: newStepClock(), trace: sha256.New()}
	for i := range n {
		var keySeed [32]byte
		binary.LittleEndian.PutUint64(keySeed[:], seed)
		keySeed[8] = byte(i)
		id, err := acl.IdentityFromSeed(keySeed[:])
		if err != nil {
			t.Fatal(err)
		}
		agent := namespace.MustParse(fmt.Sprintf("agent://n%d", i))
		svc, err := memory.Open(memory.Config{Agent: agent, Replica: id.ReplicaID(), Authorizer: sharedOK{}, Identity: id,
			Now: net.clock.Now, Rand: rand.NewChaCha8(keySeed), KV: kvFor(i)})
		if err != nil {
			t.Fatal(err)
		}
		nd := &steppedNode{i: i, id: id, svc: svc, me: memory.Caller{Principal: agent}}
		cfg := Config{Service: svc, Identity: id, Clock: net.clock, Addr: stepAddr(i), Logger: testLogger(t, i),
			Engine: replica.Config{Seed: seed + uint64(i), AckTimeout: time.Second, AntiEntropyInterval: 2 * time.Second}}
		for _, f := range tune {
			f(i, &cfg)
		}
		nd.st, err = NewStepped(cfg,
			func(addr string, key ed25519.PublicKey, frame []byte) {
				net.queue = append(net.queue, steppedFrame{from: nd, addr: addr, key: key, frame: frame})
				fmt.Fprintf(net.trace, "%d>%s %d:", nd.i, addr, len(frame))
				net.trace.Write(frame)
				net.sent++
			})
		if err != nil {
			t.Fatal(err)
		}
		net.nodes = append(net.nodes, nd)
		t.Cleanup(func() { nd.st.Close(); svc.Close() })
	}
	return net
}

func stepAddr(i int) string { return fmt.Sprintf("step:%d", i) }

// members is every node's Advert, alive unless dead says otherwise.
func (net *steppedNet) members(dead ...int) []Sighting {
	var ms []Sighting
	for _, nd := range net.nodes {
		state := StateAlive
		if slices.Contains(dead, nd.i) {
			state = StateDead
		}
		ms = append(ms, Sighting{Advert: nd.st.Advert(), State: state})
	}
	return ms
}

// run delivers the queued frames, and those they cause, until none is left.
func (net *steppedNet) run() {
	net.t.Helper()
	for n := 0; len(net.queue) > 0; n++ {
		if n > 100000 {
			net.t.Fatal("the frames never stop")
		}
		f := net.queue[0]
		net.queue = net.queue[1:]
		var to *steppedNode
		for _, nd := range net.nodes {
			if stepAddr(nd.i) == f.addr {
				to = nd
			}
		}
		if to == nil || !to.id.Public.Equal(f.key) {
			net.t.Fatalf("node %d sent to %s with a key not its own", f.from.i, f.addr)
		}
		if net.cut != nil && net.cut(f.from.i, to.i) {
			continue
		}
		if net.lose != nil && net.lose(f.from.i, to.i, f.frame) {
			continue
		}
		if net.observe != nil {
			net.observe(f.from.i, to.i, f.frame)
		}
		to.st.Deliver(f.from.id.Public, slices.Clone(f.frame))
	}
}

// join gives every node the same membership, everyone alive, and runs.
func (net *steppedNet) join() {
	ms := net.members()
	for _, nd := range net.nodes {
		nd.st.SetMembers(ms)
	}
	net.run()
}

// tick moves the clock one tick, ticks every node and runs.
func (net *steppedNet) tick() {
	net.clock.Step(steppedTick)
	for _, nd := range net.nodes {
		nd.st.Tick()
	}
	net.run()
}

func (net *steppedNet) save(nd *steppedNode, ns, content string) string {
	net.t.Helper()
	r, err := nd.svc.Save(context.Background(), nd.me, memory.SaveRequest{Namespace: ns, Content: content})
	if err != nil {
		net.t.Fatal(err)
	}
	nd.st.Pump()
	net.run()
	return r.ID
}

func (nd *steppedNode) has(id string) bool {
	_, err := nd.svc.Get(context.Background(), nd.me, id, false)
	return err == nil
}

// Stepped nodes replicate over real memory services with no goroutine and
// no wall clock: a save reaches every peer in the calls that follow it, a
// frame from a key outside the membership is refused, and what a cut lost
// comes back through the engine's timers once ticks run on.
func TestSteppedNodesReplicate(t *testing.T) {
	net := newSteppedNet(t, 5, 1)
	n0, stranger := net.nodes[0], net.nodes[4]
	// nodes 0-3 know each other; the stranger knows everyone, nobody it
	for _, nd := range net.nodes[:4] {
		nd.st.SetMembers(net.members()[:4])
	}
	stranger.st.SetMembers(net.members())
	net.run()
	for _, nd := range net.nodes[:4] {
		for _, other := range net.nodes[:4] {
			if nd != other && agentsOn(nd.st, other.id.NodeID()) != fmt.Sprintf("agent://n%d", other.i) {
				t.Fatalf("node %d does not know node %d hosts agent://n%d: %q", nd.i, other.i, other.i, agentsOn(nd.st, other.id.NodeID()))
			}
		}
		if _, ok := nd.st.HostedElsewhere(stranger.me.Principal); ok {
			t.Fatalf("node %d took the bindings of a node outside its membership", nd.i)
		}
	}

	ctx := context.Background()
	id := net.save(n0, "team://core", "replicated badger tuning note")
	private := net.save(n0, "", "private badger note")
	for _, nd := range net.nodes[1:4] {
		res, err := nd.svc.Search(ctx, nd.me, memory.SearchQuery{Query: "badger", Filter: memory.Filter{Namespace: "team://core"}})
		if err != nil || res.Total != 1 || res.Results[0].Memory.ID != id || !nd.has(id) {
			t.Fatalf("node %d: the team memory did not arrive with the calls (%v, %+v)", nd.i, err, res)
		}
		if rec, _ := nd.svc.Store().Record("agent://n0", private); rec != nil {
			t.Fatalf("node %d holds a private memory of node 0", nd.i)
		}
	}
	if stranger.has(id) {
		t.Fatal("a node outside the membership received a memory")
	}

	// Everyone admits the stranger: its bindings count now.
	ms := net.members()
	for _, nd := range net.nodes {
		nd.st.SetMembers(ms)
	}
	net.run()
	if host, ok := n0.st.HostedElsewhere(stranger.me.Principal); !ok || host != stranger.id.NodeID() {
		t.Fatalf("node 0 does not know the new member's agent: %q %v", host, ok)
	}

	// Lost frames: node 1's save reaches nobody, until the ack timeout and
	// the anti-entropy, on ticks of the stepped clock, sync it.
	net.cut = func(from, to int) bool { return from == 1 || to == 1 }
	lost := net.save(net.nodes[1], "team://core", "a note the cut loses")
	for range 3 {
		net.tick()
	}
	for _, nd := range net.nodes {
		if nd.i != 1 && nd.has(lost) {
			t.Fatalf("node %d received a frame across the cut", nd.i)
		}
	}
	net.cut = nil
	all := func() bool {
		for _, nd := range net.nodes {
			if !nd.has(lost) || !nd.has(id) {
				return false
			}
		}
		return true
	}
	for n := 0; !all(); n++ {
		if n == int(30*time.Second/steppedTick) {
			t.Fatal("30s of ticks after the heal, and a node still lacks a memory")
		}
		net.tick()
	}
	want, err := n0.svc.Store().State("team://core")
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range net.nodes[1:] {
		got, err := nd.svc.Store().State("team://core")
		if err != nil || got.Digest() != want.Digest() {
			t.Fatalf("node %d: digest differs after the heal", nd.i)
		}
	}
	if st := n0.st.Status(true); st.Applied == 0 || len(st.Peers) != 4 || st.QUIC != stepAddr(0) {
		t.Fatalf("status: %+v", st)
	}

	// A closed node ignores its service's writes and every call.
	closed := net.nodes[3]
	closed.st.Close()
	before := net.sent
	net.save(closed, "team://core", "saved after close")
	closed.st.Tick()
	if err := closed.st.Sync(""); err != ErrStopped {
		t.Fatalf("Sync after Close: %v", err)
	}
	if net.sent != before {
		t.Fatal("a closed node sent frames")
	}
}

// Bindings settle by digest: once every node holds the same bindings, an
// interval of quiet carries only digests (not N bindings per pair), the
// next one nothing (each node has heard every peer's digest, its own), and
// a hand-over whose frames a cut lost still reaches the node cut off, at
// the next digest that differs.
func TestBindingsSettleByDigest(t *testing.T) {
	net := newSteppedNet(t, 3, 7)
	net.join()
	codec := wire.NewCodec(wire.DefaultMaxFrame)
	summaries, full := 0, 0
	net.observe = func(from, to int, frame []byte) {
		m, err := codec.Decode(frame)
		if err != nil {
			t.Fatalf("frame %d>%d: %v", from, to, err)
		}
		if m.Kind != wire.KindBindings {
			return
		}
		if len(m.BindingsSum) == 0 {
			t.Fatalf("a bindings frame %d>%d without the sender's digest", from, to)
		}
		if len(m.Bindings) == 0 {
			summaries++
		} else {
			full++
		}
	}
	for range int(BindingsInterval/steppedTick) + 1 {
		net.tick()
	}
	if full != 0 || summaries == 0 || summaries > 6 {
		t.Fatalf("a settled interval sent %d frames of bindings and %d digests; want 0 and at most every pair's", full, summaries)
	}
	summaries = 0
	for range int(BindingsInterval/steppedTick) + 1 {
		net.tick()
	}
	if full != 0 || summaries != 0 {
		t.Fatalf("the next interval sent %d frames of bindings and %d digests; want none", full, summaries)
	}

	n0, n1, n2 := net.nodes[0], net.nodes[1], net.nodes[2]
	net.cut = func(from, to int) bool { return from == 0 && to == 2 }
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	net.cut = nil
	if host, _ := n1.st.HostedElsewhere(n0.me.Principal); host != "" {
		t.Fatalf("node 1 does not know it hosts agent://n0 now (host %q)", host)
	}
	if host, _ := n2.st.HostedElsewhere(n0.me.Principal); host != n0.id.NodeID() {
		t.Fatalf("node 2 learnt the hand-over across the cut: host %q", host)
	}
	for n := 0; ; n++ {
		if host, _ := n2.st.HostedElsewhere(n0.me.Principal); host == n1.id.NodeID() {
			break
		}
		if n > int(BindingsInterval/steppedTick)+1 {
			t.Fatal("a BindingsInterval after the cut, node 2 still has the old host of agent://n0")
		}
		net.tick()
	}
}

// A node that lacks bindings is sent just those, found by index: the
// frames that repair a hand-over node 2 missed carry that one binding, not
// the set, and the index carries short ids; and when the answer to its
// index is lost, node 2 asks again within a few ticks, not a
// BindingsInterval later.
func TestBindingsTravelByIndex(t *testing.T) {
	net := newSteppedNet(t, 4, 11)
	net.join()
	for range int(BindingsInterval/steppedTick) + 1 {
		net.tick() // settled
	}
	n0, n1, n2 := net.nodes[0], net.nodes[1], net.nodes[2]
	net.cut = func(from, to int) bool { return to == 2 }
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	net.cut = nil
	codec := wire.NewCodec(wire.DefaultMaxFrame)
	decode := func(frame []byte) *wire.Message {
		m, err := codec.Decode(frame)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	lost, indexes := 0, 0
	net.lose = func(from, to int, frame []byte) bool {
		m := decode(frame)
		if m.Kind == wire.KindBindings && to == 2 && len(m.Bindings) > 0 && lost == 0 {
			lost++ // the first answer bringing node 2 what it lacks
			return true
		}
		return false
	}
	net.observe = func(from, to int, frame []byte) {
		m := decode(frame)
		if m.Kind != wire.KindBindings {
			return
		}
		if len(m.Bindings) > 1 {
			t.Fatalf("a frame %d>%d carried %d bindings; node 2 lacked one", from, to, len(m.Bindings))
		}
		if len(m.BindingIDs) > 0 {
			indexes++
		}
	}
	// Wait for the next summary, then a few ticks.
	ticks := 0
	for ; ; ticks++ {
		if host, _ := n2.st.HostedElsewhere(n0.me.Principal); host == n1.id.NodeID() {
			break
		}
		if ticks > int(BindingsInterval/steppedTick)+int(3*bindingsAskGap/steppedTick)+2 {
			t.Fatalf("node 2 never learnt the hand-over (lost %d answer, %d indexes)", lost, indexes)
		}
		net.tick()
	}
	if lost != 1 || indexes == 0 {
		t.Fatalf("the scenario did not happen: %d answers lost, %d indexes", lost, indexes)
	}
}

// steppedScenario runs a fixed script on a fresh net of seed: joins, saves
// on several nodes, an edit, a cut that loses frames and the ticks that
// repair it. It returns the hash of every frame sent and their number.
func steppedScenario(t *testing.T, seed uint64, lastNote string) (string, int) {
	net := newSteppedNet(t, 4, seed)
	net.join()
	ctx := context.Background()
	a := net.save(net.nodes[0], "team://core", "first note")
	net.save(net.nodes[1], "project://x", "a project note")
	title := "edited on node 2"
	if _, err := net.nodes[2].svc.Update(ctx, net.nodes[2].me, a, memory.UpdateRequest{Title: &title}); err != nil {
		t.Fatal(err)
	}
	net.nodes[2].st.Pump()
	net.run()
	net.cut = func(from, to int) bool { return (from == 3) != (to == 3) }
	net.save(net.nodes[3], "team://core", "behind the cut")
	net.save(net.nodes[0], "team://core", lastNote)
	for range 5 {
		net.tick()
	}
	net.cut = nil
	for range 40 {
		net.tick()
	}
	if err := net.nodes[1].st.Sync(""); err != nil {
		t.Fatal(err)
	}
	net.run()
	want, _ := net.nodes[0].svc.Store().State("team://core")
	for _, nd := range net.nodes[1:] {
		if got, _ := nd.svc.Store().State("team://core"); got.Digest() != want.Digest() {
			t.Fatalf("seed %d: node %d did not converge", seed, nd.i)
		}
	}
	return hex.EncodeToString(net.trace.Sum(nil)), net.sent
}

// The same calls give the same frames, byte for byte and in order; the
// hash notices a change of one note's content.
func TestSteppedIsDeterministic(t *testing.T) {
	h1, n1 := steppedScenario(t, 7, "last note")
	h2, n2 := steppedScenario(t, 7, "last note")
	if n1 == 0 {
		t.Fatal("the scenario sent no frame")
	}
	if h1 != h2 || n1 != n2 {
		t.Fatalf("one scenario, two traces: %s (%d frames) and %s (%d frames)", h1, n1, h2, n2)
	}
	if h3, _ := steppedScenario(t, 7, "last note, changed"); h3 == h1 {
		t.Fatal("another scenario gave the same trace: the hash sees nothing")
	}
	t.Logf("%d frames, trace %s", n1, h1)
}

// A delta refused because its author's binding had not arrived yet is
// asked for again as soon as the binding does, not at the next
// anti-entropy (deltas and bindings travel apart; TestTeamMemoryReplicates
// timed out when the save's delta won the race).
func TestRefusedForWantOfBindingSyncsWhenItArrives(t *testing.T) {
	for _, signed := range []bool{false, true} {
		refusedUntilBinding(t, signed)
	}
}

// refusedUntilBinding: node 1 hears no binding while node 0 saves in a
// team namespace (signed: one node 0 made, whose signed acl record names
// agent://n0, refused for want of its key: acl.ErrNotAuthorized), then
// hears them.
func refusedUntilBinding(t *testing.T, signed bool) {
	net := newSteppedNet(t, 2, 7)
	n0, n1 := net.nodes[0], net.nodes[1]
	codec := wire.NewCodec(0)
	holding := true
	net.lose = func(_, to int, frame []byte) bool {
		m, err := codec.Decode(frame)
		// node 1 hears no binding (node 0 hears node 1's, so it sends)
		return holding && to == 1 && err == nil && m.Kind == wire.KindBindings && len(m.Bindings) > 0
	}
	net.join()
	for tick := 0; agentsOn(n0.st, n1.id.NodeID()) != "agent://n1"; tick++ {
		if tick == 600 {
			t.Fatal("node 0 never learned node 1's binding")
		}
		net.tick()
	}
	ns := "team://core"
	if signed {
		ns = "team://signed"
		if _, err := n0.svc.CreateNamespace(context.Background(), n0.me, ns); err != nil {
			t.Fatal(err)
		}
		n0.st.Pump()
		net.run()
	}
	id := net.save(n0, ns, "replicated badger tuning note")
	if n1.has(id) {
		t.Fatalf("signed %v: a write whose author is unknown here was applied", signed)
	}
	holding = false
	for tick := 0; agentsOn(n1.st, n0.id.NodeID()) != "agent://n0"; tick++ {
		if tick == 600 {
			t.Fatal("node 1 never learned node 0's binding")
		}
		net.tick()
	}
	if !n1.has(id) {
		t.Fatalf("signed %v: the refused write did not come with the binding that lets it pass", signed)
	}
}

// A save made before its node knew which agents a peer hosts went to
// nobody there (a peer that may not read a namespace is sent none of it);
// once the peer's binding arrives, the save reaches it in the same round,
// not at anti-entropy's random pick of the pair (the peer, not holding the
// namespace, never asks for it).
func TestNewReaderSyncsWhenItsBindingArrives(t *testing.T) {
	net := newSteppedNet(t, 2, 11)
	n0, n1 := net.nodes[0], net.nodes[1]
	codec := wire.NewCodec(0)
	holding := true
	net.lose = func(_, to int, frame []byte) bool {
		m, err := codec.Decode(frame)
		// node 0 hears no binding (node 1 hears node 0's)
		return holding && to == 0 && err == nil && m.Kind == wire.KindBindings && len(m.Bindings) > 0
	}
	net.join()
	for tick := 0; agentsOn(n1.st, n0.id.NodeID()) != "agent://n0"; tick++ {
		if tick == 600 {
			t.Fatal("node 1 never learned node 0's binding")
		}
		net.tick()
	}
	id := net.save(n0, "team://core", "replicated badger tuning note")
	if n1.has(id) {
		t.Fatal("the scenario did not happen: node 0 sent to a peer whose agents it did not know")
	}
	holding = false
	for tick := 0; agentsOn(n0.st, n1.id.NodeID()) != "agent://n1"; tick++ {
		if tick == 600 {
			t.Fatal("node 0 never learned node 1's binding")
		}
		net.tick()
	}
	if !n1.has(id) {
		t.Fatal("the save did not follow the binding that made node 1 a reader")
	}
}

// A node that sends before its first tick (a save in the first half
// second after it starts) times its batches from its start, not from the
// engine's zero time, which every ack timeout had passed at the first
// tick: a batch whose ack was still on its way was sent again, or fell
// back to a digest sync, at that tick.
func TestNoResendAtTheFirstTickOfWhatWasSentBefore(t *testing.T) {
	net := newSteppedNet(t, 3, 1)
	for _, nd := range net.nodes {
		nd.st.SetMembers(net.members())
	}
	net.run()
	net.lose = func(from, to int, _ []byte) bool { return to == 0 } // the acks are late
	net.save(net.nodes[0], "team://core", "a note saved before any tick")
	net.run()
	net.lose = nil
	net.tick() // one tick: 100 ms, well within the ack timeout
	for _, p := range net.nodes[0].st.Status(false).Peers {
		if p.Retransmits+p.Fallbacks != 0 {
			t.Fatalf("node 0 sent %s its batch again %d times and fell back %d times at its first tick", p.Peer, p.Retransmits, p.Fallbacks)
		}
	}
}

// A Stepped's local queue holds Config.LocalQueue deltas; one more is not
// queued but counted, and its namespace is digest-synced at the next tick,
// so what overflowed still reaches the peers.
func TestSteppedLocalQueueOverflowSyncs(t *testing.T) {
	net := newSteppedNet(t, 2, 3, func(i int, c *Config) { c.LocalQueue = 2 })
	net.join()
	n0, n1 := net.nodes[0], net.nodes[1]
	ctx := context.Background()
	var ids []string
	for i := range 3 { // not pumped: the third save's delta finds the queue full
		r, err := n0.svc.Save(ctx, n0.me, memory.SaveRequest{Namespace: "team://core", Content: fmt.Sprintf("note %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if got := n0.st.Status(false).LocalOverflow; got != 1 {
		t.Fatalf("local overflows %d, want 1", got)
	}
	n0.st.Pump()
	net.run()
	if !n1.has(ids[0]) || !n1.has(ids[1]) || n1.has(ids[2]) {
		t.Fatalf("before the tick: %v %v %v, want the two queued only", n1.has(ids[0]), n1.has(ids[1]), n1.has(ids[2]))
	}
	net.tick()
	if !n1.has(ids[2]) {
		t.Fatal("the delta the full queue dropped was not synced at the tick")
	}
}

// SetSortedMembers with a membership sorted by SortMembers is SetMembers:
// the same frames, in the same order, and the same Members.
func TestSetSortedMembersIsSetMembers(t *testing.T) {
	var hashes, members []string
	for _, sorted := range []bool{false, true} {
		net := newSteppedNet(t, 4, 5)
		ms := net.members()
		slices.Reverse(ms) // not in node id order
		if sorted {
			SortMembers(ms)
		}
		for _, nd := range net.nodes {
			if sorted {
				nd.st.SetSortedMembers(ms)
			} else {
				nd.st.SetMembers(ms)
			}
		}
		net.run()
		net.save(net.nodes[0], "team://core", "a note")
		net.tick()
		hashes = append(hashes, hex.EncodeToString(net.trace.Sum(nil)))
		members = append(members, fmt.Sprint(net.nodes[0].st.Members()))
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("traces differ: %s (SetMembers) and %s (SetSortedMembers)", hashes[0], hashes[1])
	}
	if members[0] != members[1] {
		t.Fatalf("members differ:\n%s (SetMembers)\n%s (SetSortedMembers)", members[0], members[1])
	}
}
