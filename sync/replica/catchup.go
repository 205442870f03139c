package replica

import (
	"time"

	"github.com/mnemohq/mnemo/crdt"
)

// Catching up the peers that just said they lack old writes. A write a
// tree never carried to part of its readers (made on the far side of a
// partition the membership never saw, or lost with every announcement of
// it) reaches them only by digest syncs, and only writers send content.
// Each anti-entropy round a reader asks one writer: if that writer lacks
// the write too, the reader waits a whole round more, even when the
// writer gets it a moment later (a reader's context in the same round
// shows the gap, and the writer asks the author). Spreading the news
// over the tree's links (spread) waits for spreadMinDots, since most
// repairs are a lost payload or two that the neighbours already have.
//
// So a writer that a sync has just brought content it lacked looks, at
// its next Tick, at the contexts its peers told it within the last
// AntiEntropyInterval (what answerSync remembers): a peer that held then
// everything this node held before the sync, and lacks some of what the
// sync brought, is sent what it lacks, as an answer to that context would
// be (sendMissing). A context told earlier is safe to answer: the answer
// claims only dots that context had seen and dots removed here, and the
// peer may have gained more since, which a CRDT join takes twice. Only writes
// older than catchUpAge go: a younger one is still being carried by the
// tree, its grafts and its repairs, and pushing it would duplicate them.
//
// Measured (mnemo sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3,
// seeds 1-12, against 0e6606d): virtual time to converge after the last
// fault 22.9 -> 15.6 s on average (one anti-entropy round, 10 s, less
// on 7 of the 12 seeds, two on one, none slower by more than 0.1 s),
// bytes on the wire / minimum 2.768 -> 2.759, 25-381
// catch-ups a run. What it repairs, seed 4: two dots of team://t1 written
// in a partition were lacked by 56 of its 61 holders at the heal, and
// they reached them only at anti-entropy rounds 10 s apart (three). Tried
// and not kept (seeds 1-6): every sync's gain caught up, without the age
// bound (1,177-1,803 catch-ups a run, +0.04 bytes / minimum); catch-ups only
// after gap, anti-entropy, heal and spread answers (converge 21.9 s on
// seeds 1-6 against 24.0 s before, where this gives 15.8 s); a spread of
// every repair of those causes, however small (converge 12.0 s, bytes
// +0.10); and anti-entropy rounds at a random phase per node rather than
// all at once (no change).

// catchUpAge: a sync's gain whose newest write is younger than this is
// not caught up (the tree and its repairs are still carrying it). On
// seeds 1-6 of the command above, 2 s caught up more (84-547 a run
// against 41-381) for the same times to converge and bytes / minimum
// 2.702 -> 2.717; 10 s caught up fewer and left seeds 3 and 5 a round
// slower (15.5 -> 25.3 s).
const catchUpAge = 5 * time.Second

// noteCatchUp keeps ns's context before a sync brings content, if this
// node may write ns and it has a tree (catchUp at the next Tick).
func (e *Engine) noteCatchUp(ns string) {
	if t := e.trees[ns]; t != nil && t.catchBase == nil && e.pol.ReplicaMayWrite(e.cfg.Replica, ns) {
		t.catchBase = e.st.Context(ns).Clone()
	}
}

// catchUp sends what the syncs since the last Tick brought to the peers
// that told this node their context of t.ns within AntiEntropyInterval,
// held then everything this node held before those syncs, and lack some
// of it, if its newest write is catchUpAge old.
func (e *Engine) catchUp(t *tree) {
	base := t.catchBase
	if base == nil {
		return
	}
	t.catchBase = nil
	ctx := e.st.Context(t.ns)
	if len(base.Missing(ctx)) == 0 || !e.pol.ReplicaMayWrite(e.cfg.Replica, t.ns) {
		return
	}
	// The peers that told lately and may read come first; the age of
	// the gain (one lookup of the dot index) next, since most gains are
	// repairs of young writes; only then are the told contexts decoded.
	var told []*peerState
	for _, id := range e.sortedPeers() {
		q := e.peers[id]
		if c, ok := q.told[t.ns]; ok && e.now.Sub(c.at) <= e.cfg.AntiEntropyInterval && e.pol.PeerMayRead(q.Peer, t.ns) {
			told = append(told, q)
		}
	}
	if len(told) == 0 {
		return
	}
	var newest crdt.Timestamp
	if _, err := e.st.Missing(t.ns, base, func(_ string, rec *crdt.Record) error {
		newest = max(newest, rec.MaxTimestamp())
		return nil
	}); err != nil || e.now.Sub(newest.Time()) < catchUpAge {
		return
	}
	for _, q := range told {
		theirs, err := crdt.DecodeContext(q.told[t.ns].enc, e.cfg.Limits)
		if err != nil || len(theirs.Missing(base)) > 0 || len(theirs.Missing(ctx)) == 0 {
			continue
		}
		if e.sendMissing(q, t.ns, ctx, theirs, nil) {
			e.treeStats.CatchUps++
		}
	}
}
