package replica

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/sync/wire"
)

// revocable is openPolicy whose peers lose read once revoked.
type revocable struct {
	openPolicy
	revoked map[PeerID]bool
}

func (p *revocable) PeerMayRead(peer Peer, _ string) bool { return !p.revoked[peer.ID] }

// A batch is never sent again to a peer that may no longer read it: the
// resend waits for the fallback, which syncs only what the peer may read.
func TestNoRetransmitAfterRevocation(t *testing.T) {
	pol := &revocable{revoked: map[PeerID]bool{}}
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, pol, 5)
	c.pump(10)
	c.drop = func(_, _ PeerID, _ *wire.Message) bool { return true }
	c.write(0, "team://a", "m1", "title", "secret")
	c.pump(10)
	pol.revoked[c.nodes[1].id] = true
	sent := 0
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if from == c.nodes[0].id && len(m.Deltas) > 0 {
			sent++
		}
		return false
	}
	for range 12 {
		c.tick(time.Second)
		c.pump(10)
	}
	if sent > 0 {
		t.Fatalf("%d messages with content went to a peer whose read was revoked", sent)
	}
	if st := c.nodes[0].eng.Stats()[0]; st.Retransmits != 0 || st.InFlight != 0 {
		t.Fatalf("retransmits %d, in flight %d; want 0 and 0 (the batch timed out)", st.Retransmits, st.InFlight)
	}
}

// Under loss, resending batches repairs what digest sync repaired before,
// with fewer fallbacks: the same seeded run with and without retransmits.
func TestRetransmitsReplaceFallbacks(t *testing.T) {
	run := func(rtx int) (fallbacks, retransmits uint64, bytes int) {
		c := newCluster(t, 4, Config{AntiEntropyInterval: time.Hour, Retransmits: rtx}, openPolicy{}, 8)
		c.tick(time.Second)
		c.loss = 0.1
		c.pump(10)
		for i := range 200 {
			c.write(i%4, "team://a", "m"+string(rune('a'+i%26)), "title", "v"+string(rune('a'+i%7)))
			c.pump(3)
			if i%10 == 9 {
				c.tick(time.Second)
			}
		}
		c.loss = 0
		for range 30 {
			c.tick(time.Second)
			c.pump(20)
		}
		if !c.converged("team://a") {
			t.Fatalf("rtx %d: not converged", rtx)
		}
		for _, nd := range c.nodes {
			for _, s := range nd.eng.Stats() {
				fallbacks += s.Fallbacks
				retransmits += s.Retransmits
			}
		}
		return fallbacks, retransmits, c.bytes
	}
	fOff, rOff, bOff := run(-1)
	fOn, rOn, bOn := run(0)
	t.Logf("without retransmits: %d fallbacks, %d bytes; with: %d fallbacks, %d retransmits, %d bytes", fOff, bOff, fOn, rOn, bOn)
	if rOff != 0 || rOn == 0 || fOn*2 > fOff {
		t.Fatalf("fallbacks %d → %d with %d retransmits: want at most half", fOff, fOn, rOn)
	}
}

// A pair that both see each other join syncs once, asked by the smaller
// id (one request asking the context back repairs both ways); a join only
// the larger id saw is synced by it after RetransmitAfter.
func TestJoinSyncAskedOnce(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 4)
	c.tick(time.Second)
	c.nodes[0].st.Map("team://a")
	c.nodes[1].st.Map("team://a")
	c.write(1, "team://a", "m1", "title", "t")
	requests := map[PeerID]int{}
	c.drop = func(from, _ PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindSyncRequest {
			requests[from]++
		}
		return false
	}
	// Both see the other leave and come back.
	peers := []Peer{testPeer(c.nodes[0].id, 0), testPeer(c.nodes[1].id, 1)}
	for _, nd := range c.nodes {
		nd.eng.SetPeers(peers[:0])
		nd.eng.SetPeers(peers)
	}
	c.pump(10)
	c.tick(2 * time.Second)
	c.pump(10)
	if requests[c.nodes[0].id] != 1 || requests[c.nodes[1].id] != 0 {
		t.Fatalf("sync requests on a join both saw: %v; want one, from n0", requests)
	}
	if !c.converged("team://a") {
		t.Fatal("not converged")
	}
	// Only n1 sees n0 leave and come back: n1 asks, a little later.
	clear(requests)
	c.nodes[1].eng.SetPeers(peers[1:])
	c.write(1, "team://a", "m2", "title", "u")
	c.nodes[1].eng.SetPeers(peers)
	c.pump(10)
	if requests[c.nodes[1].id] != 0 {
		t.Fatalf("n1 asked before RetransmitAfter: %v", requests)
	}
	c.tick(time.Second)
	c.pump(10)
	if requests[c.nodes[1].id] != 1 || !c.converged("team://a") {
		t.Fatalf("a join only n1 saw: requests %v, converged %v", requests, c.converged("team://a"))
	}
}

