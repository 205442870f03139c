package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

var errSkew = errors.New("test: clock skew")

func acks(msgs []Envelope) int {
	n := 0
	for _, env := range msgs {
		if env.Msg.Kind == wire.KindAck {
			n++
		}
	}
	return n
}

// batches takes nd's Ready and returns its live batches, applying nothing
// and sending nothing.
func (c *cluster) batches(nd *node) []*wire.Message {
	var out []*wire.Message
	for _, env := range nd.eng.Ready().Messages {
		if env.Msg.Kind == wire.KindDeltas {
			out = append(out, env.Msg)
		}
	}
	nd.eng.Advance(nil)
	return out
}

// A live delta the node refuses after the engine accepted it is counted
// and reported, and its batch is not acked, so the sender's ack timeout
// falls back to a digest sync that brings it once the node accepts it. A
// delta the node applies is acked, but only once Advance says so.
func TestRefusedDeltaNotAcked(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 11)
	c.pump(10)
	n0, n1 := c.nodes[0], c.nodes[1]
	deliver := func(id string) Ready {
		t.Helper()
		c.write(0, "team://a", id, "title", "x")
		b := c.batches(n0)
		if len(b) != 1 {
			t.Fatalf("want one batch, got %d", len(b))
		}
		if err := n1.eng.Step(n0.id, b[0]); err != nil {
			t.Fatal(err)
		}
		rd := n1.eng.Ready()
		if len(rd.Apply) != 1 || acks(rd.Messages) != 0 {
			t.Fatalf("want the delta to apply and no ack before Advance, got %d applies, %d acks", len(rd.Apply), acks(rd.Messages))
		}
		return rd
	}

	deliver("m1")
	n1.eng.Advance([]Refusal{{Index: 0, Err: errSkew}})
	rd := n1.eng.Ready()
	if acks(rd.Messages) != 0 {
		t.Fatal("a batch whose delta was refused was acked")
	}
	if len(rd.Rejected) != 1 || !errors.Is(rd.Rejected[0].Err, ErrRefused) || !errors.Is(rd.Rejected[0].Err, errSkew) || rd.Rejected[0].From != n0.id {
		t.Fatalf("refusal not reported as a rejection of n0 wrapping the cause: %+v", rd.Rejected)
	}
	if got := n1.eng.Stats()[0].Rejected; got != 1 {
		t.Fatalf("rejections counted: %d, want 1", got)
	}
	n1.eng.Advance(nil)

	rd = deliver("m2") // another memory: it does not depend on the refused delta
	n1.st.Apply(rd.Apply[0])
	n1.eng.Advance(nil)
	rd = n1.eng.Ready()
	if acks(rd.Messages) != 1 {
		t.Fatalf("an applied batch is acked after Advance: %d acks", acks(rd.Messages))
	}
	n1.eng.Advance(nil)
	for _, env := range rd.Messages {
		if err := n0.eng.Step(n1.id, env.Msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := n1.st.Map("team://a").Get("m2"); !ok {
		t.Fatal("test setup: the second delta was not applied")
	}

	// The first batch's ack never comes: n0 falls back to digest sync.
	c.pump(10)
	if st := n0.eng.Stats()[0]; st.InFlight != 1 {
		t.Fatalf("n0 has %d batches in flight, want the refused one", st.InFlight)
	}
	c.tick(11 * time.Second)
	c.pump(20)
	if !c.converged("team://a") {
		t.Fatal("the refused delta was not repaired after the sender's ack timeout")
	}
	if st := n0.eng.Stats()[0]; st.Fallbacks == 0 {
		t.Fatal("no fallback for the unacked batch")
	}
}

// A held delta is released only on account of what is applied: when the
// delta it depends on is released and then refused, it stays held.
func TestHeldDeltaNotReleasedOnRefused(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 12)
	c.pump(10)
	n0, n1 := c.nodes[0], c.nodes[1]
	var b []*wire.Message
	for _, v := range []string{"a", "b", "c"} { // each overwrites the one before
		c.write(0, "team://a", "m1", "title", v)
		b = append(b, c.batches(n0)...)
	}
	if len(b) != 3 {
		t.Fatalf("want three batches, got %d", len(b))
	}
	step := func(m *wire.Message) Ready {
		t.Helper()
		if err := n1.eng.Step(n0.id, m); err != nil {
			t.Fatal(err)
		}
		return n1.eng.Ready()
	}
	// c and b arrive first: held, nothing to apply, so acked at once.
	for _, m := range []*wire.Message{b[2], b[1]} {
		if rd := step(m); len(rd.Apply) != 0 || acks(rd.Messages) != 1 {
			t.Fatalf("want the delta held and its batch acked: %d applies, %d acks", len(rd.Apply), acks(rd.Messages))
		}
		n1.eng.Advance(nil)
	}
	rd := step(b[0])
	if len(rd.Apply) != 1 {
		t.Fatalf("want a to apply, got %d", len(rd.Apply))
	}
	n1.st.Apply(rd.Apply[0])
	n1.eng.Advance(nil)
	rd = n1.eng.Ready()
	if len(rd.Apply) != 1 {
		t.Fatalf("a applied: want b released alone (c waits for b's outcome), got %d", len(rd.Apply))
	}
	n1.eng.Advance([]Refusal{{Index: 0, Err: errSkew}})
	rd = n1.eng.Ready()
	if len(rd.Apply) != 0 {
		t.Fatal("c was released on account of b, which the node refused")
	}
	if len(rd.Rejected) != 1 || !errors.Is(rd.Rejected[0].Err, ErrRefused) {
		t.Fatalf("b's refusal not reported: %+v", rd.Rejected)
	}
	n1.eng.Advance(nil)
	if len(n1.eng.pending) != 1 {
		t.Fatalf("c should still be held, %d held", len(n1.eng.pending))
	}
	rec, _ := n1.st.Map("team://a").Get("m1")
	if f, _ := rec.Field("title"); string(f.Value) != "a" {
		t.Fatalf("n1 holds title %q, want a (b refused, c held)", f.Value)
	}
}

