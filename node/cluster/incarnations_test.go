package cluster

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/sync/replica"
)

func sightingAt(inc uint64, addr string) Sighting {
	return Sighting{Advert: Advert{NodeID: "n1", Addr: addr, Incarnation: inc}, State: StateAlive}
}

func TestChooseIncarnation(t *testing.T) {
	old, restarted, later := sightingAt(1, "a:1"), sightingAt(2, "a:2"), sightingAt(3, "a:3")
	impostor := sightingAt(9, "evil:9")
	type proof = map[candidate]bool
	cases := []struct {
		name    string
		alive   []Sighting
		cur     *Sighting
		proved  proof
		pick    Sighting
		toProve []Sighting
	}{
		{"a node seen once: no proof asked", []Sighting{old}, nil, nil, old, nil},
		{"the one addressed stays", []Sighting{old}, &old, nil, old, nil},
		{"a restart stays unaddressed until proved", []Sighting{restarted, old}, &old, nil, old, []Sighting{restarted}},
		{"a proved restart is addressed", []Sighting{old, restarted}, &old, proof{candidateOf(restarted): true}, restarted, nil},
		{"the old incarnation gone, the new one is all there is", []Sighting{restarted}, &old, nil, restarted, nil},
		{"an impostor never proved: the live node stays", []Sighting{old, impostor}, &old, nil, old, []Sighting{impostor}},
		{"two restarts: the newest proved is addressed, a newer one proved next",
			[]Sighting{old, restarted, later}, &old, proof{candidateOf(restarted): true}, restarted, []Sighting{later}},
		{"a fresh node with two unproved: the newest for now, both proved",
			[]Sighting{old, impostor}, nil, nil, impostor, []Sighting{impostor, old}},
		{"a fresh node: the proved one wins over a newer unproved",
			[]Sighting{old, impostor}, nil, proof{candidateOf(old): true}, old, []Sighting{impostor}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var alive []*Sighting
			for i := range tc.alive {
				alive = append(alive, &tc.alive[i])
			}
			pick, prove := choose(alive, tc.cur, func(c candidate) bool { return tc.proved[c] })
			if candidateOf(*pick) != candidateOf(tc.pick) {
				t.Errorf("pick %+v, want %+v", candidateOf(*pick), candidateOf(tc.pick))
			}
			var got, want []candidate
			for _, s := range prove {
				got = append(got, candidateOf(s))
			}
			for _, s := range tc.toProve {
				want = append(want, candidateOf(s))
			}
			if !slices.Equal(got, want) {
				t.Errorf("to prove %+v, want %+v", got, want)
			}
		})
	}
}

// proofDriver is a loop driver that records what the loop opens and asks
// to prove; its proofs finish when the test says.
type proofDriver struct {
	opened []string // addresses, in order
	outs   map[string]*recOutlet
	asked  []candidate
}

func (d *proofDriver) open(_ replica.PeerID, addr string, _ ed25519.PublicKey) outlet {
	d.opened = append(d.opened, addr)
	o := &recOutlet{}
	d.outs[addr] = o
	return o
}

func (d *proofDriver) members() []Sighting { return nil }

func (d *proofDriver) prove(c candidate, _ string, _ ed25519.PublicKey) bool {
	d.asked = append(d.asked, c)
	return false
}

type recOutlet struct {
	frames int
	closed bool
}

func (o *recOutlet) push([]byte) bool { o.frames++; return true }
func (o *recOutlet) close()           { o.closed = true }

