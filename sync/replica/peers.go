package replica

import (
	"hash/fnv"
	"maps"
	"slices"
)

// The membership: who the peers are (SetPeers, UpdatePeers), what each
// may read as it changes, and whom to ask when one becomes a reader.

// SetPeers replaces the membership. New peers get a digest sync of every
// namespace they should hold; departed peers' queues are dropped.
func (e *Engine) SetPeers(peers []Peer) {
	// Each peer listed is stamped with this call's number, and the peers
	// left unstamped have departed: a set of the ids listed was N entries
	// made at each call, and a node starting among N peers is called once
	// per binding it admits.
	e.listed++
	for _, p := range peers {
		e.setPeer(p)
	}
	for _, id := range e.sortedPeers() {
		if e.peers[id].listed != e.listed {
			delete(e.peers, id)
			e.order = nil
			e.peerGone(id)
		}
	}
	e.refreshTrees()
	if e.recheckWriters() {
		return // flushed at the next Tick, once they are applied (UpdatePeers)
	}
	e.flushAll()
}

// UpdatePeers is SetPeers for the peers listed only: each is added,
// restarted or updated as SetPeers does, and the peers not listed stay as
// they are. A driver whose change touches a few peers (their principals,
// when a binding arrives) saves the walk over every peer, which at N
// members and a binding from each is N² a node: 7% of the CPU of a
// 300-node simulation, touching each peer's state for nothing.
//
// Only the peers listed are flushed, in the order given (a caller sorts
// them, for a deterministic simulation): what their change lets go (a
// namespace they may read now) is theirs. What other peers have queued
// (a sync request a Step or Advance put for an author or a sender, which
// flush only the peer they came from) leaves at the next Tick, which
// flushes every peer: at most a tick later than when UpdatePeers flushed
// all. Flushing all was N a binding admitted, N³ at a start of N nodes:
// 22% of the CPU of a 1,000-node simulation's start.
func (e *Engine) UpdatePeers(peers []Peer) {
	for _, p := range peers {
		e.setPeer(p)
	}
	e.refreshTrees()
	if e.recheckWriters() {
		// Held deltas passed: the requests this change asks for go at
		// the next Tick, once they are applied, so that their contexts
		// hold them (a new reader's sync answered with what was just
		// released sent it a second time).
		return
	}
	e.sigs = map[[32]byte][]byte{}
	for _, p := range peers {
		if ps, ok := e.peers[p.ID]; ok {
			e.flush(ps)
		}
	}
	e.sigs = nil
}

// setPeer adds, restarts or updates p, stamped with the current SetPeers.
func (e *Engine) setPeer(p Peer) {
	if p.ID == e.cfg.Self {
		return
	}
	ps, ok := e.peers[p.ID]
	if !ok || ps.Incarnation != p.Incarnation {
		if ok {
			e.peerGone(p.ID) // restarted: its links in the trees went with it
		}
		// Only needSync (here) and joinWait (below) are made when a
		// peer is added (written by every path that marks a sync); the
		// other maps stay nil until traffic with the peer needs them
		// (put).
		ps = &peerState{needSync: map[string]SyncCause{}}
		ps.stats.Peer = p.ID
		ps.listed = e.listed
		e.peers[p.ID] = ps
		e.order = nil
		ps.Peer = p
		e.writersMayHaveCome() // a writer held for may be this one
		// Both sides of a pair see it join, and one request (asking
		// for the context back) repairs both ways: the node with the
		// smaller id asks at once, the other only if no request has
		// come by joinAt (a join that only it saw, or a request lost).
		ps.joinWait = map[string]SyncCause{}
		ps.joinAt = e.now.Add(e.cfg.RetransmitAfter)
		for _, ns := range e.st.Namespaces() {
			may := e.pol.PeerMayRead(p, ns)
			put(&ps.readable, ns, may)
			if may {
				if e.cfg.Self < p.ID {
					needSyncOf(ps, ns, CauseJoin)
				} else {
					ps.joinWait[ns] = CauseJoin
				}
			}
		}
		return
	}
	principalsChanged := !slices.Equal(ps.Principals, p.Principals)
	ps.Peer = p
	ps.listed = e.listed
	if principalsChanged {
		e.writersMayHaveCome()
		// What the peer may read follows the agents it hosts: a newly
		// bound agent's namespaces reach it by a digest sync.
		for _, ns := range e.st.Namespaces() {
			switch may := e.pol.PeerMayRead(p, ns); {
			case may && !ps.readable[ns]:
				e.askNewReader(ps, ns)
				put(&ps.readable, ns, true)
			case !may:
				put(&ps.readable, ns, false)
			}
		}
	}
}

