package replica

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// settle pumps and ticks c for d of virtual time in steps of 100ms (the
// trees' announcements and grafts wait on Tick).
func (c *cluster) settle(d time.Duration) {
	for t := time.Duration(0); t < d; t += 100 * time.Millisecond {
		c.pump(50)
		c.tick(100 * time.Millisecond)
	}
	c.pump(50)
}

// treeCluster is n nodes over pol whose team://a tree has formed: n0
// wrote once (sent direct: no tree link yet), and the readers it and then
// the others asked for links joined the overlay.
func treeCluster(t *testing.T, n int, cfg Config, pol Policy, seed uint64) *cluster {
	t.Helper()
	c := newCluster(t, n, cfg, pol, seed)
	c.pump(20)
	c.write(0, "team://a", "m0", "title", "first")
	c.settle(3 * time.Second)
	return c
}

// isPayload reports whether m carries namespace content: a live delta, a
// sync answer's records or a relayed delta.
func isPayload(m *wire.Message) bool {
	return len(m.Deltas) > 0 && m.Kind != wire.KindSyncRequest
}

// At or above the threshold a live delta goes over the tree: its writer
// sends it to the few peers of its active view, not to every holder,
// and every holder gets it from relays, once each. Below the threshold
// nothing changes: one send per holder, no tree message at all.
func TestTreeCarriesLiveDeltasAboveThreshold(t *testing.T) {
	const n = 16
	c := treeCluster(t, n, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 3)
	// Each writer writes once before the count (its tree's first
	// broadcast floods while the tree settles).
	for w := range 4 {
		c.write(w, "team://a", fmt.Sprintf("w%d", w), "title", "warm-up")
		c.settle(time.Second)
	}
	for _, nd := range c.nodes {
		if len(nd.eng.TreeActive("team://a")) == 0 {
			t.Fatalf("%s has no link in team://a's tree", nd.id)
		}
	}
	sends, own := map[PeerID]int{}, map[PeerID]int{}
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if isPayload(m) {
			if m.Kind != wire.KindTree {
				t.Errorf("%s sent %s of team://a to %s: want every live delta over the tree", from, m.Kind, to)
			}
			sends[from]++
			if m.Deltas[0].Author == string(from) {
				own[from]++
			}
		}
		return false
	}
	const writes = 40
	for i := range writes {
		c.write(i%4, "team://a", fmt.Sprintf("m%d", i), "title", fmt.Sprintf("v%d", i))
		c.settle(300 * time.Millisecond)
	}
	if !c.converged("team://a") {
		t.Fatal("not converged over the tree")
	}
	total := 0
	for _, k := range sends {
		total += k
	}
	active := epidemic.DefaultConfig("x").ActiveSize
	for w := range 4 {
		if per := float64(own[c.nodes[w].id]) / (writes / 4); per > float64(active) {
			t.Errorf("writer %s sent %.1f payloads per write of its own, want at most its %d links", c.nodes[w].id, per, active)
		}
	}
	// Direct sends would be writes·(n−1); a settled tree costs about that
	// too in all (n−1 relays each), spread over the nodes. Measured: 1.0x
	// once settled; the bound leaves room for the trees settling.
	if ratio := float64(total) / float64(writes*(n-1)); ratio > 1.6 {
		t.Errorf("payload sends %d = %.2f × writes·(N−1), want at most 1.6", total, ratio)
	}
	st := c.nodes[0].eng.TreeStats()
	if st.Broadcasts == 0 || st.Trees != 1 {
		t.Fatalf("tree stats of n0: %+v", st)
	}
	t.Logf("%d payload sends for %d writes on %d nodes: %.2f × writes·(N−1); n0: %+v", total, writes, n, float64(total)/float64(writes*(n-1)), st)

	// Below the threshold: direct sends, no tree.
	small := newCluster(t, 5, Config{}, openPolicy{}, 3)
	small.drop = func(from, to PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindTree {
			t.Errorf("%s sent a tree message in a replica set of 5", from)
		}
		return false
	}
	for i := range 10 {
		small.write(i%5, "team://a", fmt.Sprintf("m%d", i), "title", "v")
		small.settle(300 * time.Millisecond)
	}
	if !small.converged("team://a") || small.nodes[0].eng.TreeStats().Trees != 0 {
		t.Fatal("a small replica set did not converge by direct sends")
	}
}

