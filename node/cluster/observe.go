package cluster

import (
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Observer is told what the loop measures, for the node's metrics
// (node/metrics implements it). Its methods are called on the loop (the
// loop goroutine, or the caller of a Stepped) and must return at once.
// Durations are read from Config.Clock.
type Observer interface {
	// DeltaApplied: a peer's delta was applied here. lag is the time from
	// the newest write it carries (its timestamp, from its author's clock)
	// to now; live tells a delta pushed as it was written from one in a
	// digest sync answer (replica.Apply.Live), which may carry writes
	// made long before.
	DeltaApplied(live bool, lag time.Duration)
	// SyncAnswered: a digest sync of one namespace this node asked a peer
	// for was answered in full. took runs from the (last) request to the
	// last message of the answer; bytes are the namespace state the answer
	// carried (delta payloads, before wire compression).
	SyncAnswered(took time.Duration, bytes int)
	// Frame: a frame of kind (wire.Kind's name) of n bytes went to a
	// peer's sender (sent) or came in and decoded.
	Frame(sent bool, kind string, n int)
}

// maxSyncWatches bounds the syncs watched at once (one per peer and
// namespace asked); past it a request goes unmeasured.
const maxSyncWatches = 4096

type syncKey struct {
	peer replica.PeerID
	ns   string
}

// syncWatch is a sync request on its way: when it was (last) sent and
// what its answer has brought so far.
type syncWatch struct {
	since time.Time
	bytes int
}

// watchSync notes the start of each namespace's sync that m, a sync
// request handed to peer id's sender, asks for. Loop only; no-op without
// an Observer.
func (l *loop) watchSync(id replica.PeerID, m *wire.Message) {
	if l.cfg.Observer == nil {
		return
	}
	now := l.cfg.Clock.Now()
	for _, nc := range m.Contexts {
		k := syncKey{id, nc.Namespace}
		if _, ok := l.syncWatches[k]; ok || len(l.syncWatches) < maxSyncWatches {
			// A repeated request (the answer was lost, or anti-entropy
			// asks again) starts the clock again: what is measured is one
			// exchange, never the wait of a namespace the peer does not
			// answer for.
			l.syncWatches[k] = syncWatch{since: now}
		}
	}
}

// observeReceived notes a frame that came from peer id and decoded: its
// size, the state a sync answer brings, and the end of the answer (the
// message carrying the peer's own contexts comes last). Loop only.
func (l *loop) observeReceived(id replica.PeerID, m *wire.Message, frame []byte) {
	if l.cfg.Observer == nil {
		return
	}
	l.cfg.Observer.Frame(false, m.Kind.String(), len(frame))
	if m.Kind != wire.KindSyncReply || len(l.syncWatches) == 0 {
		return
	}
	for _, nd := range m.Deltas {
		k := syncKey{id, nd.Namespace}
		if w, ok := l.syncWatches[k]; ok {
			w.bytes += len(nd.Delta)
			l.syncWatches[k] = w
		}
	}
	now := l.cfg.Clock.Now()
	for _, nc := range m.Contexts {
		k := syncKey{id, nc.Namespace}
		if w, ok := l.syncWatches[k]; ok {
			delete(l.syncWatches, k)
			l.cfg.Observer.SyncAnswered(now.Sub(w.since), w.bytes)
		}
	}
}

// observeApplied notes a peer's delta applied at now.
func (l *loop) observeApplied(a replica.Apply, now time.Time) {
	if l.cfg.Observer == nil {
		return
	}
	lag := now.Sub(newestWrite(a.Delta))
	l.cfg.Observer.DeltaApplied(a.Live, max(lag, 0))
}

// newestWrite is the wall time of the newest timestamp d carries.
func newestWrite(d *crdt.Map) time.Time { return d.MaxTimestamp().Time() }

// forgetSyncWatches drops the watches of peers no longer addressed.
func (l *loop) forgetSyncWatches(alive map[replica.PeerID]peerInfo) {
	for k := range l.syncWatches {
		if _, ok := alive[k.peer]; !ok {
			delete(l.syncWatches, k)
		}
	}
}