func newProofLoop(t *testing.T) (*loop, *proofDriver) {
	t.Helper()
	id := testIdentity(t, 0)
	agent := namespace.MustParse("agent://n0")
	clock := newStepClock()
	svc, err := memory.Open(memory.Config{Agent: agent, Replica: id.ReplicaID(), Authorizer: sharedOK{}, Identity: id,
		Now: clock.Now, Rand: rand.NewChaCha8([32]byte{}), KV: store.NewMemKV()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	drv := &proofDriver{outs: map[string]*recOutlet{}}
	l, err := newLoop(Config{Service: svc, Identity: id, Clock: clock}, drv)
	if err != nil {
		t.Fatal(err)
	}
	return l, drv
}

func testIdentity(t *testing.T, i int) acl.Identity {
	t.Helper()
	var seed [32]byte
	seed[0] = byte(i + 1)
	id, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A peer restarted at a new address, its old incarnation still listed
// alive: the loop keeps sending to the old address until the new one has
// proved the key, then moves there, tells it the bindings as to a node that
// joins, and has the engine start the peer over. A proof that fails is
// asked again on the next tick; one that never succeeds (an impostor)
// leaves the peer where it was.
func TestRestartedPeerAddressedOnceProved(t *testing.T) {
	l, drv := newProofLoop(t)
	peer := testIdentity(t, 1)
	at := func(inc uint64, addr string) Sighting {
		return Sighting{Advert: Advert{NodeID: peer.NodeID(), PublicKey: peer.Public, Addr: addr, Incarnation: inc}, State: StateAlive}
	}
	old, restarted := at(1, "q:old"), at(2, "q:new")
	self := Sighting{Advert: l.advert("q:self"), State: StateAlive}
	engineInc := func() uint64 {
		ps := l.eng.Peers()
		if len(ps) != 1 {
			t.Fatalf("engine peers %+v, want one", ps)
		}
		return ps[0].Incarnation
	}

	l.setMembers([]Sighting{self, old})
	if !slices.Equal(drv.opened, []string{"q:old"}) || len(drv.asked) != 0 || engineInc() != 1 {
		t.Fatalf("first sighting: opened %v, proofs asked %v", drv.opened, drv.asked)
	}
	l.setMembers([]Sighting{self, old, restarted})
	if !slices.Equal(drv.opened, []string{"q:old"}) || engineInc() != 1 {
		t.Fatalf("before the proof: opened %v, engine at incarnation %d", drv.opened, engineInc())
	}
	if !slices.Equal(drv.asked, []candidate{candidateOf(restarted)}) {
		t.Fatalf("proofs asked %v, want the restarted incarnation", drv.asked)
	}
	l.setMembers([]Sighting{self, old, restarted}) // no second proof while one runs
	if len(drv.asked) != 1 {
		t.Fatalf("proofs asked %v, want one", drv.asked)
	}

	l.proofDone(candidateOf(restarted), false) // say, the dial timed out
	if !slices.Equal(drv.opened, []string{"q:old"}) {
		t.Fatalf("moved on a failed proof: opened %v", drv.opened)
	}
	l.tick()
	if len(drv.asked) != 2 {
		t.Fatalf("a failed proof is not asked again on the next tick: %v", drv.asked)
	}

	l.proofDone(candidateOf(restarted), true)
	if !slices.Equal(drv.opened, []string{"q:old", "q:new"}) || !drv.outs["q:old"].closed {
		t.Fatalf("after the proof: opened %v, old outlet closed %v", drv.opened, drv.outs["q:old"].closed)
	}
	if engineInc() != 2 {
		t.Fatalf("engine at incarnation %d, want 2", engineInc())
	}
	if drv.outs["q:new"].frames == 0 {
		t.Fatal("nothing sent to the restarted incarnation (its bindings, as to a joiner)")
	}
	// The old incarnation found dead later changes nothing.
	dead := old
	dead.State = StateDead
	l.setMembers([]Sighting{self, dead, restarted})
	if len(drv.opened) != 2 || engineInc() != 2 {
		t.Fatalf("old incarnation's death moved the peer: opened %v", drv.opened)
	}

	// An impostor announcing the key at its own address never proves it.
	impostor := at(9, "q:evil")
	l.setMembers([]Sighting{self, restarted, impostor})
	for range 3 {
		l.proofDone(candidateOf(impostor), false)
		l.tick()
	}
	if len(drv.opened) != 2 || engineInc() != 2 {
		t.Fatalf("an unproved announcement moved the peer: opened %v, incarnation %d", drv.opened, engineInc())
	}
	if got := fmt.Sprint(drv.asked[len(drv.asked)-1]); got != fmt.Sprint(candidateOf(impostor)) {
		t.Fatalf("last proof asked %s, want the impostor's", got)
	}
}
