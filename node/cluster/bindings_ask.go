package cluster

import (
	"bytes"
	"hash/fnv"
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
// theirs of it.) So a settled cluster goes quiet once each pair has had
// its turn (one cycle of summaryTurn's, ⌈(N−1)/16⌉ intervals), where
// every peer was sent a summary each interval: N² frames each 30 s among
// N nodes. A summary lost on the way leaves the peer it was for
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
	}), len(l.senders), l.bx.lastSummary), bindingsSummary)
}

// bindingsSummaryFanout bounds the peers sent the digest each
// BindingsInterval, on average. The digest is the check that repairs lost
// bindings frames, and one peer holding more than a node, told, gets that
// node asking for all it lacks; so each node tells a few peers a round,
// and every pair of nodes has its turn once in a cycle of rounds. What it
// bounds is the burst: the first interval after a start (when the digests
// heard in the probes are stale) sent N² frames at once, a million at
// 1,000 nodes, 44 MB. The total is not cut: the turns go on until each
// pair has swapped its current digests, so the same frames are spread
// over about N/16 intervals (half an hour at 1,000 nodes). Cutting the
// total needs a node to take a few peers' equal digests for the rest's,
// which this exchange does not do yet.
const bindingsSummaryFanout = 16

// summaryTurn picks, of the peers ids (sorted) whose digests may differ
// from this node's, those whose turn is a round of BindingsInterval
// since the last one served, up to now's; all of them when they are
// bindingsSummaryFanout or fewer. Among members peers (all those this
// node sends to) the rounds go in cycles of ⌈members/fanout⌉, and a pair's turn
// is one round of each cycle, named by a hash of the two ids and counted
// from the Unix epoch: the same at both ends, so a node tells the peers
// that tell it, and each of its windows of the transport's idle timeout
// sees ~fanout peers, not twice as many. (The turns went round the ring
// of ids from each node's own before, so a node told the 16 after it and
// heard from the 16 before it: sim/doc.go, "Connections".) Ends that
// count members differently, or send at rounds far apart, still each
// tell the other once a cycle, only not in the same round.
func (x *bindingsExchange) summaryTurn(ids []replica.PeerID, members int, now time.Time) []replica.PeerID {
	round := uint64(now.UnixNano() / int64(BindingsInterval))
	first := x.served + 1
	if x.served == 0 || round <= x.served || round-x.served > 2 {
		// The first round, a clock set back, or many rounds missed (a
		// process stopped): this one alone. One round missed is the
		// sends' drift past a round's end, served now.
		first = round
	}
	x.served = round
	if len(ids) <= bindingsSummaryFanout {
		return ids
	}
	cycle := uint64(max(members, len(ids))+bindingsSummaryFanout-1) / bindingsSummaryFanout
	var turn []replica.PeerID
	for _, id := range ids {
		slot := pairSlot(x.self, id) % cycle
		for r := first; r <= round; r++ {
			if r%cycle == slot {
				turn = append(turn, id)
				break
			}
		}
	}
	return turn
}

// pairSlot names the turn of the pair a, b, the same whichever end asks.
func pairSlot(a, b replica.PeerID) uint64 {
	if b < a {
		a, b = b, a
	}
	h := fnv.New64a()
	h.Write([]byte(a))
	h.Write([]byte{0})
	h.Write([]byte(b))
	return h.Sum64()
}