// A relay that alters what it forwards (here: a byte of the delta, or
// the author it names) is caught by the first honest node, which drops
// the payload (does not apply it, does not forward it) and drops the
// relay from its tree; the payload reaches that node by another link, and
// every node converges.
func TestTreeAlteringRelayDroppedNotForwarded(t *testing.T) {
	for _, how := range []string{"delta", "author"} {
		t.Run(how, func(t *testing.T) {
			const n = 16
			c := treeCluster(t, n, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
			mallory := c.nodes[n-1].id
			genuine := map[[wire.TreeIDSize]byte]bool{}
			altered := 0
			c.alter = func(from, to PeerID, m *wire.Message) *wire.Message {
				if m.Kind != wire.KindTree || len(m.Deltas) != 1 {
					return m
				}
				if from != mallory {
					if !genuine[wire.RelayID(m.Deltas[0].RelayBytes())] {
						t.Errorf("%s forwarded a relayed delta no writer made, to %s", from, to)
					}
					return m
				}
				if m.Deltas[0].Author == string(mallory) {
					return m // its own writes it sends as they are
				}
				cp := *m
				nd := m.Deltas[0]
				switch how {
				case "delta":
					nd.Delta = slices.Clone(nd.Delta)
					nd.Delta[len(nd.Delta)/2] ^= 1
				case "author":
					nd.Author = string(c.nodes[(slices.Index(c.nodes, c.byID(PeerID(nd.Author)))+1)%4].id)
				}
				cp.Deltas = []wire.NamespaceDelta{nd}
				altered++
				return &cp
			}
			// Record what each writer really sent, before anyone relays.
			record := func(w int) {
				for _, ts := range c.nodes[w].eng.treeOut {
					genuine[wire.RelayID(ts.env.Msg.Payload)] = true
				}
			}
			for i := range 30 {
				w := i % 4
				c.write(w, "team://a", fmt.Sprintf("m%d", i), "title", fmt.Sprintf("v%d", i))
				record(w)
				c.settle(500 * time.Millisecond)
			}
			c.settle(3 * time.Second)
			if altered == 0 {
				t.Fatal("mallory relayed nothing: the test tested nothing")
			}
			distrusting, rejected := 0, 0
			for _, nd := range c.nodes[:n-1] {
				for _, ps := range nd.eng.Stats() {
					if ps.Peer == mallory {
						rejected += int(ps.Rejected)
					}
				}
				if nd.eng.TreeStats().Distrusted == 0 {
					continue
				}
				distrusting++
				if slices.Contains(nd.eng.TreeActive("team://a"), mallory) {
					t.Errorf("%s caught mallory altering a payload and still links it in its tree", nd.id)
				}
			}
			if rejected == 0 || distrusting == 0 {
				t.Fatalf("altered payloads were not refused (%d rejections of mallory, %d nodes distrusting it)", rejected, distrusting)
			}
			want := c.nodes[0].st.Map("team://a").Digest()
			for _, nd := range c.nodes {
				if nd.st.Map("team://a").Digest() != want {
					t.Fatalf("%s did not converge (altered %d payloads)", nd.id, altered)
				}
			}
			t.Logf("mallory altered %d payloads; %d rejected, %d nodes dropped it", altered, rejected, distrusting)
		})
	}
}

// A relay that drops what it should forward is routed around by the tree
// itself (its neighbours' announcements and grafts), without anti-entropy.
func TestTreeDroppingRelayRepaired(t *testing.T) {
	const n = 16
	c := treeCluster(t, n, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 7)
	mallory := c.nodes[n-1].id
	swallowed := 0
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if from == mallory && m.Kind == wire.KindTree && len(m.Deltas) == 1 && m.Deltas[0].Author != string(mallory) {
			swallowed++
			return true
		}
		return false
	}
	for i := range 30 {
		c.write(i%4, "team://a", fmt.Sprintf("m%d", i), "title", fmt.Sprintf("v%d", i))
		c.settle(500 * time.Millisecond)
	}
	c.settle(3 * time.Second)
	if swallowed == 0 {
		t.Fatal("mallory forwarded nothing: the test tested nothing")
	}
	if !c.converged("team://a") {
		t.Fatalf("not converged with %d payloads swallowed by a relay", swallowed)
	}
	var st epidemic.Stats
	for _, nd := range c.nodes {
		s := nd.eng.TreeStats().Node
		st.Grafts += s.Grafts
		st.Wants += s.Wants
	}
	t.Logf("mallory swallowed %d payloads; repaired with %d wants and %d grafts", swallowed, st.Wants, st.Grafts)
	if st.Wants+st.Grafts == 0 {
		t.Fatal("converged without a want or a graft: the tree repaired nothing")
	}
}

