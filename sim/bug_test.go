package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

type allowAll struct{}

func (allowAll) ShouldHold(string) bool                      { return true }
func (allowAll) PeerMayRead(replica.Peer, string) bool       { return true }
func (allowAll) ReplicaMayWrite(crdt.ReplicaID, string) bool { return true }

// TestLostRemoveRepaired is the minimal reproducer of a bug this simulator
// found (doc.go): a delta that removes a set element is lost, a later edit
// of the same record (which overwrites updated_at, so its context covers
// the lost delta's dot) arrives, and digest sync must still drop the element.
func TestLostRemoveRepaired(t *testing.T) {
	const ns = "team://t"
	now := epoch
	codec := wire.NewCodec(0)
	type nd struct {
		id    replica.PeerID
		rep   crdt.ReplicaID
		key   acl.Identity
		st    *replica.MemState
		eng   *replica.Engine
		clock *crdt.Clock
	}
	mk := func(id string) *nd {
		key, err := acl.IdentityFromSeed([]byte(fmt.Sprintf("%-32s", id)))
		if err != nil {
			t.Fatal(err)
		}
		n := &nd{id: replica.PeerID(id), rep: key.ReplicaID(), key: key, st: replica.NewMemState(), clock: crdt.NewClock(0)}
		n.eng = replica.New(replica.Config{Self: n.id, Replica: n.rep, Signer: crdt.Signer{Key: key.Public, Sign: key.Sign},
			AntiEntropyInterval: time.Second}, n.st, allowAll{})
		return n
	}
	a, b := mk("a"), mk("b")
	peers := []replica.Peer{{ID: a.id, Key: a.key.Public, Replica: a.rep}, {ID: b.id, Key: b.key.Public, Replica: b.rep}}
	nodes := map[replica.PeerID]*nd{a.id: a, b.id: b}
	drop := false
	var pump func()
	pump = func() {
		for moved := true; moved; {
			moved = false
			for _, n := range []*nd{a, b} {
				for n.eng.HasReady() {
					rd := n.eng.Ready()
					for _, ap := range rd.Apply {
						n.clock.Observe(ap.Delta.MaxTimestamp(), now)
						n.st.Apply(ap)
					}
					n.eng.Advance(nil)
					for _, env := range rd.Messages {
						f, err := codec.Encode(env.Msg)
						if err != nil {
							t.Fatal(err)
						}
						if drop {
							continue
						}
						m, _ := codec.Decode(f)
						_ = nodes[env.To].eng.Step(n.id, m)
						moved = true
					}
				}
			}
		}
	}
	a.eng.SetPeers(peers)
	b.eng.SetPeers(peers)
	pump()
	edit := func(n *nd, f func(e *crdt.Edit, ts crdt.Timestamp)) {
		now = now.Add(time.Second)
		m := n.st.Map(ns)
		e, err := m.Edit(n.rep, "m1", crdt.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		ts := n.clock.Now(now)
		f(e, ts)
		if err := schema.Touch(e, ts, now); err != nil {
			t.Fatal(err)
		}
		d := e.Delta()
		d.Seal(ns, crdt.Signer{Key: n.key.Public, Sign: n.key.Sign})
		m.Join(d)
		n.eng.LocalDelta(ns, d)
		pump()
	}
	edit(a, func(e *crdt.Edit, ts crdt.Timestamp) {
		_ = e.Set(ts, schema.FieldTitle, []byte("t"))
		_ = e.Add(schema.SetTags, "x")
	})
	drop = true // b's remove is lost
	edit(b, func(e *crdt.Edit, _ crdt.Timestamp) { e.Remove(schema.SetTags, "x") })
	drop = false
	edit(b, func(e *crdt.Edit, ts crdt.Timestamp) { _ = e.Set(ts, schema.FieldContent, []byte("c")) })
	for range 30 { // plenty of anti-entropy and explicit catch-up
		now = now.Add(2 * time.Second)
		a.eng.Tick(now)
		b.eng.Tick(now)
		_ = a.eng.RequestSync(b.id, ns)
		pump()
	}
	ra, _ := a.st.Map(ns).Get("m1")
	rb, _ := b.st.Map(ns).Get("m1")
	if ra.HasElement(schema.SetTags, "x") != rb.HasElement(schema.SetTags, "x") || a.st.Map(ns).Digest() != b.st.Map(ns).Digest() {
		t.Fatalf("diverged for good: a holds tag x=%v, b holds x=%v; contexts equal=%v",
			ra.HasElement(schema.SetTags, "x"), rb.HasElement(schema.SetTags, "x"), a.st.Map(ns).Context().Equal(b.st.Map(ns).Context()))
	}
}