// failState is a MemState whose sync answers fail.
type failState struct {
	*MemState
	missing, retracted error
}

func (s failState) Missing(ns string, have *crdt.Context, fn func(string, *crdt.Record) error) (*crdt.Context, error) {
	if s.missing != nil {
		return nil, s.missing
	}
	return s.MemState.Missing(ns, have, fn)
}

func (s failState) Retracted(ns string) ([]string, error) {
	if s.retracted != nil {
		return nil, s.retracted
	}
	return s.MemState.Retracted(ns)
}

// An error of State while answering a sync is reported and counted, not
// dropped.
func TestSyncAnswerStateErrorReported(t *testing.T) {
	errDisk := errors.New("test: disk")
	for _, st := range []failState{{missing: errDisk}, {retracted: errDisk}} {
		st.MemState = NewMemState()
		st.Map("team://a")
		e0 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n0", 0), st, openPolicy{})
		st1 := NewMemState()
		st1.Map("team://a")
		e1 := New(testConfig(Config{AntiEntropyInterval: time.Hour}, "n1", 1), st1, openPolicy{})
		peers := []Peer{testPeer("n0", 0), testPeer("n1", 1)}
		e0.SetPeers(peers)
		e1.SetPeers(peers)
		e1.Tick(time.Time{}.Add(time.Second)) // n1, the larger id, asks once n0 has not
		reported := len(e0.Ready().Errors)    // the retracted case fails asking n1 too
		e0.Advance(nil)
		stepJoinRequest(t, e1, e0)
		rd := e0.Ready()
		answering := false
		for _, err := range rd.Errors {
			answering = answering || errors.Is(err, errDisk) && strings.Contains(err.Error(), "answering n1's sync of team://a")
		}
		if !answering {
			t.Fatalf("want the error answering n1 reported, got %v", rd.Errors)
		}
		reported += len(rd.Errors)
		if got := e0.Stats()[0].StateErrors; got != uint64(reported) {
			t.Fatalf("state errors counted: %d, reported %d", got, reported)
		}
	}
}

