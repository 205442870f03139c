package replica

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// A sync answer split in batches must not leave the requester past a
// removal without the removed dot: n1 gets the batch carrying m1 after
// n0 removed a tag, loses the batch that follows, and then answers n2,
// which still holds the tag. Once every sync has run, every node must
// have dropped the tag; a node left holding it with the same context as
// the others is never repaired (found by the simulator at 100 nodes).
func TestSplitSyncAnswerCarriesRemovals(t *testing.T) {
	c, ns := splitAnswerCluster(t)
	n0, n1, n2 := c.nodes[0], c.nodes[1], c.nodes[2]

	// n1 asks n0 for a sync: the batch with m1 arrives, those after it
	// (m2's, and the last, which claims the removed dot) are lost.
	c.drop = func(from, to PeerID, msg *wire.Message) bool {
		if from != n0.id || to != n1.id || msg.Kind != wire.KindSyncReply {
			return from == n0.id // n0 stays cut off from n2
		}
		for _, d := range msg.Deltas {
			dm, err := crdt.DecodeMap(d.Delta, crdt.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if dm.Entry("m1") != nil {
				return false
			}
		}
		return len(msg.Deltas) > 0
	}
	if err := n1.eng.RequestSync(n0.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	if r, _ := n1.st.Map(ns).Get("m1"); r == nil || r.HasElement("tags", "auth") {
		t.Fatal("the scenario did not happen: n1 should hold m1 without the tag")
	}
	// n2, which still holds the tag, syncs with n1.
	c.drop = func(from, _ PeerID, _ *wire.Message) bool { return from == n0.id }
	if err := n2.eng.RequestSync(n1.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)

	// Everyone heals and syncs with everyone.
	c.drop = nil
	syncAllDropsTheTag(t, c, ns)
}

// Like TestSplitSyncAnswerCarriesRemovals, but no sync message is lost:
// n1 asks n0 and n2 at once, and n2's answer (still holding the tag) lands
// between n0's batch carrying m1 and n0's last batch (claiming the removed
// dot). Every message of the exchange is delivered.
func TestSplitSyncAnswerInterleaved(t *testing.T) {
	c, ns := splitAnswerCluster(t)
	n0, n1, n2 := c.nodes[0], c.nodes[1], c.nodes[2]

	// Healed. n1 asks n0 and n2 at once; n0's batches after the one
	// carrying m1 are delayed (not lost) until n2's answer is in.
	var late []envelopeFrom
	c.drop = func(from, to PeerID, msg *wire.Message) bool {
		if from != n0.id || to != n1.id || msg.Kind != wire.KindSyncReply || len(msg.Deltas) == 0 {
			return false
		}
		for _, d := range msg.Deltas {
			dm, err := crdt.DecodeMap(d.Delta, crdt.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if dm.Entry("m1") != nil {
				return false
			}
		}
		f, err := c.codec.Encode(msg)
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, envelopeFrom{from, f})
		return true
	}
	if err := n1.eng.RequestSync(n0.id, ns); err != nil {
		t.Fatal(err)
	}
	if err := n1.eng.RequestSync(n2.id, ns); err != nil {
		t.Fatal(err)
	}
	c.pump(10)
	if len(late) == 0 {
		t.Fatal("the scenario did not happen: nothing delayed")
	}
	c.drop = nil
	n1.inbox = append(n1.inbox, late...)
	c.pump(10)

	syncAllDropsTheTag(t, c, ns)
}

// An answer that claims dots removed on the answering side goes in one
// message however small BatchMaxBytes is (up to WholeAnswerMaxBytes): a
// batch claiming a removed dot without the record it was removed from
// would move the requester past a removal that record never saw (sim/doc.go,
// Found 6). An answer claiming none is still split.
func TestAnswerClaimingRemovalsGoesWhole(t *testing.T) {
	for _, whole := range []int{0, 1} {
		c, ns := splitAnswerClusterWith(t, whole)
		n0, n1 := c.nodes[0], c.nodes[1]
		answers := 0
		c.drop = func(from, to PeerID, msg *wire.Message) bool {
			if from == n0.id && to == n1.id && msg.Kind == wire.KindSyncReply && len(msg.Deltas) > 0 {
				answers++
			}
			return from == n0.id && to != n1.id
		}
		if err := n1.eng.RequestSync(n0.id, ns); err != nil {
			t.Fatal(err)
		}
		c.pump(10)
		if whole == 0 && answers != 1 {
			t.Errorf("an answer claiming a removal came in %d messages, want 1", answers)
		}
		if whole == 1 && answers < 2 {
			t.Errorf("with WholeAnswerMaxBytes 1 the answer came in %d messages, want it split", answers)
		}
		if r, _ := n1.st.Map(ns).Get("m1"); r == nil || r.HasElement("tags", "auth") {
			t.Errorf("whole %d: n1 should hold m1 without the tag", whole)
		}
	}
}

// splitAnswerCluster is three engines answering syncs one record per
// batch, even answers claiming removed dots (which go whole up to
// WholeAnswerMaxBytes: TestAnswerClaimingRemovalsGoesWhole), where n2 holds m1 with the tag "auth" and n0 has removed the tag
// and saved m2 since; n1 has heard of none of it.
func splitAnswerCluster(t *testing.T) (*cluster, string) { return splitAnswerClusterWith(t, 1) }

// splitAnswerClusterWith is splitAnswerCluster with Config.WholeAnswerMaxBytes whole.
func splitAnswerClusterWith(t *testing.T, whole int) (*cluster, string) {
	c := newCluster(t, 3, Config{BatchMaxBytes: 1, WholeAnswerMaxBytes: whole}, openPolicy{}, 9)
	c.pump(10)
	n0, n1 := c.nodes[0], c.nodes[1]
	const ns = "team://a"
	m := n0.st.Map(ns)
	local := func(d *crdt.Map) { n0.eng.LocalDelta(ns, sealInto(m, ns, d, n0.signer)) }

	// n1 is cut off while n0 saves m1 with the tag "auth" (n2 hears of it) ...
	c.drop = func(_, to PeerID, _ *wire.Message) bool { return to == n1.id }
	n0.clock.Observe(m.MaxTimestamp(), c.now)
	d1, _ := m.Set(n0.rep, n0.clock.Now(c.now), "m1", "title", []byte("t"))
	d2, _ := m.Add(n0.rep, "m1", "tags", "auth")
	d1.Join(d2)
	local(d1)
	c.pump(10)
	// ... and n0 is cut off while it removes the tag and saves m2.
	c.drop = func(from, _ PeerID, _ *wire.Message) bool { return from == n0.id }
	e, _ := m.Edit(n0.rep, "m1", crdt.DefaultLimits())
	e.Remove("tags", "auth")
	_ = e.Set(n0.clock.Now(c.now), "ua", []byte("x"))
	local(e.Delta())
	d3, _ := m.Set(n0.rep, n0.clock.Now(c.now), "m2", "title", []byte("u"))
	local(d3)
	c.pump(10)
	return c, ns
}

// syncAllDropsTheTag has every node sync with every other, three times,
// and checks that none holds the removed tag and all converged.
func syncAllDropsTheTag(t *testing.T, c *cluster, ns string) {
	t.Helper()
	for range 3 {
		for _, a := range c.nodes {
			for _, b := range c.nodes {
				if a != b {
					if err := a.eng.RequestSync(b.id, ns); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		c.pump(20)
	}
	for _, nd := range c.nodes {
		if r, _ := nd.st.Map(ns).Get("m1"); r == nil || r.HasElement("tags", "auth") {
			t.Errorf("%s: the removed tag survived every sync (m1 %v)", nd.id, r != nil)
		}
	}
	if !c.converged(ns) {
		t.Error("not converged")
	}
}

// A sync answer whose walk of the state fails partway sends no batch of
// that namespace: the removed dots are known only at the walk's end, and
// a batch without them could carry a record past a removal the requester
// never saw. The requester's next sync asks again.
func TestSyncAnswerFailingPartwaySendsNothing(t *testing.T) {
	errDisk := errors.New("test: disk")
	st := partwayState{MemState: NewMemState(), err: errDisk}
	st.Map("team://a")
	e0 := New(testConfig(Config{AntiEntropyInterval: time.Hour, BatchMaxBytes: 1}, "n0", 0), st, openPolicy{})
	signer, rep := testSigner(0)
	for _, id := range []string{"m1", "m2", "m3"} {
		m := st.Map("team://a")
		d, _ := m.Set(rep, crdt.Timestamp(1), id, "title", []byte(id))
		e0.LocalDelta("team://a", sealInto(m, "team://a", d, signer))
	}
	st1 := NewMemState()
	st1.Map("team://a")
	e1 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n1", 1), st1, openPolicy{})
	peers := []Peer{testPeer("n0", 0), testPeer("n1", 1)}
	e0.SetPeers(peers)
	e1.SetPeers(peers)
	e1.Tick(time.Time{}.Add(time.Second)) // n1, the larger id, asks once n0 has not
	e0.Ready()
	e0.Advance(nil)
	stepJoinRequest(t, e1, e0)
	rd := e0.Ready()
	if len(rd.Errors) == 0 || !errors.Is(rd.Errors[0], errDisk) {
		t.Fatalf("want the walk's error reported, got %v", rd.Errors)
	}
	for _, env := range rd.Messages {
		if env.To == "n1" && env.Msg.Kind == wire.KindSyncReply && len(env.Msg.Deltas) > 0 {
			t.Fatalf("a batch of a failed walk went out (%d deltas)", len(env.Msg.Deltas))
		}
	}
}

// partwayState is a MemState whose Missing finds one record, then fails.
type partwayState struct {
	*MemState
	err error
}

func (s partwayState) Missing(ns string, have *crdt.Context, fn func(string, *crdt.Record) error) (*crdt.Context, error) {
	n := 0
	_, err := s.MemState.Missing(ns, have, func(id string, r *crdt.Record) error {
		if n++; n > 1 {
			return s.err
		}
		return fn(id, r)
	})
	return nil, err
}

// A sync answer comes in batches; losing one of them must not leave the
// requester waiting for anti-entropy to pick that peer again (one random
// peer per interval: with many peers, minutes). The request stays owed
// until the requester holds what the responder had, and is asked again on
// the next timeout. Anti-entropy is off here, so only that repairs it.
// Both ways an answer is owed: n1 asks n0 (its request), or n0 asks n1
// and n1's answer, its empty context, asks n0 back.
func TestLostSyncBatchIsAskedAgain(t *testing.T) {
	for _, n1Asks := range []bool{true, false} {
		c := newCluster(t, 2, Config{BatchMaxBytes: 1, AntiEntropyInterval: time.Hour}, openPolicy{}, 3)
		c.pump(10)
		const ns = "team://a"
		// n0 writes while it knows no peer (nothing in flight to time out).
		peers := []Peer{testPeer(c.nodes[0].id, 0), testPeer(c.nodes[1].id, 1)}
		c.nodes[0].eng.SetPeers(peers[:1])
		c.nodes[1].st.Map(ns)
		for i := range 5 {
			c.write(0, ns, fmt.Sprintf("m%d", i), "title", "t")
		}
		c.pump(10)
		// The second batch of n0's answer is lost.
		batches := 0
		c.drop = func(from, _ PeerID, m *wire.Message) bool {
			if from != c.nodes[0].id {
				return false
			}
			if m.Kind == wire.KindSyncRequest {
				return n1Asks // only n1's request runs
			}
			if m.Kind != wire.KindSyncReply || len(m.Deltas) == 0 {
				return false
			}
			batches++
			return batches == 2
		}
		c.nodes[0].eng.SetPeers(peers)
		if n1Asks {
			if err := c.nodes[1].eng.RequestSync(c.nodes[0].id, ns); err != nil {
				t.Fatal(err)
			}
		}
		c.pump(10)
		if batches < 3 || c.converged(ns) {
			t.Fatalf("n1 asks %v: the scenario did not happen: %d batches, converged %v", n1Asks, batches, c.converged(ns))
		}
		c.drop = func(from, _ PeerID, m *wire.Message) bool {
			return n1Asks && from == c.nodes[0].id && m.Kind == wire.KindSyncRequest
		}
		for range 4 {
			c.tick(11 * time.Second) // past the ack timeout
			c.pump(10)
		}
		if !c.converged(ns) {
			t.Fatalf("n1 asks %v: the lost batch was never asked for again: n1 has %d of %d records",
				n1Asks, c.nodes[1].st.Map(ns).Len(), c.nodes[0].st.Map(ns).Len())
		}
	}
}

// stepJoinRequest hands to "n0"'s engine e0 the sync request that "n1"'s
// engine e1 sent on joining.
func stepJoinRequest(t *testing.T, e1, e0 *Engine) {
	t.Helper()
	var req *wire.Message
	for _, env := range e1.Ready().Messages {
		if env.Msg.Kind == wire.KindSyncRequest {
			req = env.Msg
		}
	}
	if req == nil {
		t.Fatal("n1 asked for no sync after joining")
	}
	if err := e0.Step("n1", req); err != nil {
		t.Fatal(err)
	}
}