// Lost payloads (30% of every message) are repaired by the tree and,
// for what it gives up, by anti-entropy.
func TestTreeLossRepaired(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: 2 * time.Second}, openPolicy{}, 8)
	c.loss = 0.3
	for i := range 40 {
		c.write(i%5, "team://a", fmt.Sprintf("m%d", i%13), "title", fmt.Sprintf("v%d", i))
		c.settle(300 * time.Millisecond)
	}
	c.loss = 0
	c.settle(30 * time.Second)
	if !c.converged("team://a") {
		t.Fatal("not converged after loss")
	}
	// Most of it came over the tree, not anti-entropy: each write reaches
	// 11 peers, and a relayed delta is counted where it was new.
	var relayed, repairs uint64
	for _, nd := range c.nodes {
		s := nd.eng.TreeStats()
		relayed += s.Relayed
		repairs += s.Node.Wants + s.Node.Grafts
	}
	t.Logf("relayed %d of %d deliveries, %d wants and grafts", relayed, 40*11, repairs)
	if relayed < 40*11/2 || repairs == 0 {
		t.Fatalf("relayed %d of %d deliveries with %d wants and grafts: the tree did not carry the writes", relayed, 40*11, repairs)
	}
}

// No node sends namespace content to a peer that may not read it: a
// non-reader asking for a place in the tree is refused, and a reader
// whose read is revoked leaves every tree and gets nothing more, relayed
// or direct.
func TestTreeNeverReachesNonReader(t *testing.T) {
	const n = 14
	pol := togglePolicy{readers: map[PeerID]bool{}}
	for i := range n - 2 {
		pol.readers[PeerID(fmt.Sprintf("n%d", i))] = true
	}
	outsider, revoked := PeerID(fmt.Sprintf("n%d", n-1)), PeerID(fmt.Sprintf("n%d", n-3))
	revokedAt := -1
	sent := 0
	c := newCluster(t, n, Config{AntiEntropyInterval: 2 * time.Second}, pol, 9)
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if isPayload(m) {
			sent++
			if to == outsider || (revokedAt >= 0 && to == revoked) {
				t.Errorf("%s sent %s of %s to %s, which may not read it", from, m.Kind, m.Deltas[0].Namespace, to)
			}
		}
		return false
	}
	c.pump(20)
	c.write(0, "team://a", "m0", "title", "first")
	c.settle(3 * time.Second)
	// The outsider asks n0 for a place with priority (which a reader
	// could not refuse) and announces a payload.
	out := c.byID(outsider)
	for _, em := range []epidemic.Message{{Kind: epidemic.KindNeighbor, Priority: true}, {Kind: epidemic.KindJoin},
		{Kind: epidemic.KindIHave, IHave: []epidemic.Announcement{{ID: epidemic.MsgID{1}, Round: 1}}}} {
		if err := c.nodes[0].eng.Step(out.id, toWire("team://a", em)); err != nil {
			t.Fatal(err)
		}
	}
	c.settle(time.Second)
	if got := c.nodes[0].eng.TreeStats().Refused; got < 3 {
		t.Errorf("n0 refused %d of the outsider's 3 tree messages", got)
	}
	for i := range 20 {
		if i == 10 {
			delete(pol.readers, revoked)
			revokedAt = i
		}
		c.write(i%3, "team://a", fmt.Sprintf("m%d", i), "title", fmt.Sprintf("v%d", i))
		c.settle(300 * time.Millisecond)
	}
	c.settle(5 * time.Second)
	for _, nd := range c.nodes {
		if slices.Contains(nd.eng.TreeActive("team://a"), outsider) || slices.Contains(nd.eng.TreeActive("team://a"), revoked) {
			t.Errorf("%s links a non-reader in its tree: %v", nd.id, nd.eng.TreeActive("team://a"))
		}
	}
	want := c.nodes[0].st.Map("team://a").Digest()
	for _, nd := range c.nodes[:n-3] {
		if nd.st.Map("team://a").Digest() != want {
			t.Fatalf("reader %s did not converge", nd.id)
		}
	}
	if sent == 0 {
		t.Fatal("nothing sent: the test tested nothing")
	}
}