// A batch is sent a second time only if something came from the peer
// since the first resend: a peer silent since (cut off by a partition)
// waits for the fallback instead of a resend that is lost too. With
// frames from the peer arriving (acks of other batches), the second
// resend goes.
func TestSecondResendOnlyToPeerHeardSince(t *testing.T) {
	resends := func(heard bool) uint64 {
		c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 6)
		c.tick(time.Second)
		c.pump(10)
		n0, n1 := c.nodes[0].id, c.nodes[1].id
		c.drop = func(from, to PeerID, m *wire.Message) bool {
			return from == n0 && to == n1 && m.Kind == wire.KindDeltas // every send of n0's batches is lost
		}
		c.write(0, "team://a", "m1", "title", "lost")
		c.pump(10)
		for i := range 8 {
			c.tick(500 * time.Millisecond)
			if heard && i%2 == 1 {
				c.write(1, "team://a", "n1-"+string(rune('a'+i)), "title", "n1 speaks") // reaches n0
			}
			c.pump(10)
		}
		return c.nodes[0].eng.Stats()[0].Retransmits
	}
	if got := resends(false); got != 1 {
		t.Fatalf("a silent peer was sent the batch again %d times; want once", got)
	}
	if got := resends(true); got != 2 {
		t.Fatalf("a peer heard from was sent the batch again %d times; want twice", got)
	}
}

// A lost ack makes its batch come again; the receiver then acks that
// peer twice for a while, so the next lost ack costs no resend. Over a
// lossless link acks go once.
func TestAcksTwiceAfterLostAck(t *testing.T) {
	c := newCluster(t, 2, Config{AntiEntropyInterval: time.Hour}, openPolicy{}, 5)
	c.tick(time.Second)
	c.pump(10)
	acks := 0
	count := func(_, _ PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindAck {
			acks++
		}
		return false
	}
	c.drop = count
	c.write(0, "team://a", "m1", "title", "one")
	c.pump(10)
	if acks != 1 {
		t.Fatalf("lossless: %d acks of one batch, want 1", acks)
	}
	// The next ack is lost: the batch comes again after RetransmitAfter.
	acks = 0
	lost := false
	c.drop = func(from, to PeerID, m *wire.Message) bool {
		if m.Kind == wire.KindAck && !lost {
			lost = true
			return true
		}
		return count(from, to, m)
	}
	c.write(0, "team://a", "m2", "title", "two")
	c.pump(10)
	c.tick(2 * time.Second)
	c.pump(10)
	if st := c.nodes[0].eng.Stats()[0]; st.Retransmits != 1 || st.InFlight != 0 {
		t.Fatalf("retransmits %d, in flight %d; want 1 and 0", st.Retransmits, st.InFlight)
	}
	if acks != 2 {
		t.Fatalf("the batch that came again: %d acks, want 2", acks)
	}
	acks = 0
	c.drop = count
	c.write(0, "team://a", "m3", "title", "three")
	c.pump(10)
	if st := c.nodes[1].eng.Stats()[0]; acks != 2 || st.AcksTwice != 2 {
		t.Fatalf("after a lost ack: %d acks of one batch (%d counted twice), want 2", acks, st.AcksTwice)
	}
	c.tick(ackTwiceFor)
	c.pump(10)
	acks = 0
	c.write(0, "team://a", "m4", "title", "four")
	c.pump(10)
	if acks != 1 {
		t.Fatalf("%v after the lost ack: %d acks, want 1", ackTwiceFor, acks)
	}
}
