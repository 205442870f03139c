package epidemic

import (
	"slices"
	"time"
)

// tree is one origin's spanning tree as this node sees it: the links its
// payloads are pushed over. Each origin has its own, so a tree is cut and
// grafted for one source's paths only, and settles (doc.go, "Broadcast").
type tree struct {
	eager []PeerID
	used  uint64 // Node.treeClock when last used
}

// tree returns origin's tree, made from the links' last states if new
// (dropping the least recently used tree beyond MaxTrees).
func (n *Node) tree(origin PeerID) *tree {
	n.treeClock++
	if t := n.trees[origin]; t != nil {
		t.used = n.treeClock
		return t
	}
	if len(n.trees) >= n.cfg.MaxTrees {
		var old PeerID
		var oldest uint64
		for o, t := range n.trees {
			if old == "" || t.used < oldest || t.used == oldest && o < old {
				old, oldest = o, t.used
			}
		}
		delete(n.trees, old)
	}
	t := &tree{used: n.treeClock}
	for _, l := range n.active {
		if l.eager || origin == n.cfg.Self {
			// This node's own tree starts with every link: it is the
			// root, and its first broadcast leaves now, not with the
			// next announcements.
			t.eager = append(t.eager, l.id)
		}
	}
	n.trees[origin] = t
	return t
}

// setEager makes p's link eager or lazy in t (if p is in the active view),
// and records it as the link's last state.
func (n *Node) setEager(t *tree, p PeerID, eager bool) {
	l := n.link(p)
	if l == nil {
		return
	}
	l.eager = eager
	i := slices.Index(t.eager, p)
	switch {
	case eager && i < 0:
		t.eager = append(t.eager, p)
	case !eager && i >= 0:
		t.eager = slices.Delete(t.eager, i, i+1)
	}
}

// Broadcast sends a payload originated here to the overlay: eagerly over
// this node's tree, announced over the other links. It reports false (and
// sends nothing) if id was already broadcast or received. The payload is
// kept, not copied, for PayloadTTL to answer grafts: the caller must not
// modify it. It is not delivered back to this node.
func (n *Node) Broadcast(id MsgID, payload []byte) bool {
	if n.rcv.get(id) != nil {
		return false
	}
	self := n.cfg.Self
	n.rcv.add(arrival{id: id, at: n.now, payload: payload, origin: self}, nil)
	var skip []PeerID
	if ms := n.missing[id]; ms != nil {
		skip = ms.announcers
		n.dropMissing(id)
	}
	n.forward(n.tree(self), self, id, payload, 0, "", skip)
	return true
}

// forward passes on a payload of origin that arrived in round hops from
// from ("" when broadcast here): eagerly over t's links, announced over
// the others except those that announced it here (skip) and origin.
func (n *Node) forward(t *tree, origin PeerID, id MsgID, payload []byte, round int, from PeerID, skip []PeerID) {
	for _, l := range n.active {
		switch {
		case l.id == from, l.id == origin:
		case contains(t.eager, l.id):
			n.send(l.id, Message{Kind: KindGossip, ID: id, Origin: origin, Payload: payload, Round: round + 1})
		case !contains(skip, l.id):
			n.announce(l, Announcement{ID: id, Round: round})
		}
	}
}

func contains(s []PeerID, p PeerID) bool {
	for _, q := range s {
		if q == p {
			return true
		}
	}
	return false
}

// announce queues an announcement for l's next IHave.
func (n *Node) announce(l *link, a Announcement) {
	if len(l.lazy) == 0 {
		l.lazySince = n.now
		n.lazyDue = earlier(n.lazyDue, n.now.Add(n.cfg.IHaveInterval))
	}
	l.lazy = append(l.lazy, a)
	if len(l.lazy) >= n.cfg.IHaveMaxBatch {
		n.flushLazy(l)
	}
}

func (n *Node) flushLazy(l *link) {
	n.send(l.id, Message{Kind: KindIHave, IHave: l.lazy})
	l.lazy = nil
}

func (n *Node) onGossip(from PeerID, m Message) {
	t := n.tree(m.Origin)
	if e := n.rcv.get(m.ID); e != nil {
		n.stats.Duplicates++
		if !contains(n.rcv.askedOf(m.ID), from) && n.link(from) != nil {
			// A push of a payload already here: origin's tree has a
			// cycle through from, or a slower path than the one that
			// won. Cut it: both ends make the link lazy in that tree
			// (from pushes over it, whatever this end thought). The
			// answer to a want the eager copy beat is no push.
			n.setEager(t, from, false)
			n.send(from, Message{Kind: KindPrune, Origin: m.Origin})
		}
		return
	}
	var skip, asked []PeerID
	ms := n.missing[m.ID]
	if ms != nil {
		skip, asked = ms.announcers, ms.asked
		n.dropMissing(m.ID)
	}
	e := n.rcv.add(arrival{id: m.ID, at: n.now, payload: m.Payload, round: m.Round, from: from, origin: m.Origin}, asked)
	n.stats.Delivered++
	n.ready.Deliver = append(n.ready.Deliver, Delivery{ID: m.ID, Payload: m.Payload, Origin: m.Origin, From: from, Round: m.Round})
	if contains(asked, from) && n.link(from) != nil && !contains(t.eager, from) {
		// Pulled before origin's tree brought it (lost, or late): the
		// link that answered joins the tree; the eager copy, if it still
		// comes, prunes the slower link.
		n.send(from, Message{Kind: KindGraft, Origin: m.Origin})
	}
	n.setEager(t, from, true)
	if ms != nil && ms.best != "" {
		// Announced here by a peer on a shorter path than the eager copy
		// took: the tree optimisation, before the payload goes on.
		n.optimize(e, ms.best, ms.bestRound)
	}
	n.forward(t, m.Origin, m.ID, m.Payload, m.Round, from, skip)
}

