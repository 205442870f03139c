package replica

import (
	"math"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Repairing what a broadcast tree lost, which no ack reports (doc.go,
// "Trees"): a reader's context that shows dots this node lacks makes it
// ask one of their authors (askWriterFor), a tree link that speaks again
// after a silence makes it sync the trees' namespaces with that peer
// (heardFrom: a partition healed), and a payload a tree gave up makes it
// sync with one of its announcers (gaveUp). Each asks only when no
// writer owes this node a sync of the namespace already (syncOwed).

// healSilence: a peer sent the trees' payloads or announcements for this
// long without a word back was cut off (a partition).
const healSilence = 2 * time.Second

// askWriterFor: p, which may not write ns (so sends none of its content),
// told a context of ns holding dots this node lacks. The author of most
// of those dots that is a peer and may write ns is asked for a digest
// sync of ns (its answer brings every dot of ns this node lacks and it
// holds, whoever wrote it), unless a writer owes one already; when no
// author is a peer now (it left, or crashed and was retired), the first
// peer that may write ns is asked instead (a writer holds what reached
// the readers, as they hold only what writers sent).
func (e *Engine) askWriterFor(ns string, theirs *crdt.Context) {
	missing := e.st.Context(ns).Missing(theirs)
	if len(missing) == 0 || e.syncOwed(ns) {
		return
	}
	lack := map[crdt.ReplicaID]uint64{}
	for _, r := range missing {
		// Saturating: a claimed range may span all of uint64.
		if n := r.To - r.From + 1; n == 0 || lack[r.Replica] > math.MaxUint64-n {
			lack[r.Replica] = math.MaxUint64
		} else {
			lack[r.Replica] += n
		}
	}
	var best, anyWriter *peerState
	for _, id := range e.sortedPeers() {
		q := e.peers[id]
		if !e.pol.ReplicaMayWrite(q.Replica, ns) {
			continue
		}
		if anyWriter == nil {
			anyWriter = q
		}
		if n := lack[q.Replica]; n > 0 && (best == nil || n > lack[best.Replica]) {
			best = q
		}
	}
	if best == nil {
		best = anyWriter
	}
	if best == nil {
		return // no peer may write ns now: anti-entropy's
	}
	needSyncOf(best, ns, CauseGap)
	e.askAuthority(best, ns)
}

// sent notes a frame of a tree's dissemination to p (a payload, an
// announcement, a want, a graft, a prune): the first since p last spoke
// starts its silence.
func (p *peerState) sent(now time.Time, m *wire.Message) {
	if m.Kind == wire.KindTree && epidemic.Kind(m.Tree.Kind) <= epidemic.KindPrune && p.unanswered.IsZero() {
		p.unanswered = now
	}
}

// heardFrom notes a frame from p. A peer silent for healSilence while
// this node sent it the trees' traffic comes back from a partition: each
// namespace with a tree here that p may read is synced with it, unless a
// writer owes a sync of it or it was synced so in the last healSilence
// (every link across the partition speaks again at once: one is enough).
// The trees acknowledge nothing, and what a partition kept from either
// side never comes over them again. The node with the smaller id asks;
// the other waits RetransmitAfter for that request, as for a join.
func (e *Engine) heardFrom(p *peerState) {
	silent := !p.unanswered.IsZero() && e.now.Sub(p.unanswered) >= healSilence
	p.heard, p.unanswered = e.now, time.Time{}
	if !silent {
		return
	}
	e.syncStats.Heals++
	for ns, t := range e.trees { // each namespace on its own: any order
		if !e.pol.PeerMayRead(p.Peer, ns) || !e.pol.ShouldHold(ns) || e.now.Sub(t.healed) < healSilence || e.syncOwed(ns) {
			continue
		}
		t.healed = e.now
		if e.cfg.Self < p.ID {
			needSyncOf(p, ns, CauseHeal)
			continue
		}
		if len(p.joinWait) == 0 {
			p.joinAt = e.now.Add(e.cfg.RetransmitAfter)
		}
		if _, ok := p.joinWait[ns]; !ok {
			p.joinWait[ns] = CauseHeal
		}
	}
}

// gaveUp: t's tree gave up a payload its announcers did not send. One of
// them that is a peer and may read the namespace is asked for a digest
// sync of it (a writer's answer brings the payload's writes; a reader's
// context shows the gap, and askWriterFor asks a writer), unless a writer
// owes one already.
func (e *Engine) gaveUp(t *tree, m epidemic.Missed) {
	if e.syncOwed(t.ns) {
		return
	}
	for _, a := range m.Announcers {
		if p := e.peers[PeerID(a)]; p != nil && e.pol.PeerMayRead(p.Peer, t.ns) {
			needSyncOf(p, t.ns, CauseGaveUp)
			return
		}
	}
}

// syncOwed reports whether a sync of ns is asked for, owed or about to be
// asked of a peer that may write ns (a reader's answer brings no
// content). A request counts only while its answer may still come: sent
// less than RetransmitAfter ago, or to a peer heard from since. One to a
// writer that went silent (crashed and not yet retired, or cut off) is
// retried until its tries run out, and meanwhile must not hold back the
// repairs other peers' evidence asks for.
func (e *Engine) syncOwed(ns string) bool {
	for _, q := range e.peers {
		if !e.pol.ReplicaMayWrite(q.Replica, ns) {
			continue
		}
		if a, owed := q.asked[ns]; owed && (e.now.Sub(a.at) < e.cfg.RetransmitAfter || q.heard.After(a.at)) {
			return true
		}
		if q.needSync[ns] != causeNone {
			return true
		}
		if _, ok := q.joinWait[ns]; ok {
			return true
		}
	}
	return false
}

// askedAny reports whether a sync of ns is asked of any peer, writer or
// not, and may still be answered (as syncOwed, for a node that cannot
// tell who may write ns: it holds none of it).
func (e *Engine) askedAny(ns string) bool {
	for _, q := range e.peers {
		if a, owed := q.asked[ns]; owed && (e.now.Sub(a.at) < e.cfg.RetransmitAfter || q.heard.After(a.at)) {
			return true
		}
		if q.needSync[ns] != causeNone {
			return true
		}
	}
	return false
}