// Peers lists the current peers, sorted.
func (e *Engine) Peers() []Peer {
	out := make([]Peer, 0, len(e.peers))
	for _, p := range e.peers {
		out = append(out, p.Peer)
	}
	slices.SortFunc(out, func(a, b Peer) int { return cmpStr(string(a.ID), string(b.ID)) })
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Stats returns every peer's counters, sorted by peer.
func (e *Engine) Stats() []PeerStats {
	out := make([]PeerStats, 0, len(e.peers))
	for _, p := range e.peers {
		s := p.stats
		s.QueueDeltas, s.QueueBytes, s.InFlight = p.qDeltas, p.qBytes, len(p.inflight)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PeerStats) int { return cmpStr(string(a.Peer), string(b.Peer)) })
	return out
}

// sortedPeers is the peers' ids in order, sorted again only after SetPeers
// changed them (every flush and tick walks them: 2.5% of the simulator's
// CPU when sorted each time). Callers must not change the slice; one
// taken before a change stays valid.
func (e *Engine) sortedPeers() []PeerID {
	if e.order == nil {
		e.order = slices.Sorted(maps.Keys(e.peers))
		e.writers = nil
	}
	return e.order
}

// writersOf lists ns's writers this node knows of (itself included),
// sorted; kept until the peers change or the next anti-entropy round.
func (e *Engine) writersOf(ns string) []PeerID {
	ids := e.sortedPeers()
	if ws, ok := e.writers[ns]; ok {
		return ws
	}
	var ws []PeerID
	for _, id := range ids {
		if p := e.peers[id]; e.pol.PeerMayRead(p.Peer, ns) && e.pol.ReplicaMayWrite(p.Replica, ns) {
			ws = append(ws, id)
		}
	}
	if e.pol.ReplicaMayWrite(e.cfg.Replica, ns) {
		i, _ := slices.BinarySearch(ws, e.cfg.Self)
		ws = slices.Insert(ws, i, e.cfg.Self)
	}
	put(&e.writers, ns, ws)
	return ws
}

// askNewReader asks p, which has just become a reader of ns, for a sync.
// Every writer that sees it asks, and the reader's context is empty in
// each request, so each would send it the whole namespace: at 1,000
// nodes those copies were 689 MB of 1,106 on the wire (go test ./sim -run
// TestScaleFigures -scale 1000/100/0.1). So one writer, picked by a hash
// of the reader and ns among the writers this node knows of, asks at
// once; the others wait RetransmitAfter (joinWait, as for a join) unless
// the reader asks first, and then send only what it still lacks.
func (e *Engine) askNewReader(p *peerState, ns string) {
	if !e.pol.ReplicaMayWrite(e.cfg.Replica, ns) {
		needSyncOf(p, ns, CauseNewReader)
		return
	}
	ws := e.writersOf(ns) // this node among them
	n := len(ws)
	at, found := slices.BinarySearch(ws, p.ID)
	if found {
		n-- // the new reader may write too, but holds none of ns yet
	}
	if n <= 1 {
		needSyncOf(p, ns, CauseNewReader)
		return
	}
	h := fnv.New64a()
	h.Write([]byte(p.ID))
	h.Write([]byte{0})
	h.Write([]byte(ns))
	i := int(h.Sum64() % uint64(n))
	if found && i >= at {
		i++ // skip the reader
	}
	if ws[i] == e.cfg.Self {
		needSyncOf(p, ns, CauseNewReader)
		return
	}
	if len(p.joinWait) == 0 {
		p.joinAt = e.now.Add(e.cfg.RetransmitAfter)
	}
	p.joinWait[ns] = CauseNewReader
}
