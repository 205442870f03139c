package epidemic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	ok := func(c *Config) {}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		bad  bool
	}{
		{"defaults", ok, false},
		{"no self", func(c *Config) { c.Self = "" }, true},
		{"active too big", func(c *Config) { c.ActiveSize = maxView + 1 }, true},
		{"negative active", func(c *Config) { c.ActiveSize = -1 }, true},
		{"passive walk beyond active walk", func(c *Config) { c.ActiveWalk, c.PassiveWalk = 2, 3 }, true},
		{"shuffle bigger than the passive view", func(c *Config) { c.PassiveSize, c.ShuffleActive, c.ShufflePassive = 4, 2, 2 }, true},
		{"negative duration", func(c *Config) { c.GraftTimeout = -time.Second }, true},
		{"negative probe silence", func(c *Config) { c.ProbeSilence = -time.Second }, true},
		{"payloads kept longer than ids", func(c *Config) { c.PayloadTTL, c.CacheTTL = time.Hour, time.Minute }, true},
		{"negative bound", func(c *Config) { c.MaxMissing = -1 }, true},
		{"threshold off", func(c *Config) { c.Threshold = -1 }, false},
		{"recent announcements off", func(c *Config) { c.RecentAnnounce = -1 }, false},
	} {
		c := Config{Self: "a"}
		tc.edit(&c)
		_, err := New(c)
		if tc.bad != (err != nil) || err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New = %v, want an error wrapping ErrConfig: %v", tc.name, err, tc.bad)
		}
	}
	d := DefaultConfig("a")
	if d.ActiveSize != 5 || d.PassiveSize != 30 || d.GraftTimeout != 150*time.Millisecond || d.Threshold != 2 {
		t.Errorf("DefaultConfig = %+v", d)
	}
}

func TestStepRefuses(t *testing.T) {
	n, err := New(Config{Self: "a"})
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(simEpoch)
	long := make([]Announcement, 257)
	for _, tc := range []struct {
		name string
		from PeerID
		m    Message
		want error
	}{
		{"from self", "a", Message{Kind: KindIHave}, ErrFromSelf},
		{"unknown kind", "b", Message{Kind: 99}, ErrMalformed},
		{"gossip without origin", "b", Message{Kind: KindGossip, Round: 1}, ErrMalformed},
		{"gossip of round 0", "b", Message{Kind: KindGossip, Origin: "c"}, ErrMalformed},
		{"empty ihave", "b", Message{Kind: KindIHave}, ErrMalformed},
		{"ihave beyond a batch", "b", Message{Kind: KindIHave, IHave: long}, ErrMalformed},
		{"graft without origin", "b", Message{Kind: KindGraft}, ErrMalformed},
		{"prune without origin", "b", Message{Kind: KindPrune}, ErrMalformed},
		{"forward-join beyond the walk", "b", Message{Kind: KindForwardJoin, Peer: "c", TTL: 7}, ErrMalformed},
		{"shuffle without origin", "b", Message{Kind: KindShuffle, TTL: 1}, ErrMalformed},
		{"shuffle of too many peers", "b", Message{Kind: KindShuffleReply, Peers: make([]PeerID, 31)}, ErrMalformed},
		{"empty peer id", "b", Message{Kind: KindShuffleReply, Peers: []PeerID{""}}, ErrMalformed},
	} {
		if err := n.Step(tc.from, tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%s: Step = %v, want %v", tc.name, err, tc.want)
		}
	}
	if n.HasReady() || len(n.Passive()) > 0 || n.Stats().Malformed != 11 {
		t.Errorf("refused messages changed the node: ready %v, passive %v, stats %+v", n.HasReady(), n.Passive(), n.Stats())
	}
}