// checkRelayed names the author where the direct checks name the sender:
// a relayed delta signed by its author passes from any reader; one whose
// author may not write is refused without blaming the bytes.
func TestRelayedDeltaCheckedAgainstAuthor(t *testing.T) {
	a := newAttack(t) // n2 may read but not write team://a
	n0 := a.c.nodes[0]
	n1 := a.c.nodes[1]
	m := n1.st.Map("team://a")
	n1.clock.Observe(m.MaxTimestamp(), a.c.now)
	d, err := m.Set(n1.rep, n1.clock.Now(a.c.now), "m7", "title", []byte("relayed"))
	if err != nil {
		t.Fatal(err)
	}
	sealInto(m, "team://a", d, n1.signer)
	nd := wire.NamespaceDelta{Namespace: "team://a", Delta: d.Encode(), From: d.FirstDot(n1.rep), Author: "n1"}
	nd.Sign(wire.KindDeltas, n1.signer)
	// n2, a reader, relays n1's delta: accepted, though n2 may not write.
	p2 := n0.eng.peers["n2"]
	if _, err := n0.eng.checkRelayed(p2, wire.RelayID(nd.RelayBytes()), nd); err != nil {
		t.Fatalf("a reader relaying a writer's signed delta: %v", err)
	}
	// n2 relays its own write as its author: refused, not as altered.
	d2, _ := m.Set(a.c.nodes[2].rep, n1.clock.Now(a.c.now), "m8", "title", []byte("mallory"))
	sealInto(m, "team://a", d2, a.mallory)
	nd2 := wire.NamespaceDelta{Namespace: "team://a", Delta: d2.Encode(), From: d2.FirstDot(a.c.nodes[2].rep), Author: "n2"}
	nd2.Sign(wire.KindDeltas, a.mallory)
	_, err = n0.eng.checkRelayed(p2, wire.RelayID(nd2.RelayBytes()), nd2)
	if !errors.Is(err, ErrNotAllowed) || errors.Is(err, errAltered) {
		t.Fatalf("a non-writer's relayed delta: %v, want ErrNotAllowed and not altered", err)
	}
	// n1's delta claiming n2 as author: the signature fails, altered.
	nd.Author = "n2"
	if _, err := n0.eng.checkRelayed(p2, wire.RelayID(nd.RelayBytes()), nd); !errors.Is(err, ErrBadSignature) || !errors.Is(err, errAltered) {
		t.Fatalf("a delta under another author: %v, want ErrBadSignature, altered", err)
	}
}

// A relayed delta is forwarded only once the delta it brought is
// applied, and then only to peers that may still read: a delta carrying
// the revocation of the next hop's read (simulated here by revoking while
// it is applied) never reaches that hop.
func TestTreeForwardsAfterApply(t *testing.T) {
	pol := togglePolicy{readers: map[PeerID]bool{}}
	for i := range 12 {
		pol.readers[PeerID(fmt.Sprintf("n%d", i))] = true
	}
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, pol, 4)
	n0 := c.nodes[0]
	c.write(0, "team://a", "m1", "title", "revoking")
	var relay *node
	var msg *wire.Message
	for n0.eng.HasReady() {
		rd := n0.eng.Ready()
		n0.eng.Advance(nil)
		for _, env := range rd.Messages {
			if env.Msg.Kind == wire.KindTree && len(env.Msg.Deltas) == 1 && relay == nil {
				relay, msg = c.byID(env.To), env.Msg
			}
		}
	}
	if relay == nil {
		t.Fatal("n0 sent no payload over its tree")
	}
	relay.eng.Ready()
	relay.eng.Advance(nil)
	if err := relay.eng.Step(n0.id, msg); err != nil {
		t.Fatal(err)
	}
	rd := relay.eng.Ready()
	if len(rd.Apply) != 1 {
		t.Fatalf("the relay has %d deltas to apply, want 1", len(rd.Apply))
	}
	for _, env := range rd.Messages {
		if len(env.Msg.Deltas) > 0 {
			t.Fatalf("%s forwarded a delta to %s before applying it", relay.id, env.To)
		}
	}
	revoked := map[PeerID]bool{}
	for _, p := range relay.eng.TreeActive("team://a") {
		if p != n0.id {
			delete(pol.readers, p)
			revoked[p] = true
		}
	}
	relay.eng.Advance(nil)
	for relay.eng.HasReady() {
		for _, env := range relay.eng.Ready().Messages {
			if len(env.Msg.Deltas) > 0 && revoked[env.To] {
				t.Fatalf("%s forwarded a delta to %s, whose read the delta revoked", relay.id, env.To)
			}
		}
		relay.eng.Advance(nil)
	}
	if relay.eng.TreeStats().Withheld == 0 {
		t.Fatal("no payload withheld: the test tested nothing")
	}
}