// A node whose clock is behind a writer's by more than the skew bound
// refuses every sync answer carrying a record the writer has just
// written. Those answers came: the requests they answered do not spend
// their tries on them (up to syncTries of them), so the node asks again
// once the writer has stopped, rather than giving up after syncTries
// refused answers and waiting for anti-entropy (56.1 s in the
// simulator's sweep, for a node that held none of the namespace).
func TestSkewRefusedAnswersDoNotSpendTries(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 3)
	c.tick(0)
	c.pump(10)
	n0, n1 := c.byID("n0"), c.byID("n1")
	m := n0.st.Map("team://a") // written on n0 without a live send: the sync must bring it
	d, err := m.Set(n0.rep, n0.clock.Now(c.now), "r1", "f", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	sealInto(m, "team://a", d, n0.signer)
	refusals := 0
	n1.refuse = func(a Apply) bool {
		if a.Live || refusals == syncTries+2 {
			return false
		}
		refusals++
		return true // the writer wrote again just before each answer
	}
	n1.refuseErr = fmt.Errorf("test: %w: 6000 ms ahead", crdt.ErrClockSkew)
	if err := n1.eng.RequestSync("n0", "team://a"); err != nil {
		t.Fatal(err)
	}
	for range 120 {
		c.pump(10)
		c.tick(time.Second)
	}
	c.pump(10)
	if !c.converged("team://a") {
		t.Fatalf("after 120 s and %d answers refused for clock skew, n1 still lacks n0's write; want it asked for again", refusals)
	}
}

// A clock that stays behind (every answer refused for skew) gets the
// tries given back only syncTries times: at most twice syncTries
// requests, then anti-entropy's turn.
func TestSkewRefusedAnswersAskedABoundedNumberOfTimes(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 3)
	c.tick(0)
	c.pump(10)
	n0, n1 := c.byID("n0"), c.byID("n1")
	m := n0.st.Map("team://a")
	d, err := m.Set(n0.rep, n0.clock.Now(c.now), "r1", "f", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	sealInto(m, "team://a", d, n0.signer)
	n1.refuse = func(a Apply) bool { return !a.Live }
	n1.refuseErr = fmt.Errorf("test: %w: 6000 ms ahead", crdt.ErrClockSkew)
	asked := 0
	c.drop = func(from, _ PeerID, m *wire.Message) bool {
		if from == "n1" && m.Kind == wire.KindSyncRequest {
			asked++
		}
		return false
	}
	if err := n1.eng.RequestSync("n0", "team://a"); err != nil {
		t.Fatal(err)
	}
	for range 600 {
		c.pump(10)
		c.tick(time.Second)
	}
	if asked == 0 || asked > 2*syncTries {
		t.Fatalf("%d sync requests from n1 over 600 s of answers refused for skew; want 1 to %d", asked, 2*syncTries)
	}
}

// A live delta held for one lost on the way, and released once that one
// came, was acked when it was held: if the node then refuses it (its
// clock behind the writer's beyond the skew bound), no ack timeout of
// the sender's retries it, and the node asks the sender for a sync
// instead. Before, it lacked the delta's dots until anti-entropy (53.9 s
// in the simulator's sweep).
func TestReleasedDeltaRefusedAsksItsSender(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
	c.tick(0)
	c.pump(10)
	n1 := c.byID("n1")
	lost := false
	c.drop = func(from, _ PeerID, m *wire.Message) bool {
		if from == "n0" && m.Kind == wire.KindDeltas && !lost {
			lost = true
			return true // the first write's batch lost once
		}
		return false
	}
	applies := 0
	n1.refuse = func(a Apply) bool {
		applies++
		return applies == 2 // the held delta, released after the first
	}
	n1.refuseErr = fmt.Errorf("test: %w: 5500 ms ahead", crdt.ErrClockSkew)
	c.write(0, "team://a", "r1", "f", "a")
	c.pump(10)
	c.write(0, "team://a", "r1", "f", "b") // overwrites the first: held at n1 until it comes
	c.pump(10)
	for range 30 {
		c.tick(time.Second)
		c.pump(10)
	}
	if applies < 2 {
		t.Fatalf("set-up: n1 was handed %d deltas to apply; want the first, then the held one released", applies)
	}
	if !c.converged("team://a") {
		t.Fatalf("30 s after n1 refused the released delta, it still lacks it; want its sender asked for a sync")
	}
}
