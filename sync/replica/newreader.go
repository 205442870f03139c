package replica

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// A new reader's history. When a grant makes a peer a reader of a
// namespace with history, every writer of it notices (at its next local
// write there) and each used to sync with the new reader at once: each
// found the reader's context empty and sent it the whole history, so a
// grant in a namespace with W writers cost W copies of it (14 of the 50 MB
// of sync answers in mnemo sim --nodes 100 --ops 1000 --seed 1 --loss 0.1
// --partitions 3 went to requesters holding nothing of the namespace).
//
// Now the writers take turns by rendezvous hashing of (writer, reader,
// namespace), which every writer computes alike from the writers it knows.
// The first syncs at once and holds its live deltas of the namespace back
// from the reader until its answer goes out, which carries them
// (joining). The others send their live deltas as usual — a reader that
// does not hold the grant yet refuses one, and its sender's retransmits
// and fallback repair that — and sync RetransmitAfter later, when the
// reader's context, which their requests ask back, holds the first one's
// history, so each sends only what the reader still lacks; if the first
// writer's answer was lost, they send the history again, as all did
// before. The others must not hold their live deltas back: a writer's
// first write in a namespace it learnt of after a peer joined flips every
// peer to "new reader" here, though most hold the namespace already, and a
// held delta would wait for a sync a second away (the in-memory cluster
// test, whose clock stands still, found that). Writers that disagree on
// who the writers are (a grant on its way) may both go first: a copy
// more, never a loss.

// historyFirst reports whether this node comes first among the writers of
// ns (peers that may write it, and this node) to bring reader its history.
func (e *Engine) historyFirst(reader *peerState, ns string) bool {
	mine := historyScore(e.cfg.Replica, reader.ID, ns)
	for _, p := range e.peers {
		if p == reader || !e.pol.ReplicaMayWrite(p.Replica, ns) {
			continue
		}
		if s := historyScore(p.Replica, reader.ID, ns); s > mine || s == mine && p.Replica > e.cfg.Replica {
			return false
		}
	}
	return true
}

func historyScore[R ~uint64](writer R, reader PeerID, ns string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(writer))
	h.Write(b[:])
	h.Write([]byte(reader))
	h.Write([]byte{0})
	h.Write([]byte(ns))
	return h.Sum64()
}

// bringHistory schedules this node's sync of ns with p, a new reader: at
// once if it comes first (it reports that), else RetransmitAfter later.
func (e *Engine) bringHistory(p *peerState, ns string) (first bool) {
	if e.historyFirst(p, ns) {
		p.needSync[ns] = true
		return true
	}
	if p.historyAt == nil {
		p.historyAt = map[string]time.Time{}
	}
	p.historyAt[ns] = e.now.Add(e.cfg.RetransmitAfter)
	return false
}

// historyDue turns p's scheduled history syncs that are due into sync
// requests.
func (e *Engine) historyDue(p *peerState, now time.Time) {
	for ns, at := range p.historyAt {
		if !now.Before(at) {
			delete(p.historyAt, ns)
			if e.pol.PeerMayRead(p.Peer, ns) {
				p.needSync[ns] = true
			}
		}
	}
}