// A node that never hears of a tree payload (every copy and announcement
// to it lost) and then gets the author's next delta, which depends on
// the lost one, asks the author for a sync at once: no ack timeout would
// tell the author, and anti-entropy (an hour here) is not waited for.
func TestTreeHeldDeltaAsksAuthor(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 6)
	c.write(2, "team://a", "w2", "title", "warm-up") // n2's first write syncs every reader (see above)
	c.settle(3 * time.Second)
	x := c.nodes[7].id
	c.drop = func(from, to PeerID, m *wire.Message) bool { return to == x && m.Kind == wire.KindTree }
	c.write(2, "team://a", "m1", "title", "lost on the way to n7")
	c.settle(3 * time.Second)
	c.drop = nil
	if c.converged("team://a") {
		t.Fatal("n7 got the delta all the same: the test tested nothing")
	}
	c.write(2, "team://a", "m1", "title", "overwrites it")
	c.settle(3 * time.Second)
	if !c.converged("team://a") {
		t.Fatal("n7 did not catch up with the author of the delta it had to hold")
	}
	if c.byID(x).eng.TreeStats().Repairs == 0 {
		t.Fatal("n7 asked its author for nothing")
	}
}

// A peer the driver's transport cannot reach leaves every tree at once
// (PeerUnreachable), not when the membership finds it dead: the deltas
// it no longer gets over that link come over its other links.
func TestTreeLeavesUnreachablePeer(t *testing.T) {
	const n = 12
	c := treeCluster(t, n, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 11)
	a := c.nodes[0]
	links := a.eng.TreeActive("team://a")
	if len(links) == 0 {
		t.Fatal("n0 has no link in team://a's tree")
	}
	gone := links[0]
	a.eng.PeerUnreachable(gone)
	if slices.Contains(a.eng.TreeActive("team://a"), gone) {
		t.Fatalf("%s still links %s after it was reported unreachable", a.id, gone)
	}
	if a.eng.TreeStats().Unreachable != 1 {
		t.Fatalf("unreachable counted %d times, want 1", a.eng.TreeStats().Unreachable)
	}
	a.eng.PeerUnreachable(gone) // already out: nothing to leave
	if a.eng.TreeStats().Unreachable != 1 {
		t.Fatalf("a peer out of the tree reported twice counted %d times, want 1", a.eng.TreeStats().Unreachable)
	}
	for i := range 6 {
		c.write(i%3, "team://a", fmt.Sprintf("u%d", i), "title", fmt.Sprintf("v%d", i))
		c.settle(500 * time.Millisecond)
	}
	if !c.converged("team://a") {
		t.Fatal("not converged after a link was dropped as unreachable")
	}
}

// A relayed delta the driver refuses (a clock too far behind its author's,
// a grant not here yet) is not acked to anyone, so no ack timeout retries
// it: the node asks its author for a digest sync at once, as a direct
// send's timeout would, and does not wait for anti-entropy.
func TestTreeRefusedDeltaAsksAuthor(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 6)
	c.write(2, "team://a", "w2", "title", "warm-up") // n2's first write syncs every reader (see above)
	c.settle(3 * time.Second)
	x := c.byID(c.nodes[7].id)
	refused := 0
	x.refuse = func(a Apply) bool {
		if a.Live && refused == 0 {
			refused++
			return true
		}
		return false
	}
	repairs := x.eng.TreeStats().Repairs
	c.write(2, "team://a", "m1", "title", "refused once by n7")
	c.settle(3 * time.Second)
	if refused == 0 {
		t.Fatal("n7 refused nothing: the test tested nothing")
	}
	if !c.converged("team://a") {
		t.Fatal("n7 never got the delta it refused once")
	}
	if x.eng.TreeStats().Repairs == repairs {
		t.Fatal("n7 asked the author for nothing")
	}
}

