package replica

import (
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/sync/wire"
)

// Acks and retransmission. A batch not acknowledged in time is sent again
// (Config.Retransmits times) before the pair falls back to digest sync at
// AckTimeout: with 10% loss, a lost batch or a lost ack then costs one
// batch again instead of a sync exchange (requests with a context per
// namespace, answers, and the answers' own contexts), and the repair comes
// after about a second instead of ten. A batch whose namespaces a sync
// answer has carried since it left is not sent again, and one holding a
// namespace the peer may no longer read is never sent again (it waits for
// the fallback, which syncs only what the peer may read).
//
// The wait before a resend adapts to the peer's round trip as TCP's does
// (RFC 6298): srtt + 4·rttvar, from the acks of batches sent once (Karn's
// rule), at least Config.RetransmitAfter and at most AckTimeout/2,
// doubled for each resend. The engine knows the time only from Tick, so a
// round trip is measured in whole ticks: on a LAN it reads zero and the
// wait is RetransmitAfter; a slow link lengthens it.
//
// The second resend goes only if something came from the peer since the
// first: a peer silent that long is more likely cut off (a partition)
// than unlucky twice, and a resend to it is lost too; the fallback at
// AckTimeout syncs once it is back. In mnemo sim --nodes 100 --ops 1000
// --loss 0.1 --partitions 3 --tree-threshold -1, seeds 1/2/3: fallbacks
// 3,423/1,951/2,614 → 2,060/1,536/1,764, batches sent again 22,674/
// 18,263/20,729 → 21,150/17,211/19,248, bytes on the wire / minimum
// 2.24/2.02/2.01 → 2.09/1.98/1.95.

// checkInflight resends the overdue batches to p and falls back to digest
// sync for those unacknowledged after AckTimeout.
func (e *Engine) checkInflight(p *peerState, now time.Time) {
	if len(p.inflight) == 0 {
		return // most peers: every tick checks them all
	}
	for _, seq := range slices.Sorted(maps.Keys(p.inflight)) {
		f := p.inflight[seq]
		switch {
		case now.Sub(f.first) >= e.cfg.AckTimeout:
			delete(p.inflight, seq)
			e.fallBack(p, f)
		case f.sends > e.cfg.Retransmits || now.Sub(f.sentAt) < p.retransmitWait(e.cfg)<<(f.sends-1):
		case f.sends > 1 && !p.heard.After(f.sentAt):
			// Nothing came from the peer since the last resend: cut off
			// (a partition) more likely than unlucky twice. The fallback
			// at AckTimeout syncs what it lacks once it is back.
		case e.answeredSince(p, f):
			delete(p.inflight, seq) // a sync answer carried what it did
		case !e.mayStillRead(p, f):
		default:
			f.sends++
			f.sentAt = now
			p.inflight[seq] = f
			p.stats.Retransmits++
			p.stats.BytesSent += uint64(f.size)
			e.send(p.ID, f.msg)
		}
	}
}

// fallBack asks p for a digest sync of the namespaces of a batch it never
// acknowledged.
func (e *Engine) fallBack(p *peerState, f inflight) {
	fell := false
	for _, ns := range f.nss {
		// The peer was sent everything of ns it lacked (a sync answer to
		// its context) after this batch left, so from a state that held
		// the batch's deltas: another sync now would only repeat that
		// answer. (An answer lost on the way is what anti-entropy and the
		// next timeout repair, as for any sync.)
		if t, ok := p.answered[ns]; ok && t.After(f.first) {
			continue
		}
		needSyncOf(p, ns, CauseAckTimeout)
		fell = true
	}
	if fell {
		p.stats.Fallbacks++
	}
}

// answeredSince reports whether p was sent a sync answer of every
// namespace of f since f first left.
func (e *Engine) answeredSince(p *peerState, f inflight) bool {
	for _, ns := range f.nss {
		if t, ok := p.answered[ns]; !ok || !t.After(f.first) {
			return false
		}
	}
	return true
}

// mayStillRead reports whether p may still read every namespace of f.
func (e *Engine) mayStillRead(p *peerState, f inflight) bool {
	for _, ns := range f.nss {
		if !e.pol.PeerMayRead(p.Peer, ns) {
			return false
		}
	}
	return true
}

