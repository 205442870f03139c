package cluster

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// onDemandNet is n stepped nodes whose bindings travel on demand (or, with
// flood, to every member), counting the bindings frames they send.
func onDemandNet(t *testing.T, n int, seed uint64, flood bool) (*steppedNet, *int) {
	at := 2
	if flood {
		at = -1
	}
	net := newSteppedNet(t, n, seed, func(_ int, c *Config) { c.BindingsOnDemandAt = at })
	frames := new(int)
	codec := wire.NewCodec(0)
	net.observe = func(_, _ int, frame []byte) {
		if m, err := codec.Decode(frame); err == nil && m.Kind == wire.KindBindings {
			*frames++
		}
	}
	net.join()
	return net, frames
}

// untilAllHave ticks net until every node holds the memory id.
func untilAllHave(t *testing.T, net *steppedNet, id string) {
	t.Helper()
	for tick := 0; ; tick++ {
		all := true
		for _, nd := range net.nodes {
			all = all && nd.has(id)
		}
		if all {
			return
		}
		if tick == 300 {
			t.Fatalf("memory %s never reached every node", id)
		}
		net.tick()
	}
}

// held counts the bindings nd's directory holds.
func held(nd *steppedNode) int {
	nd.st.knownMu.RLock()
	defer nd.st.knownMu.RUnlock()
	return len(nd.st.bindingEncs)
}

// On demand, one writer's save to a project reaches every member, and each
// member learns the writer's binding alone (pulled when the save was
// refused), not every member's: where flooding sent each claim to every
// peer, the frames are a few per member.
func TestOnDemandBindingsGoOnlyWhereUsed(t *testing.T) {
	const n = 8
	for _, flood := range []bool{false, true} {
		t.Run(fmt.Sprintf("flood=%v", flood), func(t *testing.T) {
			net, frames := onDemandNet(t, n, 11, flood)
			untilAllHave(t, net, net.save(net.nodes[0], "project://p", "one writer's note"))
			for _, nd := range net.nodes[1:] {
				got := held(nd)
				switch {
				case flood && got != n:
					t.Fatalf("flooding: node %d holds %d bindings, want all %d", nd.i, got, n)
				case !flood && got != 2:
					t.Fatalf("on demand: node %d holds %d bindings, want its own and the writer's", nd.i, got)
				}
			}
			t.Logf("%d bindings frames among %d nodes", *frames, n)
			if !flood && *frames > 3*n {
				t.Fatalf("on demand: %d bindings frames among %d nodes, want a pull and its answer a node", *frames, n)
			}
			if flood && *frames < n*(n-1) {
				t.Fatalf("flooding: %d bindings frames, want each claim to each peer (%d)", *frames, n*(n-1))
			}
		})
	}
}

// On demand, a member that advertises an agent that may read a team
// namespace held here is pulled its bindings, and once verified they make
// it a reader: a save to the team reaches a member that writes nothing
// and was never refused anything.
func TestOnDemandFindsTheReadersOfATeam(t *testing.T) {
	net, _ := onDemandNet(t, 5, 12, false)
	untilAllHave(t, net, net.save(net.nodes[0], "team://core", "for every reader"))
	if got := agentsOn(net.nodes[0].st, net.nodes[3].id.NodeID()); got != "agent://n3" {
		t.Fatalf("node 0 knows node 3 hosts %q, want agent://n3 from its verified binding", got)
	}
}