// Six nodes of three links each, several writers, no loss, anti-entropy
// an hour apart: every node gets every delta over the tree alone, and no
// tree gives up a payload. The writes start before the engines' first
// Tick: a tree made then was ticked with the engine's zero time, so what
// it received was stamped at the zero time and forgotten at the first
// Tick while its announcements were out; its peers' wants went
// unanswered and they gave up (before epidemic.Node restamped them: 10 of
// 10 seeds failed, 1 to 9 payloads given up each).
func TestTreeEveryDeltaBeforeFirstTick(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		cfg := Config{AntiEntropyInterval: time.Hour, TreeThreshold: 4}
		cfg.Tree.ActiveSize = 3
		c := newCluster(t, 6, cfg, openPolicy{}, seed)
		c.pump(20)
		for w := range 3 {
			c.write(w, "team://a", fmt.Sprintf("f%d", w), "title", "first")
			c.pump(1)
		}
		c.settle(2 * time.Second)
		for i := range 6 {
			for w := range 5 {
				c.write(w, "team://a", fmt.Sprintf("m%d-%d", i, w), "title", "v")
				c.pump(c.rng.IntN(3))
			}
		}
		c.settle(30 * time.Second)
		var st TreeStats
		for _, nd := range c.nodes {
			st.Add(nd.eng.TreeStats())
		}
		if st.Node.GaveUp > 0 || !c.converged("team://a") {
			t.Errorf("seed %d: %d payloads given up, converged %v", seed, st.Node.GaveUp, c.converged("team://a"))
		}
	}
}

// blindPolicy is a node that knows neither that the author may write nor
// that it may read: its grant has not reached the node yet.
type blindPolicy struct {
	author    PeerID
	authorRep crdt.ReplicaID
}

func (blindPolicy) ShouldHold(string) bool                 { return true }
func (p blindPolicy) PeerMayRead(peer Peer, _ string) bool { return peer.ID != p.author }
func (p blindPolicy) ReplicaMayWrite(r crdt.ReplicaID, _ string) bool {
	return r != p.authorRep
}

// A relayed delta refused because this node does not know yet that its
// author may write asks the author for a sync, though the node cannot tell
// the author may read either (the request carries a context, no content),
// as a direct delta refused so does.
func TestTreeBlindRefusalAsksAuthor(t *testing.T) {
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 6)
	author := c.nodes[2]
	c.write(2, "team://a", "w2", "title", "warm-up") // n2's first write syncs every reader
	c.settle(3 * time.Second)
	x := c.nodes[7]
	x.eng.pol = blindPolicy{author: author.id, authorRep: author.rep}
	asked := 0
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if from == x.id && to == author.id && m.Kind == wire.KindSyncRequest {
			for _, nc := range m.Contexts {
				if nc.Namespace == "team://a" {
					asked++
				}
			}
		}
		return false
	}
	c.write(2, "team://a", "m1", "title", "refused by n7")
	c.settle(3 * time.Second)
	if x.eng.TreeStats().Repairs == 0 {
		t.Fatal("n7 refused nothing of n2's over the tree: the test tested nothing")
	}
	if asked == 0 {
		t.Fatal("n7 never asked n2 for a sync of team://a")
	}
}