// observeAck takes the round trip of an acknowledged batch sent once.
func (p *peerState) observeAck(f inflight, now time.Time) {
	if f.sends != 1 {
		return // Karn: whose ack this is, is not known
	}
	r := max(0, now.Sub(f.sentAt))
	if p.rttSamples == 0 {
		p.srtt, p.rttvar = r, r/2
	} else {
		p.rttvar = (3*p.rttvar + (p.srtt - r).Abs()) / 4
		p.srtt = (7*p.srtt + r) / 8
	}
	p.rttSamples++
}

// retransmitWait is the wait before the first resend of a batch to p.
func (p *peerState) retransmitWait(cfg Config) time.Duration {
	return min(max(cfg.RetransmitAfter, p.srtt+4*p.rttvar), cfg.AckTimeout/2)
}

// Acks that adapt to loss. A batch sent again whose ack left here was
// resent because that ack was lost (or is late): its bytes cross the
// wire twice for an ack of a few bytes. A node that sees one of the last
// ackRing batches of a peer again sends its acks to that peer twice for
// ackTwiceFor: with independent loss p, an ack is then lost with p², not
// p. Over a link that loses nothing (QUIC's streams) no batch comes
// again and every ack goes once. In mnemo sim --nodes 100 --ops 1000
// --loss 0.1 --partitions 3 --tree-threshold -1, seeds 1/2/3: batches
// sent again 20,994/17,033/18,992 → 19,632/15,725/17,336, fallbacks
// 2,048/1,359/1,698 → 1,697/1,167/1,468, bytes on the wire / minimum
// 2.04/1.93/1.91 → 2.00/1.91/1.90 (acks are 8-byte frames: 0.46 → 0.59
// MB on seed 1). Most batches sent again went to a peer cut off by a
// partition, not for a lost ack; resending the first time only to a peer
// heard from lately (as the second resend is) made seed 1 no smaller
// (2.00) and seed 2 larger (1.93), with more fallbacks.
const (
	ackRing     = 32
	ackTwiceFor = time.Minute
)

// batchAgain notes the arrival of p's batch seq: if it was acked
// before, an ack of p's was lost.
func (p *peerState) batchAgain(seq uint64, now time.Time) {
	if seq != 0 && p.acked != nil && slices.Contains(p.acked[:], seq) {
		p.ackLost = now
	}
}

// sendAck acknowledges p's batch seq: twice while p's acks are lost.
func (e *Engine) sendAck(p *peerState, seq uint64) {
	if p.acked == nil {
		p.acked = new([ackRing]uint64)
	}
	p.acked[p.ackedN%ackRing] = seq
	p.ackedN++
	e.send(p.ID, &wire.Message{Kind: wire.KindAck, Seq: seq})
	if !p.ackLost.IsZero() && e.now.Sub(p.ackLost) < ackTwiceFor {
		e.send(p.ID, &wire.Message{Kind: wire.KindAck, Seq: seq})
		p.stats.AcksTwice++
	}
}

// syncRetryWait is how long the sync request a goes without an answer
// (or a batch of one) before it is asked again: until it has been asked
// again once, twice the wait before a batch's first resend; then
// AckTimeout. A request or answer lost once then costs a couple of round
// trips, not AckTimeout (a node that missed a namespace's tree waited
// 10 s per loss), while the later tries still span a partition as long as
// before (syncTries counts the early one too). An answer whose last
// message came while this node still lacks what it said the peer had
// most likely lost a batch on a link that works, not to a partition: it
// is asked again after the short wait once more (lostBatch; a holder of
// none of a project whose first two answers were lost got it at 12.1 s,
// AckTimeout after its second, in sim's TestScaleFigures at 100/300/0.1).
// Only once more, since the same shows when the peer withholds the
// content (it cannot tell yet that this node may read): short waits on
// every try then spent the four in 8 s, where the grant may take longer
// (the sweep from seed 7000 saw three nodes give up so, twice on a read
// granted again 2.7 s after; seed 7050 converged 19.5 s after the last
// fault, not 0.7 s).
func (p *peerState) syncRetryWait(cfg Config, a asking) time.Duration {
	if a.cause != CauseRetry || a.lostBatch && a.tries < lostBatchShortTries {
		return min(2*p.retransmitWait(cfg), cfg.AckTimeout)
	}
	return cfg.AckTimeout
}

// lostBatchShortTries: a request asked fewer times than this whose
// answer lost a batch is asked again after the short wait (the first
// request and two retries; syncRetryWait).
const lostBatchShortTries = 3
