package cluster

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/sync/replica"
)

// Asking peers for their bindings: a probe to each peer not yet heard
// from, and after a digest that differs the index of what the peer holds,
// one peer at a time (askNext), again each tick until the sets agree; and
// the periodic digest that starts the asking when a frame was lost.

// askBindings sends a probe (this node's claims, its digest, asking for
// the peer's) to every peer not yet heard from and not probed in the last
// bindingsProbeRetry.
func (l *loop) askBindings() {
	if l.onDemand() {
		clear(l.bx.probing) // no probes on demand (bindings_demand.go)
		return
	}
	now := l.cfg.Clock.Now()
	var ids []replica.PeerID
	for id, p := range l.bx.probing {
		_, peer := l.peers[id]
		if _, out := l.senders[id]; !peer || !out || l.bx.heard[id] {
			delete(l.bx.probing, id) // a sender made again (setMembers) probes it again
			continue
		}
		if now.Sub(p.at) < bindingsProbeRetry {
			continue
		}
		l.bx.probing[id] = probed{at: now, tries: p.tries + 1}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	l.sendBindingsTo(ids, bindingsProbe)
}

// asked is a bindings index sent asking a peer for what this node lacks.
type asked struct {
	at    time.Time
	tries int
}

// bindingsAskTries bounds the asks in a row a peer leaves unanswered;
// after them, the next frame from it that shows it holds more starts over.
const bindingsAskTries = 3

// askIndex sends this node's index to from, asking for the bindings it
// lacks, and expects an answer (any frame of from's that asks nothing).
func (l *loop) askIndex(from replica.PeerID) {
	a := l.bx.asked[from]
	l.bx.asked[from] = asked{at: l.cfg.Clock.Now(), tries: a.tries + 1}
	l.sendBindingsTo([]replica.PeerID{from}, bindingsAsk)
}

// askBindingsAgain asks again the peers whose answer is overdue, and, once
// bindingsAskGap has passed since the last ask, the peer most worth asking
// (askNext).
//
// It also stores the peers' bindings admitted since the last tick
// (storeUnsavedBindings): the loop's tick calls it.
func (l *loop) askBindingsAgain(now time.Time) {
	l.storeUnsavedBindings()
	for _, id := range slices.Sorted(maps.Keys(l.bx.asked)) {
		a := l.bx.asked[id]
		switch {
		case now.Sub(a.at) < bindingsAskGap:
		case a.tries >= bindingsAskTries:
			delete(l.bx.asked, id)
		default:
			l.askIndex(id)
		}
	}
	l.askNext(now)
}

// askNext sends this node's index, once bindingsAskGap has passed since
// the last one it sent on its own account, to the peer wanted and not
// being asked that still holds bindings this node lacks (worthAsking) and
// the most bindings (the least id among equals).
func (l *loop) askNext(now time.Time) {
	if len(l.bx.want) == 0 || now.Sub(l.bx.lastIndexAsk) < bindingsAskGap {
		return
	}
	var best replica.PeerID
	var most uint64
	for _, id := range slices.Sorted(maps.Keys(l.bx.want)) {
		if _, ok := l.bx.asked[id]; ok {
			continue
		}
		if l.peers[id].peer.ID == "" || !l.worthAsking(id) {
			delete(l.bx.want, id)
			continue
		}
		if n, _ := digestCount(l.bx.sums[id]); best == "" || n > most {
			best, most = id, n
		}
	}
	if best != "" {
		delete(l.bx.want, best)
		l.bx.lastIndexAsk = now
		l.askIndex(best)
	}
}

// worthAsking reports whether peer id, by its last frame, may hold
// bindings this node lacks: its index named one this node still lacks;
// or its digest differs from this node's and says it holds at least as
// many bindings (or does not say), unless an exchange with it already
// ended on these two digests.
func (l *loop) worthAsking(id replica.PeerID) bool {
	if l.onDemand() {
		return false // an index would fetch every binding the peer holds (bindings_demand.go)
	}
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	if ids := l.bx.lacking[id]; len(ids) > 0 {
		for _, want := range ids {
			if !l.holds(want) {
				return true
			}
		}
		delete(l.bx.lacking, id)
	}
	theirs := l.bx.sums[id]
	if len(theirs) == 0 || bytes.Equal(theirs, l.bindingsSum) || l.bx.settled[id] == string(l.bindingsSum)+string(theirs) {
		return false
	}
	n, ok := digestCount(theirs)
	mine, _ := digestCount(l.bindingsSum)
	return !ok || n >= mine
}

// senderIDs lists, sorted, the peers with an outlet that want picks.
func (l *loop) senderIDs(want func(replica.PeerID) bool) []replica.PeerID {
	var ids []replica.PeerID
	for id := range l.senders {
		if want(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// sendBindingsSummary sends the digest of the bindings, each
// BindingsInterval, to bindingsSummaryFanout of the peers that may not
// know it or whose own may differ: the periodic check. A peer is skipped
// when its last frame here
// carried this node's digest, and this node's last frame to it did too.
// If the two sets differ now, the peer's changed since, so the digest it
// last heard of this node's differs from its own, and it sends. (Both
// skip only if each last heard the other's current digest; a set only
// grows while a node runs, so each then holds the other's: the same. A
// node that restarts has heard no digest yet, and its peers forget
// theirs of it.) So a settled cluster goes quiet after one interval,
// where every peer was sent a summary each interval: N² frames each 30 s
// among N nodes. A summary lost on the way leaves the peer it was for
// sending one each interval to its sender, which has nothing to answer:
// until either set changes, one frame an interval for that pair instead
// of two.
func (l *loop) sendBindingsSummary() {
	l.bx.lastSummary = l.cfg.Clock.Now()
	if l.onDemand() {
		return // no digest round on demand (bindings_demand.go)
	}
	l.knownMu.RLock()
	mine := l.bindingsSum
	l.knownMu.RUnlock()
	l.sendBindingsTo(l.bx.summaryTurn(l.senderIDs(func(id replica.PeerID) bool {
		return !bytes.Equal(l.bx.sums[id], mine) || !bytes.Equal(l.bx.told[id], mine)
	})), bindingsSummary)
}

// bindingsSummaryFanout bounds the peers sent the digest each
// BindingsInterval. The digest is the check that repairs lost bindings
// frames, and one peer holding more than a node, told, gets that node
// asking for all it lacks; so each node tells a few peers, in turns round
// the ring of ids, and every node hears from about as many in each
// interval. What it bounds is the burst: the first interval after a start
// (when the digests heard in the probes are stale) sent N² frames at once,
// a million at 1,000 nodes, 44 MB. The total is not cut: the turns go on,
// 16 a round, until each pair has swapped its current digests, so the
// same frames are spread over about N/16 intervals (half an hour at
// 1,000 nodes). Cutting the total needs a node to take a few peers' equal
// digests for the rest's, which this exchange does not do yet.
const bindingsSummaryFanout = 16

// summaryTurn picks, of the sorted peers ids, the bindingsSummaryFanout
// that follow the last one summarized in the ring of ids (this node's own
// at first, so the nodes' first turns spread over the ring), and notes
// the last of them; returned sorted.
func (x *bindingsExchange) summaryTurn(ids []replica.PeerID) []replica.PeerID {
	if len(ids) <= bindingsSummaryFanout {
		return ids
	}
	i, _ := slices.BinarySearch(ids, x.summarized)
	if i < len(ids) && ids[i] == x.summarized {
		i++
	}
	turn := make([]replica.PeerID, bindingsSummaryFanout)
	for j := range turn {
		turn[j] = ids[(i+j)%len(ids)]
	}
	x.summarized = turn[len(turn)-1]
	slices.Sort(turn)
	return turn
}
