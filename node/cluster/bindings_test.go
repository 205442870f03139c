package cluster

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/sync/wire"
)

// bindingsTally counts the bindings frames a steppedNet delivers.
type bindingsTally struct {
	frames, bindings int
	indexes          map[int]int // by sender: frames carrying an index
}

func (b *bindingsTally) allIndexes() int {
	n := 0
	for _, c := range b.indexes {
		n += c
	}
	return n
}

// tallyBindings has net count, from now on, the bindings frames it
// delivers.
func (net *steppedNet) tallyBindings() *bindingsTally {
	codec := wire.NewCodec(wire.DefaultMaxFrame)
	b := &bindingsTally{indexes: map[int]int{}}
	net.observe = func(from, to int, frame []byte) {
		m, err := codec.Decode(frame)
		if err != nil {
			net.t.Fatalf("frame %d>%d: %v", from, to, err)
		}
		if m.Kind != wire.KindBindings {
			return
		}
		b.frames++
		b.bindings += len(m.Bindings)
		if len(m.BindingIDs) > 0 {
			b.indexes[from]++
		}
	}
	return b
}

// knowsAll reports whether every node knows the agents every other node
// hosts (agent://nI on node I).
func (net *steppedNet) knowsAll() bool {
	for _, nd := range net.nodes {
		for _, other := range net.nodes {
			if other != nd && agentsOn(nd.st, other.id.NodeID()) != fmt.Sprintf("agent://n%d", other.i) {
				return false
			}
		}
	}
	return true
}

// Nodes starting together send each claim once to each peer (a probe
// carries its sender's claims) and no index: nobody lacks anything that
// the probes do not bring; and two frames a pair, its two probes, which
// cross and answer each other. (Each join used to send an index,
// answered with every binding the index lacked: a node's claim travelled
// to each peer from every node that had it by then. Then each probe was
// answered with a bare digest: four frames a pair.)
func TestBindingsStartMovesEachClaimOnce(t *testing.T) {
	const n = 8
	net := newSteppedNet(t, n, 5)
	tally := net.tallyBindings()
	net.join()
	for range 5 {
		net.tick()
	}
	if !net.knowsAll() {
		t.Fatal("the nodes do not know each other's agents")
	}
	if tally.bindings != n*(n-1) || tally.allIndexes() != 0 || tally.frames != n*(n-1) {
		t.Fatalf("a start of %d nodes moved %d bindings in %d frames and %d indexes; want %d in %d and none",
			n, tally.bindings, tally.frames, tally.allIndexes(), n*(n-1), n*(n-1))
	}
}

// A node that missed a binding is the only one to ask for it, once: its
// peers see from its digest that it holds fewer bindings than they do
// (they used to ask it too), and it asks one peer, not each one whose
// digest differed.
func TestBindingsOnlyTheLackingNodeAsks(t *testing.T) {
	net := newSteppedNet(t, 6, 13)
	net.join()
	net.tick() // a hand-over must be newer than the claim it replaces
	n0, n1, n5 := net.nodes[0], net.nodes[1], net.nodes[5]
	net.cut = func(from, to int) bool { return to == 5 }
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	net.cut = nil
	tally := net.tallyBindings()
	for ticks := 0; ; ticks++ {
		if host, _ := n5.st.HostedElsewhere(n0.me.Principal); host == n1.id.NodeID() {
			break
		}
		if ticks > int(BindingsInterval/steppedTick)+2 {
			t.Fatal("node 5 never learnt the hand-over")
		}
		net.tick()
	}
	for range int(2 * bindingsAskGap / steppedTick) {
		net.tick()
	}
	if tally.indexes[5] != 1 || tally.allIndexes() != 1 {
		t.Fatalf("indexes sent, by node: %v; want one, node 5's", tally.indexes)
	}
}