// firstClaimsOK admits, on demand, a principal's first binding only when
// the key its chain ends on is that of the one member advertising it.
func TestOnDemandFirstClaimNeedsItsSoleAdvertiser(t *testing.T) {
	net, _ := onDemandNet(t, 4, 13, false)
	l := net.nodes[0].st.loop
	honest, liar := net.nodes[1].id, net.nodes[2].id
	victim := namespace.MustParse("agent://victim")
	claim := func(host acl.Identity) acl.Binding {
		b, err := acl.NewBinding(host, victim, crdt.Timestamp(1))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	handover := func(from acl.Identity, to ed25519.PublicKey) acl.Binding {
		b, err := acl.NewHandover(from, victim, to, crdt.Timestamp(2))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	advertise := func(ads map[int][]string) {
		ms := net.members()
		for i := range ms {
			ms[i].Agents = append(ms[i].Agents, ads[i]...)
		}
		l.setMembers(ms)
	}
	cases := []struct {
		name string
		ads  map[int][]string
		bs   []acl.Binding
		keep int
	}{
		{"its host alone advertises it", map[int][]string{1: {"agent://victim"}}, []acl.Binding{claim(honest)}, 1},
		{"nobody advertises it", nil, []acl.Binding{claim(honest)}, 0},
		{"another member advertises it", map[int][]string{2: {"agent://victim"}}, []acl.Binding{claim(honest)}, 0},
		{"two members advertise it", map[int][]string{1: {"agent://victim"}, 2: {"agent://victim"}}, []acl.Binding{claim(liar)}, 0},
		{"handed over to its advertiser", map[int][]string{2: {"agent://victim"}}, []acl.Binding{claim(honest), handover(honest, liar.Public)}, 2},
		{"handed over away from its advertiser", map[int][]string{1: {"agent://victim"}}, []acl.Binding{claim(honest), handover(honest, liar.Public)}, 0},
		{"a hand-over with no claim", map[int][]string{2: {"agent://victim"}}, []acl.Binding{handover(honest, liar.Public)}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			advertise(c.ads)
			if !l.onDemand() {
				t.Fatal("not on demand")
			}
			l.knownMu.Lock()
			kept, dropped := l.firstClaimsOK(c.bs)
			l.knownMu.Unlock()
			if len(kept) != c.keep || dropped != len(c.bs)-c.keep {
				t.Fatalf("kept %d dropped %d of %d, want %d kept", len(kept), dropped, len(c.bs), c.keep)
			}
		})
	}
	// Once bound, a principal's bindings are the directory's to judge:
	// the rule is for first claims only.
	advertise(map[int][]string{1: {"agent://victim"}})
	net.nodes[0].st.admitBindings("", [][]byte{claim(honest).Encode()})
	if k, ok := l.keyOf(victim); !ok || !k.Equal(honest.Public) {
		t.Fatal("the sole advertiser's claim was not admitted")
	}
	advertise(map[int][]string{1: {"agent://victim"}, 2: {"agent://victim"}})
	l.knownMu.Lock()
	kept, _ := l.firstClaimsOK([]acl.Binding{handover(honest, liar.Public)})
	l.knownMu.Unlock()
	if len(kept) != 1 {
		t.Fatal("a bound principal's hand-over was held to the first-claim rule")
	}
}

// A refusal that named the replica whose binding it lacked is synced
// again when that binding comes, not at every binding admitted, and is
// forgotten after BindingsInterval if it never does (anti-entropy repairs
// it then); one that named none is synced again at the next.
func TestRefusalWaitsForTheBindingItLacked(t *testing.T) {
	net := newSteppedNet(t, 2, 14)
	net.join()
	l := net.nodes[0].st.loop
	peer := net.nodes[1].st.self
	lacked, other := crdt.ReplicaID(41), crdt.ReplicaID(42)
	refuse := func(ns string, reps ...crdt.ReplicaID) {
		l.noteRefused(replica.Rejection{From: peer, Namespace: ns, Err: replica.ErrNotAllowed}, reps)
	}
	waiting := func(ns string) bool { _, ok := l.refusedFrom[peer][ns]; return ok }
	refuse("team://a", lacked)
	refuse("team://b")
	l.resyncRefused(map[crdt.ReplicaID]bool{other: true})
	if !waiting("team://a") || waiting("team://b") {
		t.Fatalf("after another replica's binding: a waiting %v (want true), b waiting %v (want false)", waiting("team://a"), waiting("team://b"))
	}
	l.resyncRefused(map[crdt.ReplicaID]bool{lacked: true})
	if waiting("team://a") || l.refusedN != 0 {
		t.Fatalf("the binding it lacked came and the refusal still waits (%d remembered)", l.refusedN)
	}
	refuse("team://a", lacked)
	net.clock.Step(BindingsInterval)
	l.resyncRefused(map[crdt.ReplicaID]bool{other: true})
	if waiting("team://a") || l.refusedN != 0 {
		t.Fatal("a refusal whose binding never came is remembered past BindingsInterval")
	}
}

// The refusals remembered are bounded (maxRefused), and a full map of
// refusals whose wait is over makes room: a refusal noted once no binding
// came for BindingsInterval is remembered, where it was dropped unnoted.
func TestStaleRefusalsMakeRoom(t *testing.T) {
	net := newSteppedNet(t, 2, 15)
	net.join()
	l := net.nodes[0].st.loop
	peer := net.nodes[1].st.self
	refuse := func(ns string) {
		l.noteRefused(replica.Rejection{From: peer, Namespace: ns, Err: replica.ErrNotAllowed}, []crdt.ReplicaID{41})
	}
	for i := range maxRefused + 10 {
		refuse(fmt.Sprintf("team://t%d", i))
	}
	if l.refusedN != maxRefused {
		t.Fatalf("%d refusals remembered, want the bound %d", l.refusedN, maxRefused)
	}
	refuse("team://fresh")
	if _, ok := l.refusedFrom[peer]["team://fresh"]; ok {
		t.Fatal("a refusal past the bound was remembered while the others still wait")
	}
	net.clock.Step(BindingsInterval)
	refuse("team://fresh")
	if _, ok := l.refusedFrom[peer]["team://fresh"]; !ok || l.refusedN != 1 {
		t.Fatalf("after BindingsInterval without a binding: fresh remembered %v, %d remembered; want true, 1", ok, l.refusedN)
	}
}
