package replica

import (
	"math"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Repairing what a broadcast tree lost, which no ack reports (doc.go,
// "Trees"): a reader's context that shows dots this node lacks makes it
// ask one of their authors (askWriterFor), and a payload a tree gave up
// makes it sync with one of its announcers (gaveUp), each only when no
// writer owes this node a sync of the namespace already (syncOwed); a
// tree link that lost payloads in a silence (a partition healed:
// heardFrom, wantFrom) syncs that namespace with that peer; and a sync
// that repaired many dots is told to the tree's links (spread).

// healSilence: a peer sent the trees' payloads or announcements for this
// long without a word back may have been cut off (a partition).
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
// this node sent it the trees' traffic may be back from a partition, or
// may only be a leaf of the trees that is pushed to and has nothing to
// say (most are: counted as heals, they were the largest cause of syncs
// without faults, mnemo sim --nodes 30 --ops 500 seed 1: 1,048 namespaces
// asked, 58 answered). So silence asks for evidence only: each tree that
// sent p payloads or announcements during the silence announces again to
// p a few of them (sentSamples, the latest, a second or more apart, none
// under way) (epidemic Reannounce). A leaf got them and asks for nothing;
// a peer the partition kept one from asks for it (a want): the evidence
// (wantFrom). A push-only leaf's silence may have begun long before a
// cut, so the first payload of the silence proves nothing.
func (e *Engine) heardFrom(p *peerState) {
	since, last := p.unanswered, p.heard
	silent := !since.IsZero() && e.now.Sub(since) >= healSilence
	p.heard, p.unanswered = e.now, time.Time{}
	if !silent || len(e.trees) == 0 {
		return
	}
	for _, t := range e.treeList {
		sa := t.sent[p.ID]
		if sa == nil || !e.pol.PeerMayRead(p.Peer, t.ns) || !e.pol.ShouldHold(t.ns) {
			continue
		}
		var ids []epidemic.MsgID
		for _, f := range sa.ids[:sa.n] {
			if f.at.After(last) && e.now.Sub(f.at) >= healInFlight {
				ids = append(ids, f.id)
			}
		}
		sa.n = 0
		if ids = t.node.Reannounce(epidemic.PeerID(p.ID), ids...); len(ids) > 0 {
			if t.probed == nil {
				t.probed = map[PeerID]probe{}
			}
			t.probed[p.ID] = probe{at: e.now, ids: ids}
			e.syncStats.HealProbes++
			e.drainTree(t, nil)
		}
	}
}

// healInFlight: a payload sent this recently may still be on its way,
// so is not announced again to probe a silence.
const healInFlight = time.Second

// sentSamples is how many of the payloads a tree sends a peer while it is
// silent are kept to probe the silence: the latest, each sent
// healInFlight or more after the one before.
const sentSamples = 3

// sentIDs are the samples of what a tree sent a peer since it last spoke.
type sentIDs struct {
	ids [sentSamples]sentID
	n   int
}

// sentID is a payload or announcement a tree sent a peer: its id and when.
type sentID struct {
	id epidemic.MsgID
	at time.Time
}

// noteSent notes that t sent p the payload or an announcement of id.
func (e *Engine) noteSent(t *tree, p *peerState, id epidemic.MsgID) {
	if pr, ok := t.probed[p.ID]; ok && slices.Contains(pr.ids, id) {
		// A probe's own re-announcement is no sample of a silence: taken
		// as one, each frame the peer sends next would end a "silence"
		// and re-announce it again, for as long as the id is kept.
		return
	}
	sa := t.sent[p.ID]
	if sa == nil {
		if t.sent == nil {
			t.sent = map[PeerID]*sentIDs{}
		}
		sa = &sentIDs{}
		t.sent[p.ID] = sa
	}
	if sa.n > 0 && !sa.ids[sa.n-1].at.After(p.heard) {
		sa.n = 0 // p spoke since: a new silence
	}
	if sa.n > 0 && e.now.Sub(sa.ids[sa.n-1].at) < healInFlight {
		return
	}
	if sa.n == sentSamples {
		copy(sa.ids[:], sa.ids[1:])
		sa.n--
	}
	sa.ids[sa.n] = sentID{id: id, at: e.now}
	sa.n++
}

// probe is what a tree announced again to a peer back from a silence.
type probe struct {
	at     time.Time
	ids    []epidemic.MsgID
	healed bool // p wanted one: synced
}

// wantFrom notes p's want of payloads of t's tree and returns the ids
// the tree is to answer. A want of one of those a probe announced again
// to p, within healSilence, says the link lost them: a partition healed.
// (Not any want: the frame that ends a silence may be a want of a payload
// announced before it, lost on its way as any is.) The namespace is
// synced with p, whether a writer owes this node a sync or not: the
// answer brings what p has and this node lacks, and p gets what it lacks
// back (from this node if it may write, else from a writer p asks), then
// tells its tree's links (spread). The probed payloads themselves are
// not sent: p would forward them as late payloads, and the pull would
// graft the link into their trees. Sent, in mnemo sim --nodes 100 --ops
// 1000 --loss 0.1 --partitions 3 seed 1, 2,300 more wants made 9,200
// more payload sends (bytes / minimum 2.97 without probes → 3.17).
// Each link's heal is its own: every peer across the partition that
// missed something is repaired, not only the first heard per namespace
// (that gate left readers that were never silent lacking writes).
func (e *Engine) wantFrom(p *peerState, t *tree, wanted []epidemic.MsgID) []epidemic.MsgID {
	pr, ok := t.probed[p.ID]
	if !ok {
		return wanted
	}
	if e.now.Sub(pr.at) > healSilence {
		delete(t.probed, p.ID)
		return wanted
	}
	if !e.now.After(pr.at) {
		return wanted // the frame that ended the silence: it asks for what came before
	}
	rest := slices.DeleteFunc(slices.Clone(wanted), func(id epidemic.MsgID) bool { return slices.Contains(pr.ids, id) })
	if len(rest) == len(wanted) {
		return wanted
	}
	if !pr.healed { // p asks each announcer again (GraftTries): one heal
		pr.healed = true
		t.probed[p.ID] = pr
		e.syncStats.Heals++
		if _, owed := p.asked[t.ns]; !owed {
			needSyncOf(p, t.ns, CauseHeal)
		}
	}
	return rest
}

// What a sync brings does not go over the trees (they carry authors'
// live deltas only), so a heal's sync repairs only the two ends of the
// link: a node whose every link crossed the partition is synced, and its
// neighbours, which never noticed a silence, still lack what it got. So
// the news spreads as contexts do, on the tree's links: a node that a
// sync brought content of a namespace with a tree because it was behind
// (the answer to a heal's, a spread's or a gap's request, or content a
// requester sent unasked, its context having shown what this node
// lacked) tells each peer of the tree its context in a sync request of
// its own (CauseSpread; at the next Tick, once the content is applied;
// at most once per tree per healSilence). Each such peer that lacks some
// of it gets it from this node if it may write (the answer to its
// context), else asks a writer (askWriterFor), and tells its own links
// in turn. A peer that lacks nothing answers its context only.

// spreadMinDots: a sync that repaired fewer dots than this is spread to
// no one. Repairs of a lost payload or two are the most common by far,
// and their neighbours had the payloads from the tree: spreading every
// repair, in mnemo sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3,
// asked 6,145 (seed 1) and 8,693 (seed 2) namespaces, 9% of them
// answered with content (bytes / minimum 3.23 and 3.43); 16 dots, 2,616
// asked on seed 1 (11% answered), 64 dots 706 on seed 2.
const spreadMinDots = 64

// syncContent notes content of ns come by a sync answer to a request of
// cause (causeNone: unasked), to be spread if it repaired a gap: the
// context before it is kept to count the dots it brought; and, whatever
// the cause, to be caught up (noteCatchUp, catchup.go).
func (e *Engine) syncContent(ns string, cause SyncCause) {
	switch cause {
	case causeNone, CauseHeal, CauseSpread, CauseGap:
		if t := e.trees[ns]; t != nil && t.spreadBase == nil {
			t.spreadBase = e.st.Context(ns).Clone()
		}
	}
	e.noteCatchUp(ns)
}

// spread tells t's links this node's context of t.ns if the syncs since
// the last Tick brought at least spreadMinDots (what they brought is
// applied by then).
func (e *Engine) spread(t *tree) {
	if t.spreadBase == nil || (!t.spreadAt.IsZero() && e.now.Sub(t.spreadAt) < healSilence) {
		return
	}
	var gained uint64
	for _, r := range t.spreadBase.Missing(e.st.Context(t.ns)) {
		gained += min(r.To-r.From+1, spreadMinDots) // saturating: a claimed range may span all of uint64
		if gained >= spreadMinDots {
			break
		}
	}
	t.spreadBase = nil
	if gained < spreadMinDots {
		return
	}
	t.spreadAt = e.now
	for _, id := range t.node.Active() {
		q := e.peers[PeerID(id)]
		if q == nil || !e.pol.PeerMayRead(q.Peer, t.ns) {
			continue
		}
		if _, owed := q.asked[t.ns]; !owed {
			needSyncOf(q, t.ns, CauseSpread)
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