// A node that heard several indexes naming a binding it lacked, and could
// send its own index back to only one of them at once, asks the others
// later only if it still lacks what they named: once it holds every
// binding, no index is sent (a node used to ask each of them in turn, one
// per bindingsAskGap, long after it lacked nothing).
func TestBindingsNoIndexOnceNothingLacks(t *testing.T) {
	net := newSteppedNet(t, 4, 17)
	net.join()
	net.tick() // a hand-over must be newer than the claim it replaces
	n0, n1, n2, n3 := net.nodes[0], net.nodes[1], net.nodes[2], net.nodes[3]
	// Node 2 misses the hand-over of agent://n0 to node 1, and nodes 0
	// and 1 miss that of agent://n2 to node 3: nodes 0, 1 and 2 then hold
	// as many bindings, each set lacking one of the other's.
	net.cut = func(from, to int) bool { return to == 2 }
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	net.cut = func(from, to int) bool { return to == 0 || to == 1 }
	if _, err := n2.st.Handover(n2.me.Principal, n3.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	net.cut = nil
	tally := net.tallyBindings()
	lacked := false
	settled := func() bool {
		for _, nd := range net.nodes[1:] {
			if !bytes.Equal(nd.st.bindingsSum, n0.st.bindingsSum) {
				return false
			}
		}
		return true
	}
	for ticks := 0; !settled(); ticks++ {
		if ticks > int(BindingsInterval/steppedTick)+int(4*bindingsAskGap/steppedTick) {
			t.Fatal("the bindings never settled")
		}
		net.tick()
		lacked = lacked || len(n2.st.bx.lacking) > 0 || len(n0.st.bx.lacking) > 0 || len(n1.st.bx.lacking) > 0
	}
	if !lacked || tally.allIndexes() == 0 {
		t.Fatalf("the scenario did not happen: no node kept an index it could not answer at once (%d indexes)", tally.allIndexes())
	}
	before := tally.allIndexes()
	for range int(4 * bindingsAskGap / steppedTick) {
		net.tick()
	}
	if after := tally.allIndexes(); after != before {
		t.Fatalf("%d indexes sent after every node held every binding", after-before)
	}
}

// Two nodes that each refuse a binding of the other's (both claimed
// agent://n0) keep unequal digests for good; one exchange of indexes
// settles that, and the next summaries start none (each used to start an
// exchange between every such pair, every BindingsInterval).
func TestBindingsRefusedForGoodSettle(t *testing.T) {
	n0 := namespace.MustParse("agent://n0")
	net := newSteppedNet(t, 3, 19, func(i int, c *Config) {
		if i == 1 {
			own := namespace.MustParse("agent://n1")
			c.Agents = func() []namespace.Address { return []namespace.Address{own, n0} }
		}
	})
	net.join()
	for range int(BindingsInterval/steppedTick) + 5 {
		net.tick()
	}
	a, b := net.nodes[0], net.nodes[1]
	if bytes.Equal(a.st.bindingsSum, b.st.bindingsSum) || a.st.Status(false).BindingConflicts == 0 {
		t.Fatal("the scenario did not happen: nodes 0 and 1 agree on their bindings")
	}
	tally := net.tallyBindings()
	for range int(BindingsInterval/steppedTick) + 5 {
		net.tick()
	}
	if tally.allIndexes() != 0 {
		t.Fatalf("a summary between nodes whose sets differ for good started exchanges: indexes by node %v", tally.indexes)
	}
}

// storedBindings is the number of bindings nd's store holds, as a restart
// would load them (loadBindings).
func storedBindings(t *testing.T, nd *steppedNode) int {
	t.Helper()
	raw, err := nd.svc.Store().Meta(bindingsMeta)
	if err != nil {
		t.Fatal(err)
	}
	var encs [][]byte
	if err := msgpack.Unmarshal(raw, &encs); err != nil {
		t.Fatal(err)
	}
	return len(encs)
}

// A node stores its own claims and hand-overs before it announces them,
// and the bindings it admits from peers once a tick, all those admitted
// since together: a start among N peers stores the directory twice a node,
// not once per peer's claim (N times the whole set, with a synced write).
func TestBindingsStoredOnceATick(t *testing.T) {
	const n = 8
	net := newSteppedNet(t, n, 23)
	for _, nd := range net.nodes {
		if got := storedBindings(t, nd); got != 1 {
			t.Fatalf("node %d stored %d bindings when it started; want its claim", nd.i, got)
		}
	}
	net.join()
	if !net.knowsAll() {
		t.Fatal("the nodes do not know each other's agents")
	}
	net.tick()
	for _, nd := range net.nodes {
		if got := storedBindings(t, nd); got != n {
			t.Fatalf("node %d stored %d bindings after a tick; want %d", nd.i, got, n)
		}
		if saves := nd.st.bx.saver.saves.Load(); saves > 2 {
			t.Fatalf("node %d stored its bindings %d times at a start among %d peers; want 2 (its claim, then the peers')", nd.i, saves, n-1)
		}
	}
	n0, n1 := net.nodes[0], net.nodes[1]
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	if got := storedBindings(t, n0); got != n+1 {
		t.Fatalf("node 0 stored %d bindings once its hand-over returned; want %d", got, n+1)
	}
	net.run()
	if got := storedBindings(t, n1); got != n {
		t.Fatalf("node 1 stored the hand-over it admitted before a tick: %d bindings", got)
	}
	net.tick()
	if got := storedBindings(t, n1); got != n+1 {
		t.Fatalf("node 1 stored %d bindings after a tick; want %d", got, n+1)
	}
}

// updateHookKV calls before ahead of every synced transaction.
type updateHookKV struct {
	store.KV
	before func()
}

func (k updateHookKV) Update(fn func(w store.Writer) error) error {
	k.before()
	return k.KV.Update(fn)
}

// A node's own hand-over is held from every reader of its bindings (a
// peer's index ask answered on the loop, any bindings frame) until it is
// stored: when the store's write begins, knownMu is still held. Before,
// the hand-over was published, knownMu let go, and only then stored: a
// crash in that sync could leave peers holding a hand-over the node forgot.
func TestOwnHandoverUnseenUntilStored(t *testing.T) {
	var n0 *steppedNode
	var watching bool
	seen := -1
	net := newSteppedNetKV(t, 4, 23, func(i int) store.KV {
		kv := store.NewMemKV()
		if i != 0 {
			return kv
		}
		return updateHookKV{KV: kv, before: func() {
			if !watching || !n0.st.knownMu.TryRLock() {
				return
			}
			seen = len(n0.st.bindingEncs)
			n0.st.knownMu.RUnlock()
		}}
	})
	net.join()
	net.tick()
	n0 = net.nodes[0]
	before := storedBindings(t, n0)
	watching = true
	if _, err := n0.st.Handover(n0.me.Principal, net.nodes[1].id.Public); err != nil {
		t.Fatal(err)
	}
	watching = false
	if seen > before {
		t.Fatalf("a store began with the hand-over readable (%d bindings held, %d stored): peers may hold it before it is durable", seen, before)
	}
	if got := storedBindings(t, n0); got != before+1 {
		t.Fatalf("stored bindings after the hand-over: %d, want %d", got, before+1)
	}
}

// Each BindingsInterval a node sends its digest to bindingsSummaryFanout
// peers at most, in turns round the ring of ids, and that still repairs a
// lost frame within the interval: a hand-over lost on its way to one node
// reaches it from the peers whose turn names it.
func TestBindingsSummaryFanout(t *testing.T) {
	const n = bindingsSummaryFanout + 4
	net := newSteppedNet(t, n, 37)
	net.join()
	for range 5 {
		net.tick() // a hand-over must be newer than the claim it replaces
	}
	codec := wire.NewCodec(wire.DefaultMaxFrame)
	summaries := map[int]int{} // by sender
	net.observe = func(from, _ int, frame []byte) {
		if m, err := codec.Decode(frame); err == nil && m.Kind == wire.KindBindings && len(m.Bindings) == 0 && len(m.BindingIDs) == 0 && !m.Reply {
			summaries[from]++
		}
	}
	n0, n1, last := net.nodes[0], net.nodes[1], net.nodes[n-1]
	net.cut = func(from, to int) bool { return to == n-1 }
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	net.cut = nil
	if host, _ := last.st.HostedElsewhere(n0.me.Principal); host != n0.id.NodeID() {
		t.Fatalf("the last node learnt the hand-over across the cut: host %q", host)
	}
	for range int(BindingsInterval/steppedTick) + 1 {
		net.tick()
	}
	if host, _ := last.st.HostedElsewhere(n0.me.Principal); host != n1.id.NodeID() {
		t.Fatalf("a BindingsInterval after the cut, the last node has host %q for agent://n0, want node 1", host)
	}
	for i, c := range summaries {
		if c > bindingsSummaryFanout {
			t.Fatalf("node %d sent %d digests in one interval, more than %d", i, c, bindingsSummaryFanout)
		}
	}
	if len(summaries) == 0 {
		t.Fatal("no digest was sent")
	}
}