// The trees start no shuffles: the engine knows the readers, and each
// anti-entropy round offers every tree a few of them at random, so a
// passive view smaller than the readers keeps changing without a
// shuffle frame on the wire.
func TestTreesFreshenPassiveWithoutShuffles(t *testing.T) {
	cfg := Config{AntiEntropyInterval: time.Second,
		Tree: epidemic.Config{PassiveSize: 4, ShuffleActive: 1, ShufflePassive: 2}}
	c := treeCluster(t, 16, cfg, openPolicy{}, 5)
	shuffles := 0
	c.drop = func(_, _ PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindTree && epidemic.Kind(m.Tree.Kind) == epidemic.KindShuffle {
			shuffles++
		}
		return false
	}
	tr := c.nodes[0].eng.trees["team://a"]
	first := tr.node.Passive()
	seen := map[epidemic.PeerID]bool{}
	for range 20 {
		c.settle(time.Second)
		for _, p := range tr.node.Passive() {
			seen[p] = true
		}
	}
	if shuffles > 0 {
		t.Errorf("%d shuffle frames in 20 s: want none, the engine offers the readers", shuffles)
	}
	if len(seen) <= len(first) {
		t.Errorf("n0's passive view of team://a held %d peers over 20 anti-entropy rounds (first %v): want it refreshed with other readers", len(seen), first)
	}
}

// A node that comes to hold a namespace from a sync answer (a join) makes
// its tree then, not at its next anti-entropy round or membership change:
// until it has one it gets none of the namespace's later writes (no peer
// pushes to a node off its tree). The simulator's scale figure had a
// holder wait 8 s for its round and be the last to get every write made
// in between.
func TestTreeMadeWhenNamespaceFirstHeld(t *testing.T) {
	const ns = "team://a"
	c := newCluster(t, 16, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 3)
	late := c.byID("n15")
	c.drop = func(from, to PeerID, _ *wire.Message) bool { return from == late.id || to == late.id }
	c.pump(20)
	c.write(0, ns, "m0", "title", "first")
	c.settle(3 * time.Second)
	if late.eng.TreeStats().Trees != 0 || !late.st.Context(ns).IsEmpty() {
		t.Fatalf("set-up: n15 holds %s or its tree before it joined", ns)
	}
	c.drop = nil
	if err := late.eng.RequestSync("n0", ns); err != nil {
		t.Fatal(err)
	}
	c.settle(time.Second)
	if late.st.Context(ns).IsEmpty() {
		t.Fatal("n15 did not get team://a from n0's answer")
	}
	if late.eng.TreeStats().Trees != 1 || len(late.eng.TreeActive(ns)) == 0 {
		t.Fatalf("n15 holds team://a and has %d trees, links %v, a second after its join's answer: want its tree made then (anti-entropy is an hour away)",
			late.eng.TreeStats().Trees, late.eng.TreeActive(ns))
	}
	c.write(1, ns, "m1", "title", "after the join")
	c.settle(time.Second)
	if _, ok := late.st.Map(ns).Get("m1"); !ok {
		t.Fatal("n15 lacks a write made over the tree after it joined")
	}
}

// A push lost on its way is repaired by the trees' flushes alone, at the
// times TreesDue names, with no Tick: the announcement reaches the node
// that missed the delta once its batch is over, and its want goes out
// GraftTimeout later, without waiting for the engine's next tick.
func TestTreeFlushRepairsLostPushWithoutTick(t *testing.T) {
	c, victim := settledTreeWithVictim(t)
	// Every push to the victim is lost until it asks for the delta.
	lost, asked := 0, false
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if from == victim && m.Kind == wire.KindTree && m.Tree.Kind == uint8(epidemic.KindWant) {
			asked = true
		}
		if !asked && to == victim && m.Kind == wire.KindTree && isPayload(m) {
			lost++
			return true
		}
		return false
	}
	c.write(0, "team://a", "m1", "title", "second")
	c.pump(50)
	if lost == 0 || c.converged("team://a") {
		t.Fatalf("%d pushes to the victim lost, converged %v; want one lost and the victim without the delta", lost, c.converged("team://a"))
	}
	took, ok := c.flushTreesUntil("team://a", 100)
	if !ok {
		t.Fatalf("the lost push was not repaired by the trees' flushes (%v of flushes)", took)
	}
	cfg := c.byID(victim).eng.trees["team://a"].node.Config()
	if bound := cfg.IHaveInterval + cfg.GraftTimeout + cfg.GraftRetry; took > bound {
		t.Fatalf("repaired after %v of flushes; want within one batch and one wait (%v)", took, bound)
	}
}