// TestBoundsUnderRandomInput feeds a node random messages from random
// peers (what a faulty or hostile peer could send) and checks after each
// that everything it holds stays within its bounds.
func TestBoundsUnderRandomInput(t *testing.T) {
	cfg := Config{Self: "self", ActiveSize: 3, PassiveSize: 8, ShuffleActive: 2, ShufflePassive: 2,
		IHaveMaxBatch: 4, MaxMissing: 16, MaxAnnouncers: 2, MaxTrees: 4, CacheMaxIDs: 32,
		PayloadMaxBytes: 1000, CacheTTL: time.Minute, PayloadTTL: 10 * time.Second, Seed: 3}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	peer := func() PeerID { return PeerID(rune('A' + rng.IntN(40))) }
	id := func() MsgID { var m MsgID; m[0] = byte(rng.IntN(200)); return m }
	now := simEpoch
	n.Tick(now)
	for i := range 200000 {
		m := Message{Kind: Kind(1 + rng.IntN(int(KindShuffleReply)))}
		switch m.Kind {
		case KindGossip:
			m.ID, m.Origin, m.Round, m.Payload = id(), peer(), 1+rng.IntN(9), make([]byte, rng.IntN(300))
		case KindIHave:
			for range 1 + rng.IntN(cfg.IHaveMaxBatch) {
				m.IHave = append(m.IHave, Announcement{ID: id(), Round: rng.IntN(9)})
			}
		case KindGraft, KindWant, KindPrune:
			m.Origin = peer()
			for range rng.IntN(3) {
				m.IDs = append(m.IDs, id())
			}
		case KindForwardJoin, KindShuffle:
			m.Peer, m.TTL = peer(), rng.IntN(7)
			for range rng.IntN(6) {
				m.Peers = append(m.Peers, peer())
			}
		case KindNeighbor, KindNeighborReply:
			m.Priority, m.Accept = rng.IntN(2) == 0, rng.IntN(2) == 0
		case KindShuffleReply:
			for range rng.IntN(6) {
				m.Peers = append(m.Peers, peer())
			}
		}
		if err := n.Step(peer(), m); err != nil {
			t.Fatalf("message %d %+v: %v", i, m, err)
		}
		if rng.IntN(20) == 0 {
			now = now.Add(time.Duration(rng.IntN(500)) * time.Millisecond)
			n.Tick(now)
		}
		if rng.IntN(10) == 0 {
			n.Ready()
		}
		if rng.IntN(15) == 0 {
			n.Flush(now.Add(time.Duration(rng.IntN(200)) * time.Millisecond))
		}
		checkBounds(t, n, i)
		checkDue(t, n, i)
	}
}

func checkBounds(t *testing.T, n *Node, i int) {
	t.Helper()
	c := &n.cfg
	fail := func(what string, got, bound int) {
		t.Fatalf("after message %d: %s %d, bound %d", i, what, got, bound)
	}
	switch {
	case len(n.active) > c.ActiveSize:
		fail("active view", len(n.active), c.ActiveSize)
	case len(n.passive) > c.PassiveSize:
		fail("passive view", len(n.passive), c.PassiveSize)
	case len(n.pending) > c.ActiveSize:
		fail("requests under way", len(n.pending), c.ActiveSize)
	case len(n.missing) > c.MaxMissing:
		fail("missing", len(n.missing), c.MaxMissing)
	case len(n.trees) > c.MaxTrees:
		fail("trees", len(n.trees), c.MaxTrees)
	case n.rcv.len() > c.CacheMaxIDs:
		fail("received ids", n.rcv.len(), c.CacheMaxIDs)
	case n.rcv.bytes > c.PayloadMaxBytes:
		fail("payload bytes", n.rcv.bytes, c.PayloadMaxBytes)
	case len(n.tried) > 2*c.PassiveSize:
		fail("peers tried", len(n.tried), 2*c.PassiveSize)
	}
	for _, l := range n.active {
		if len(l.lazy) >= c.IHaveMaxBatch {
			fail("announcements waiting", len(l.lazy), c.IHaveMaxBatch-1)
		}
	}
	for _, ms := range n.missing {
		if len(ms.announcers) > c.MaxAnnouncers {
			fail("announcers", len(ms.announcers), c.MaxAnnouncers)
		}
	}
	for _, tr := range n.trees {
		if len(tr.eager) > c.ActiveSize {
			fail("eager links", len(tr.eager), c.ActiveSize)
		}
	}
}