func (n *Node) onIHave(from PeerID, anns []Announcement) {
	for _, a := range anns {
		if e := n.rcv.get(a.ID); e != nil {
			if l := n.link(from); l != nil {
				// from has it: the announcement waiting for it is moot.
				l.lazy = slices.DeleteFunc(l.lazy, func(b Announcement) bool { return b.ID == a.ID })
			}
			n.optimize(e, from, a.Round)
			continue
		}
		ms := n.missing[a.ID]
		if ms == nil {
			if len(n.missing) >= n.cfg.MaxMissing {
				n.dropOldestMissing()
			}
			n.seq++
			ms = &missing{seq: n.seq, deadline: n.now.Add(n.cfg.GraftTimeout)}
			n.missing[a.ID] = ms
			n.missingDue = earlier(n.missingDue, ms.deadline)
			n.order = append(n.order, missingRef{a.ID, n.seq})
		}
		if len(ms.announcers) < n.cfg.MaxAnnouncers && !contains(ms.announcers, from) {
			ms.announcers = append(ms.announcers, from)
		}
		if ms.best == "" || a.Round < ms.bestRound {
			ms.best, ms.bestRound = from, a.Round
		}
	}
}

// optimize is Plumtree's tree optimisation: a payload that reached from in
// round hops would have come here in round+1; if that beats the path it
// came by by Threshold hops, from's link joins the origin's tree and the
// other leaves it.
func (n *Node) optimize(e *entry, from PeerID, round int) {
	ef := n.rcv.from(e)
	if n.cfg.Threshold < 0 || ef == "" || ef == from || contains(n.rcv.askedOf(e.id), ef) || e.round-(round+1) < n.cfg.Threshold {
		return
	}
	if n.link(from) == nil || n.link(ef) == nil {
		return
	}
	origin := n.rcv.origin(e)
	t := n.tree(origin)
	n.setEager(t, from, true)
	n.send(from, Message{Kind: KindGraft, Origin: origin})
	n.setEager(t, ef, false)
	n.send(ef, Message{Kind: KindPrune, Origin: origin})
	n.rcv.setFrom(e, from)
	e.round = round + 1
}

// answer sends from the payloads ids that are still kept.
func (n *Node) answer(from PeerID, ids []MsgID) {
	for _, id := range ids {
		if e := n.rcv.get(id); e != nil {
			if p := n.rcv.payload(id); p != nil {
				n.send(from, Message{Kind: KindGossip, ID: id, Origin: n.rcv.origin(e), Payload: p, Round: e.round + 1})
			}
		}
	}
}

// pullMissing asks, for each payload whose wait is over, its next
// announcer (KindWant), one message per peer.
func (n *Node) pullMissing() {
	var to []PeerID
	var wants map[PeerID][]MsgID // made on the first want
	live := n.order[:0]
	n.missingDue = time.Time{}
	for _, r := range n.order {
		ms := n.missing[r.id]
		if ms == nil || ms.seq != r.seq {
			continue
		}
		if n.now.Before(ms.deadline) {
			live = append(live, r)
			n.missingDue = earlier(n.missingDue, ms.deadline)
			continue
		}
		if len(ms.announcers) == 0 || ms.tries >= n.cfg.GraftTries {
			n.stats.GaveUp++
			n.ready.GaveUp = append(n.ready.GaveUp, Missed{ID: r.id, Announcers: ms.announcers})
			delete(n.missing, r.id)
			continue
		}
		p := ms.announcers[ms.next%len(ms.announcers)]
		ms.next++
		ms.tries++
		ms.deadline = n.now.Add(n.cfg.GraftRetry)
		n.missingDue = earlier(n.missingDue, ms.deadline)
		if !contains(ms.asked, p) {
			ms.asked = append(ms.asked, p)
		}
		if wants == nil {
			wants = map[PeerID][]MsgID{}
		}
		if _, ok := wants[p]; !ok {
			to = append(to, p)
		}
		if len(wants[p]) < n.cfg.IHaveMaxBatch {
			wants[p] = append(wants[p], r.id)
		}
		live = append(live, r)
	}
	clear(n.order[len(live):])
	n.order = live
	for _, p := range to {
		n.send(p, Message{Kind: KindWant, IDs: wants[p]})
	}
}

func (n *Node) dropMissing(id MsgID) { delete(n.missing, id) }

// dropOldestMissing gives up the payload awaited longest.
func (n *Node) dropOldestMissing() {
	for i, r := range n.order {
		if ms := n.missing[r.id]; ms != nil && ms.seq == r.seq {
			n.ready.GaveUp = append(n.ready.GaveUp, Missed{ID: r.id, Announcers: ms.announcers})
			delete(n.missing, r.id)
			n.order = n.order[i+1:]
			n.stats.GaveUp++
			return
		}
	}
	n.order = n.order[:0]
}