// settledTreeWithVictim is a 12-node cluster, with no anti-entropy, whose
// team://a tree has carried three of n0's writes (so it has settled), and
// the node (n5) the flush tests starve of payloads.
func settledTreeWithVictim(t *testing.T) (*cluster, PeerID) {
	t.Helper()
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 8)
	for i := range 3 {
		c.write(0, "team://a", "m0", "title", fmt.Sprintf("v%d", i))
		c.settle(time.Second)
	}
	return c, c.nodes[5].id
}

// flushTreesUntil drives the cluster by the trees' flushes alone, never a
// Tick: the clock jumps to the earliest TreesDue, every node flushes, the
// frames are pumped, at most rounds times or until ns converges. It
// reports the virtual time the flushes took and whether ns converged.
func (c *cluster) flushTreesUntil(ns string, rounds int) (time.Duration, bool) {
	start := c.now
	for range rounds {
		var due time.Time
		for _, nd := range c.nodes {
			if d := nd.eng.TreesDue(); !d.IsZero() && (due.IsZero() || d.Before(due)) {
				due = d
			}
		}
		if due.IsZero() || c.converged(ns) {
			break
		}
		if due.After(c.now) {
			c.now = due
		}
		for _, nd := range c.nodes {
			nd.eng.FlushTrees(c.now)
		}
		c.pump(50)
	}
	return c.now.Sub(start), c.converged(ns)
}

// A node that every copy of a payload misses, pushed or pulled, gives it
// up after its last want; the digest sync with an announcer that repairs
// it leaves from that very flush, not at the next Tick (none comes here).
func TestTreeFlushSendsGiveUpRepairWithoutTick(t *testing.T) {
	c, victim := settledTreeWithVictim(t)
	wants, asked := 0, false
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if from == victim && m.Kind == wire.KindTree && m.Tree.Kind == uint8(epidemic.KindWant) {
			wants++
		}
		if from == victim && m.Kind == wire.KindSyncRequest {
			asked = true
		}
		return to == victim && m.Kind == wire.KindTree && isPayload(m)
	}
	c.write(0, "team://a", "m1", "title", "second")
	c.pump(50)
	took, ok := c.flushTreesUntil("team://a", 100)
	cfg := c.byID(victim).eng.trees["team://a"].node.Config()
	if !ok || !asked || wants < cfg.GraftTries {
		t.Fatalf("after %v of flushes: converged %v, the victim sent %d wants (tries %d) and a sync request %v; want every want lost, then a sync that repairs it",
			took, ok, wants, cfg.GraftTries, asked)
	}
}

// A node whose tree links are all held at its end only hears nothing over
// the tree; the next sync answer bringing the namespace has its tree ask
// the silent links, and the far ends' refusals take them out, so the
// node's next links are whole and the tree's next write reaches it.
func TestTreeSyncAnswerProbesSilentLinks(t *testing.T) {
	const ns = "team://a"
	c := treeCluster(t, 12, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 17)
	x := c.nodes[7]
	ghosts := x.eng.TreeActive(ns)
	if len(ghosts) == 0 {
		t.Fatal("n7 has no link in the tree")
	}
	for _, id := range ghosts {
		p := c.byID(id)
		pt := p.eng.trees[ns]
		pt.node.PeerFailed(epidemic.PeerID(x.id)) // gone at p's end, x never told
		p.eng.drainTree(pt, nil)
	}
	c.settle(2 * time.Second)
	relayed := x.eng.TreeStats().Relayed
	c.write(0, ns, "m1", "title", "while n7's links are one-sided")
	c.settle(time.Second)
	if x.eng.TreeStats().Relayed != relayed {
		t.Fatal("the tree still reached n7: the test tests nothing")
	}
	x.eng.askAuthor(c.nodes[0].id, ns)
	c.settle(3 * time.Second)
	links := x.eng.TreeActive(ns)
	if len(links) == 0 {
		t.Fatal("n7 has no link left after the probes")
	}
	for _, id := range links {
		if !slices.Contains(c.byID(id).eng.TreeActive(ns), x.id) {
			t.Errorf("n7 links %s, which does not link n7 (links %v, one-sided before %v)", id, links, ghosts)
		}
	}
	relayed = x.eng.TreeStats().Relayed
	c.write(1, ns, "m2", "title", "after the probes")
	c.settle(time.Second)
	if x.eng.TreeStats().Relayed == relayed {
		t.Error("the tree's write after the probes did not reach n7 over the tree")
	}
}