// linkedNode is node "a" ticked at simEpoch with peers in its active
// view (each asked for a place with priority), and that time.
func linkedNode(t *testing.T, peers ...PeerID) (*Node, time.Time) {
	t.Helper()
	n, err := New(Config{Self: "a"})
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(simEpoch)
	for _, p := range peers {
		if err := n.Step(p, Message{Kind: KindNeighbor, Priority: true}); err != nil {
			t.Fatal(err)
		}
	}
	return n, simEpoch
}

// checkDue fails unless Due is no later than anything owed: an
// announcement batch's end, a missing payload's deadline (a Due too late
// would leave a lost push waiting for the next Tick).
func checkDue(t *testing.T, n *Node, i int) {
	t.Helper()
	var owed time.Time
	earlier := func(d time.Time) {
		if owed.IsZero() || d.Before(owed) {
			owed = d
		}
	}
	for _, l := range n.active {
		if len(l.lazy) > 0 {
			earlier(l.lazySince.Add(n.cfg.IHaveInterval))
		}
	}
	for _, ms := range n.missing {
		earlier(ms.deadline)
	}
	if due := n.Due(); !owed.IsZero() && (due.IsZero() || due.After(owed)) {
		t.Fatalf("after message %d: Due %v, but something is owed at %v", i, due, owed)
	}
}

// TestShuffleReplyUnasked: a shuffle reply is taken only in answer to the
// node's own shuffle, so a peer cannot fill the passive view at will.
func TestShuffleReplyUnasked(t *testing.T) {
	n, err := New(Config{Self: "a", ShuffleInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(simEpoch)
	reply := Message{Kind: KindShuffleReply, Peers: []PeerID{"x", "y"}}
	if err := n.Step("b", reply); err != nil || len(n.Passive()) != 0 {
		t.Fatalf("unasked reply: Step = %v, passive %v", err, n.Passive())
	}
	n.Step("b", Message{Kind: KindJoin})
	n.Tick(simEpoch.Add(2 * time.Second)) // shuffles with b
	n.Ready()
	if err := n.Step("b", reply); err != nil || len(n.Passive()) != 2 {
		t.Fatalf("asked-for reply: Step = %v, passive %v", err, n.Passive())
	}
	if err := n.Step("c", Message{Kind: KindShuffleReply, Peers: []PeerID{"z"}}); err != nil || len(n.Passive()) != 2 {
		t.Fatalf("second reply: Step = %v, passive %v", err, n.Passive())
	}
}

// With NoShuffle a node starts no shuffle, and still answers its peers'
// shuffles.
func TestNoShuffle(t *testing.T) {
	n, err := New(Config{Self: "a", ShuffleInterval: time.Second, NoShuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(simEpoch)
	n.Step("b", Message{Kind: KindJoin})
	n.Hint("c", "d")
	kinds := map[Kind]int{}
	for s := 1; s <= 10; s++ {
		n.Tick(simEpoch.Add(time.Duration(s) * time.Second))
		for n.HasReady() {
			for _, env := range n.Ready().Messages {
				kinds[env.Msg.Kind]++
			}
		}
	}
	if kinds[KindShuffle] != 0 {
		t.Fatalf("NoShuffle: %d shuffles sent in 10 intervals (%v)", kinds[KindShuffle], kinds)
	}
	if err := n.Step("b", Message{Kind: KindShuffle, Peer: "x", TTL: 1, Peers: []PeerID{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	var replied bool
	for _, env := range n.Ready().Messages {
		replied = replied || env.Msg.Kind == KindShuffleReply && env.To == "x"
	}
	if !replied {
		t.Fatalf("NoShuffle: a peer's shuffle that ended here went unanswered")
	}
}

// A node stepped before its first Tick with a time (the replica engine
// ticks a new tree with its own time, zero until the engine's first Tick)
// keeps what it received then: the first real Tick stamps it with its
// time. Stamped at the zero time, the payload and its id were forgotten
// at that Tick (now minus zero exceeds every TTL) while the announcements
// of it were out, and the wants they brought went unanswered.
func TestReceivedBeforeFirstTickKept(t *testing.T) {
	n, err := New(Config{Self: "a"})
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(time.Time{})
	if err := n.Step("b", Message{Kind: KindNeighbor, Priority: true}); err != nil {
		t.Fatal(err)
	}
	id := MsgID{1}
	if err := n.Step("b", Message{Kind: KindGossip, ID: id, Origin: "b", Payload: []byte("p"), Round: 1}); err != nil {
		t.Fatal(err)
	}
	for n.HasReady() {
		n.Ready()
	}
	n.Tick(simEpoch)
	n.Tick(simEpoch.Add(time.Second))
	if !n.Received(id) {
		t.Fatal("a payload received before the first Tick was forgotten at it")
	}
	if err := n.Step("b", Message{Kind: KindWant, IDs: []MsgID{id}}); err != nil {
		t.Fatal(err)
	}
	var answered bool
	for n.HasReady() {
		for _, env := range n.Ready().Messages {
			answered = answered || env.Msg.Kind == KindGossip && env.Msg.ID == id && env.To == "b"
		}
	}
	if !answered {
		t.Fatal("a want for a payload received before the first Tick went unanswered")
	}
}

// A payload announced and never sent, every want unanswered, is given up
// and reported in Ready.GaveUp with its announcer, for the application's
// repair.
func TestGaveUpReported(t *testing.T) {
	n, now := linkedNode(t)
	id := MsgID{1}
	if err := n.Step("b", Message{Kind: KindIHave, IHave: []Announcement{{ID: id, Round: 1}}}); err != nil {
		t.Fatal(err)
	}
	var gave []Missed
	wants := 0
	for range 100 {
		now = now.Add(50 * time.Millisecond)
		n.Tick(now)
		for n.HasReady() {
			r := n.Ready()
			gave = append(gave, r.GaveUp...)
			for _, env := range r.Messages {
				if env.Msg.Kind == KindWant {
					wants++
				}
			}
		}
	}
	if len(gave) != 1 || gave[0].ID != id || len(gave[0].Announcers) != 1 || gave[0].Announcers[0] != "b" {
		t.Fatalf("Ready.GaveUp = %+v after %d wants; want the payload once, announced by b", gave, wants)
	}
	if wants != n.Config().GraftTries || n.Stats().GaveUp != 1 {
		t.Fatalf("%d wants, %d given up; want %d wants, then given up once", wants, n.Stats().GaveUp, n.Config().GraftTries)
	}
}

// The received ids keep their entries in blocks and name them by number:
// as the blocks forgotten go, every remembered id still finds its own
// entry, payload and askers, and every forgotten one none.
func TestReceivedFindsItsEntriesAsBlocksGo(t *testing.T) {
	c := Config{Self: "a", CacheMaxIDs: 1500, PayloadMaxBytes: 1 << 20}
	c.withDefaults()
	r := newReceived(&c)
	at := time.Unix(1_800_000_000, 0)
	idOf := func(i int) MsgID { return MsgID{byte(i), byte(i >> 8), byte(i >> 16), 1} }
	const total = 6000
	for i := range total {
		var asked []PeerID
		if i%7 == 0 {
			asked = []PeerID{PeerID(rune('a' + i%26))}
		}
		e := r.add(arrival{id: idOf(i), at: at, payload: []byte{byte(i)}, round: i, origin: "o"}, asked)
		if e == nil || e.id != idOf(i) || e.round != i {
			t.Fatalf("add %d returned %+v", i, e)
		}
	}
	if r.len() != c.CacheMaxIDs {
		t.Fatalf("%d ids remembered, want %d", r.len(), c.CacheMaxIDs)
	}
	for i := range total {
		e := r.get(idOf(i))
		kept := i >= total-c.CacheMaxIDs
		if (e != nil) != kept {
			t.Fatalf("id %d: remembered %v, want %v", i, e != nil, kept)
		}
		if !kept {
			if r.askedOf(idOf(i)) != nil {
				t.Fatalf("id %d forgotten but its askers kept", i)
			}
			continue
		}
		if p := r.payload(idOf(i)); e.id != idOf(i) || e.round != i || r.origin(e) != "o" || len(p) != 1 || p[0] != byte(i) {
			t.Fatalf("id %d found entry %+v", i, e)
		}
		if got := r.askedOf(idOf(i)); (i%7 == 0) != (len(got) == 1) {
			t.Fatalf("id %d: askers %v", i, got)
		}
	}
}

// Ids that share their first 8 bytes (the map's key) are each found, as
// they come and go, and none is left behind in the map of clashes.
func TestReceivedIDsSharingTheirFirstBytes(t *testing.T) {
	c := Config{Self: "a", CacheMaxIDs: 100, PayloadMaxBytes: 1 << 20}
	c.withDefaults()
	r := newReceived(&c)
	at := time.Unix(1_800_000_000, 0)
	idOf := func(i int) MsgID { return MsgID{byte(i % 3), 8: byte(i), 9: byte(i >> 8), 15: 1} } // three prefixes
	const total = 1000
	for i := range total {
		if r.get(idOf(i)) != nil {
			t.Fatalf("id %d found before it came", i)
		}
		r.add(arrival{id: idOf(i), at: at, round: i}, nil)
		for j := max(0, i-c.CacheMaxIDs-5); j <= i; j++ {
			e := r.get(idOf(j))
			if kept := j > i-c.CacheMaxIDs; (e != nil) != kept || kept && (e.id != idOf(j) || e.round != j) {
				t.Fatalf("after %d: id %d found %+v, want it remembered %v", i, j, e, kept)
			}
		}
	}
	if len(r.m)+len(r.clash) != c.CacheMaxIDs {
		t.Fatalf("%d ids keyed, %d clashing; %d remembered", len(r.m), len(r.clash), c.CacheMaxIDs)
	}
}

// A node whose passive peers all refused a plain request since the last
// shuffle, and whose one link then fails, asks one of them again at once,
// with priority (which no peer refuses): it does not stay alone, its
// broadcasts reaching no one, until the next shuffle.
func TestLoneNodeAsksTriedPeersAgain(t *testing.T) {
	n, err := New(Config{Self: "a", ActiveSize: 2, ShuffleInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n.Tick(simEpoch)
	if err := n.Step("x", Message{Kind: KindNeighbor, Priority: true}); err != nil {
		t.Fatal(err)
	}
	n.Hint("b", "c", "d")
	// a, one link short, asks the passive peers one by one without
	// priority; each is full and says no.
	refused := 0
	for n.HasReady() {
		for _, env := range n.Ready().Messages {
			if env.Msg.Kind != KindNeighbor {
				continue
			}
			if env.Msg.Priority {
				t.Fatalf("set-up: a one link short asked %s with priority", env.To)
			}
			refused++
			if err := n.Step(env.To, Message{Kind: KindNeighborReply, Accept: false}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if refused != 3 || len(n.pending) != 0 {
		t.Fatalf("set-up: %d refusals, pending %v", refused, n.pending)
	}
	n.PeerFailed("x")
	var again []PeerID
	for n.HasReady() {
		for _, env := range n.Ready().Messages {
			if env.Msg.Kind == KindNeighbor && env.Msg.Priority {
				again = append(again, env.To)
			}
		}
	}
	if len(again) == 0 {
		t.Fatalf("alone after its link failed, a asked no one (passive %v, tried %v)", n.Passive(), n.tried)
	}
}

// The received ids name their peers by number in a table rebuilt from the
// ids remembered: a stream of ever new senders and origins leaves each
// remembered entry naming its own, and the table bounded.
func TestReceivedPeerTableStaysBounded(t *testing.T) {
	c := Config{Self: "a", CacheMaxIDs: 300, PayloadMaxBytes: 1 << 20}
	c.withDefaults()
	r := newReceived(&c)
	at := time.Unix(1_800_000_000, 0)
	idOf := func(i int) MsgID { return MsgID{byte(i), byte(i >> 8), byte(i >> 16), 2} }
	fromOf := func(i int) PeerID { return PeerID(fmt.Sprintf("from-%d", i%997)) }
	originOf := func(i int) PeerID { return PeerID(fmt.Sprintf("origin-%d", i)) }
	const total = 20000
	most := 0
	for i := range total {
		e := r.add(arrival{id: idOf(i), at: at, round: i, from: fromOf(i), origin: originOf(i)}, nil)
		if i%5 == 0 { // the tree optimisation moves an entry's sender
			r.setFrom(e, fromOf(i+1))
		}
		most = max(most, len(r.peers))
	}
	if bound := 2*2*c.CacheMaxIDs + 2; most > bound {
		t.Fatalf("the table of peers reached %d names for %d ids remembered (bound %d)", most, c.CacheMaxIDs, bound)
	}
	for i := total - c.CacheMaxIDs; i < total; i++ {
		e := r.get(idOf(i))
		want := fromOf(i)
		if i%5 == 0 {
			want = fromOf(i + 1)
		}
		if e == nil || r.origin(e) != originOf(i) || r.from(e) != want {
			t.Fatalf("id %d: entry %+v names from %q origin %q, want %q and %q", i, e, r.from(e), r.origin(e), want, originOf(i))
		}
	}
}

// Payloads are dropped past PayloadTTL while their ids stay, and their
// slots go with them.
func TestReceivedDropsPayloadsBeforeIDs(t *testing.T) {
	c := Config{Self: "a", PayloadTTL: 10 * time.Second, CacheTTL: time.Minute}
	c.withDefaults()
	r := newReceived(&c)
	start := time.Unix(1_800_000_000, 0)
	idOf := func(i int) MsgID { return MsgID{byte(i), byte(i >> 8), 3} }
	const total = 600 // one a second
	for i := range total {
		r.add(arrival{id: idOf(i), at: start.Add(time.Duration(i) * time.Second), payload: []byte{byte(i)}}, nil)
		if slots := blockLen * len(r.pays); slots > int(c.PayloadTTL/time.Second)+2*blockLen {
			t.Fatalf("after %d s: %d payload slots for a %v window", i, slots, c.PayloadTTL)
		}
	}
	for i := range total {
		age := time.Duration(total-1-i) * time.Second
		e, p := r.get(idOf(i)), r.payload(idOf(i))
		if (e != nil) != (age < c.CacheTTL) || (p != nil) != (age < c.PayloadTTL) {
			t.Fatalf("id %d, %v old: remembered %v, payload %v", i, age, e != nil, p)
		}
		if p != nil && p[0] != byte(i) {
			t.Fatalf("id %d: payload %v", i, p)
		}
	}
	if want := int(c.PayloadTTL / time.Second); r.bytes != want {
		t.Fatalf("%d payload bytes held, want %d", r.bytes, want)
	}
}

// Due names the time the next announcement or want is owed, and Flush
// at that time sends it, not a moment before: a driver ticking the views
// every 250ms still announces IHaveInterval after a payload came and asks
// for an announced one GraftTimeout after its announcement.
func TestDueAndFlush(t *testing.T) {
	n, now := linkedNode(t, "b", "c")
	if !n.Due().IsZero() {
		t.Fatalf("Due = %v with nothing waiting; want zero", n.Due())
	}
	sent := func() (kinds []Kind) {
		for n.HasReady() {
			for _, env := range n.Ready().Messages {
				kinds = append(kinds, env.Msg.Kind)
			}
		}
		return kinds
	}
	sent()
	// b pushes a payload: c is owed an announcement of it (c may be
	// eager in b's tree too; prune it so the payload is announced).
	if err := n.Step("b", Message{Kind: KindGossip, ID: MsgID{1}, Origin: "b", Payload: []byte("p"), Round: 1}); err != nil {
		t.Fatal(err)
	}
	if err := n.Step("c", Message{Kind: KindPrune, Origin: "b"}); err != nil {
		t.Fatal(err)
	}
	sent()
	if err := n.Step("b", Message{Kind: KindGossip, ID: MsgID{2}, Origin: "b", Payload: []byte("q"), Round: 1}); err != nil {
		t.Fatal(err)
	}
	if got := sent(); slices.Contains(got, KindIHave) {
		t.Fatalf("sent %v at once; the announcement waits for its batch", got)
	}
	iv := n.Config().IHaveInterval
	if due := n.Due(); !due.Equal(now.Add(iv)) {
		t.Fatalf("Due = %v; want the batch's end, %v", due.Sub(now), iv)
	}
	n.Flush(now.Add(iv - time.Millisecond))
	if got := sent(); slices.Contains(got, KindIHave) {
		t.Fatalf("Flush before Due sent %v", got)
	}
	n.Flush(now.Add(iv))
	if got := sent(); !slices.Contains(got, KindIHave) {
		t.Fatalf("Flush at Due sent %v; want the IHave", got)
	}
	if !n.Due().IsZero() {
		t.Fatalf("Due = %v after the flush; want zero", n.Due())
	}
	// c announces a payload this node lacks: the want is owed
	// GraftTimeout later.
	at := now.Add(iv)
	if err := n.Step("c", Message{Kind: KindIHave, IHave: []Announcement{{ID: MsgID{3}, Round: 2}}}); err != nil {
		t.Fatal(err)
	}
	if due := n.Due(); !due.Equal(at.Add(n.Config().GraftTimeout)) {
		t.Fatalf("Due = %v after an announcement; want GraftTimeout (%v) on", due.Sub(at), n.Config().GraftTimeout)
	}
	n.Flush(n.Due())
	if got := sent(); !slices.Contains(got, KindWant) {
		t.Fatalf("Flush at Due sent %v; want the want", got)
	}
}

// Probe asks only the links silent for ProbeSilence, once per silence; a
// refusal from a probed peer (it does not hold the link) takes the link
// out and asks a passive peer in its place, an acceptance keeps it.
func TestProbeDropsLinksTheFarEndLacks(t *testing.T) {
	n, start := linkedNode(t, "b", "c", "e")
	n.Hint("d")
	drain := func() (probed []PeerID) {
		for n.HasReady() {
			for _, env := range n.Ready().Messages {
				if env.Msg.Kind == KindNeighbor && !env.Msg.Priority {
					probed = append(probed, env.To)
				}
			}
		}
		return probed
	}
	drain()
	n.Probe()
	if got := drain(); len(got) != 0 {
		t.Fatalf("links just made were probed: %v", got)
	}
	n.Tick(start.Add(n.cfg.ProbeSilence))
	drain()
	if err := n.Step("c", Message{Kind: KindPrune, Origin: "x"}); err != nil {
		t.Fatal(err)
	}
	n.Probe()
	got := drain()
	slices.Sort(got)
	if !slices.Equal(got, []PeerID{"b", "e"}) {
		t.Fatalf("probed %v, want the two links silent for ProbeSilence [b e]", got)
	}
	n.Probe()
	if again := drain(); len(again) != 0 {
		t.Fatalf("probed %v again within ProbeSilence", again)
	}
	if err := n.Step("e", Message{Kind: KindNeighborReply, Accept: true}); err != nil {
		t.Fatal(err)
	}
	if err := n.Step("b", Message{Kind: KindNeighborReply, Accept: false}); err != nil {
		t.Fatal(err)
	}
	if active := n.Active(); slices.Contains(active, "b") || !slices.Contains(active, "e") || !slices.Contains(active, "c") {
		t.Fatalf("active %v after b refused its probe and e accepted: want c and e, not b", active)
	}
	if !n.requested("d") {
		t.Fatalf("the link b refused was not replaced: no request to the passive peer d (pending %v)", n.pending)
	}
}
