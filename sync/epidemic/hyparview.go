package epidemic

import "slices"

// Join asks contact to let this node into the overlay (HyParView's JOIN).
// The membership layer gives the contact: any live member. If the node
// ends up alone (every active and passive peer gone), it joins through
// contact again.
func (n *Node) Join(contact PeerID) {
	if contact == n.cfg.Self || contact == "" {
		return
	}
	n.contact = contact
	if n.link(contact) != nil || n.requested(contact) {
		return
	}
	n.pending = append(n.pending, request{peer: contact, at: n.now, priority: true, join: true})
	n.joined = n.now
	n.send(contact, Message{Kind: KindJoin})
}

// Hint offers peers the membership layer knows of as candidates for the
// passive view (a random sample of them stays). A node whose active view
// is short asks them for a place at once.
func (n *Node) Hint(peers ...PeerID) {
	for _, p := range peers {
		n.addPassive(p, nil)
	}
	n.fill()
}

// PeerFailed reports that p cannot be reached: the transport lost or could
// not open its connection, or the membership layer declared it dead. It
// leaves both views, and a passive peer is asked to take its place.
func (n *Node) PeerFailed(p PeerID) {
	n.removeActive(p)
	n.passive = slices.DeleteFunc(n.passive, func(q PeerID) bool { return q == p })
	n.pending = slices.DeleteFunc(n.pending, func(r request) bool { return r.peer == p })
	for _, m := range n.missing {
		m.announcers = slices.DeleteFunc(m.announcers, func(q PeerID) bool { return q == p })
	}
	n.fill()
}

// addActive puts p in the active view, dropping a random peer into the
// passive view (with a KindDisconnect) if the view is full.
func (n *Node) addActive(p PeerID) {
	if p == n.cfg.Self || n.link(p) != nil {
		return
	}
	n.passive = slices.DeleteFunc(n.passive, func(q PeerID) bool { return q == p })
	n.pending = slices.DeleteFunc(n.pending, func(r request) bool { return r.peer == p })
	if len(n.active) >= n.cfg.ActiveSize {
		d := n.active[n.rng.IntN(len(n.active))].id
		n.removeActive(d)
		n.send(d, Message{Kind: KindDisconnect})
		n.addPassive(d, nil)
	}
	// A new link starts eager (Plumtree's NeighborUp): the first
	// broadcasts over it find out whether it belongs to the tree.
	l := &link{id: p, eager: true, heard: n.now}
	n.active = append(n.active, l)
	n.viewChanged = true
	// Links are made when others fail, while payloads are under way: a
	// payload that passed before this link existed may have missed p
	// with its old links. Announce what came lately; p asks for what it
	// lacks.
	k := 0
	n.rcv.recent(n.now.Add(-n.cfg.RecentAnnounce), func(id MsgID, e *entry) bool {
		if n.rcv.origin(e) != p && n.rcv.from(e) != p {
			n.announce(l, Announcement{ID: id, Round: e.round})
			k++
		}
		return k < n.cfg.IHaveMaxBatch
	})
}

// Reannounce queues announcements to p, an active peer, of those of ids
// received here that p neither sent nor broadcast (their payloads kept or
// not): the driver's news that they may have been lost on their way to p
// (a link silent for long: a partition that healed). p asks for what it
// lacks (KindWant), which tells the driver that the link lost them. It
// returns the ids queued: none when p is not an active peer.
func (n *Node) Reannounce(p PeerID, ids ...MsgID) []MsgID {
	l := n.link(p)
	if l == nil {
		return nil
	}
	var out []MsgID
	for _, id := range ids {
		if e := n.rcv.get(id); e != nil && n.rcv.origin(e) != p && n.rcv.from(e) != p {
			n.announce(l, Announcement{ID: id, Round: e.round})
			out = append(out, id)
		}
	}
	return out
}

// Probe asks each active peer heard nothing from for ProbeSilence, and
// not probed for as long, whether it still holds the link: a neighbor
// request without priority, which a peer holding the link accepts, and
// one without it accepts if it has room (the link is whole again) or
// refuses (the link leaves this end too, and a passive peer is asked to
// take its place). The driver calls it on news that the tree may not be
// reaching this node: a payload of the overlay that came another way. A
// link known at one end only carries nothing from the other, so a node
// whose links were all such heard nothing of the tree and announced
// nothing over it, and no other repair reached them (the answer to
// Plumtree traffic outside the view needs traffic).
func (n *Node) Probe() {
	for _, l := range n.active {
		if n.now.Sub(l.heard) >= n.cfg.ProbeSilence && n.now.Sub(l.probed) >= n.cfg.ProbeSilence {
			l.probed = n.now
			n.send(l.id, Message{Kind: KindNeighbor})
		}
	}
}

// linkRefused takes p, which has just said it holds no link to this node
// (a disconnect, or a probe refused), out of the active view into the
// passive one, not to be asked again before the next shuffle, and asks a
// passive peer in its place. Nothing happens if p is not active.
func (n *Node) linkRefused(p PeerID) {
	if n.removeActive(p) != nil {
		n.addPassive(p, nil)
		n.markTried(p)
		n.fill()
	}
}

// removeActive takes p out of the active view, dropping its waiting
// announcements, and returns its link (nil if it was not there).
func (n *Node) removeActive(p PeerID) *link {
	for i, l := range n.active {
		if l.id == p {
			n.active = slices.Delete(n.active, i, i+1)
			n.viewChanged = true
			for _, t := range n.trees {
				t.eager = slices.DeleteFunc(t.eager, func(q PeerID) bool { return q == p })
			}
			return l
		}
	}
	return nil
}

// addPassive puts p in the passive view. A full view drops a random peer,
// one of prefer if any is there (a shuffle's reply replaces what the
// shuffle sent).
func (n *Node) addPassive(p PeerID, prefer []PeerID) {
	if p == n.cfg.Self || n.link(p) != nil || slices.Contains(n.passive, p) {
		return
	}
	if len(n.passive) >= n.cfg.PassiveSize {
		i := -1
		for _, q := range prefer {
			if j := slices.Index(n.passive, q); j >= 0 {
				i = j
				break
			}
		}
		if i < 0 {
			i = n.rng.IntN(len(n.passive))
		}
		n.passive = slices.Delete(n.passive, i, i+1)
	}
	n.passive = append(n.passive, p)
}

// fill asks passive peers for a place while the active view and the
// requests under way fall short of ActiveSize. Each passive peer is asked
// at most once per ShuffleInterval, except by a node with no link. A
// request with priority must be accepted (the receiver drops a random
// peer if full): HyParView asks so only when the active view is empty;
// here also when it is two or more short, since a node that failures left
// with few links otherwise waits for the rare peer with room, and
// broadcasts reach it over few links. The peer dropped goes from full to
// one short, and asks without priority, so requests do not cascade. A
// node with neither view joins through its contact again.
func (n *Node) fill() {
	// A node with no link asks even the passive peers tried since the last
	// shuffle: its request has priority, which no peer refuses. Without
	// that, a node whose passive peers had all said no to a plain request
	// and whose one link then failed stayed alone until the next shuffle,
	// its broadcasts reaching no one (node/cluster's
	// TestTreesLeaveUnreachablePeer, one run in ~40: 30 s).
	lone := len(n.active) == 0
	for len(n.active)+len(n.pending) < n.cfg.ActiveSize {
		var cands []PeerID
		for _, p := range n.passive {
			if (lone || !n.tried[p]) && !n.requested(p) {
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 {
			break
		}
		p := cands[n.rng.IntN(len(cands))]
		n.markTried(p)
		prio := len(n.active) <= n.cfg.ActiveSize-2 || len(n.active) == 0
		n.pending = append(n.pending, request{peer: p, at: n.now, priority: prio})
		n.send(p, Message{Kind: KindNeighbor, Priority: prio})
	}
	if len(n.active) == 0 && len(n.pending) == 0 && len(n.passive) == 0 && n.contact != "" &&
		n.now.Sub(n.joined) >= n.cfg.NeighborTimeout {
		// At most once a NeighborTimeout: a contact that is down is
		// reported failed at once, and would be asked again at once.
		n.Join(n.contact)
	}
}

// markTried records that p was asked (or said no) since the last shuffle.
func (n *Node) markTried(p PeerID) {
	if len(n.tried) >= 2*n.cfg.PassiveSize {
		clear(n.tried) // a passive view refreshed faster than shuffles
	}
	n.tried[p] = true
}

// expireRequests gives up requests unanswered for NeighborTimeout: the
// peer is taken for dead and leaves the passive view (a join's contact is
// asked again by fill).
func (n *Node) expireRequests() {
	var gone []PeerID
	n.pending = slices.DeleteFunc(n.pending, func(r request) bool {
		if n.now.Sub(r.at) < n.cfg.NeighborTimeout {
			return false
		}
		if !r.join {
			gone = append(gone, r.peer)
		}
		return true
	})
	for _, p := range gone {
		n.passive = slices.DeleteFunc(n.passive, func(q PeerID) bool { return q == p })
	}
}

func (n *Node) onJoin(from PeerID) {
	n.addActive(from)
	n.send(from, Message{Kind: KindNeighborReply, Accept: true})
	for _, l := range n.active {
		if l.id != from {
			n.send(l.id, Message{Kind: KindForwardJoin, Peer: from, TTL: n.cfg.ActiveWalk})
		}
	}
}

// onForwardJoin takes the joining node p into the active view where the
// walk ends, into the passive view where it passes PassiveWalk, and walks
// on otherwise.
func (n *Node) onForwardJoin(from, p PeerID, ttl int) {
	if p == n.cfg.Self {
		return
	}
	if ttl == n.cfg.PassiveWalk {
		n.addPassive(p, nil)
	}
	var next []PeerID
	if ttl > 0 {
		for _, l := range n.active {
			if l.id != from && l.id != p {
				next = append(next, l.id)
			}
		}
	}
	if len(next) == 0 {
		// The walk ends here. A link to p this node already has may be
		// one p lost (p joins again when alone): ask all the same.
		n.addActive(p)
		n.send(p, Message{Kind: KindNeighbor, Priority: true})
		return
	}
	n.send(next[n.rng.IntN(len(next))], Message{Kind: KindForwardJoin, Peer: p, TTL: ttl - 1})
}

func (n *Node) onNeighbor(from PeerID, priority bool) {
	accept := n.link(from) != nil || priority || len(n.active) < n.cfg.ActiveSize
	if accept {
		n.addActive(from)
	}
	n.send(from, Message{Kind: KindNeighborReply, Accept: accept})
}

func (n *Node) onNeighborReply(from PeerID, accept bool) {
	i := slices.IndexFunc(n.pending, func(r request) bool { return r.peer == from })
	if i < 0 {
		// Not asked (or given up): an accepting peer now holds a link
		// this node does not want; a refusing one, asked by Probe, does
		// not hold the link this node does.
		switch l := n.link(from); {
		case accept && l == nil:
			n.send(from, Message{Kind: KindDisconnect})
			n.addPassive(from, nil)
		case !accept:
			n.linkRefused(from)
		}
		return
	}
	r := n.pending[i]
	n.pending = slices.Delete(n.pending, i, i+1)
	switch {
	case !accept || n.link(from) != nil:
	case len(n.active) < n.cfg.ActiveSize || r.priority:
		n.addActive(from)
	default:
		// Filled meanwhile by requests from others.
		n.send(from, Message{Kind: KindDisconnect})
		n.addPassive(from, nil)
	}
	n.fill()
}

// sendShuffle starts a shuffle: this node, a few active and a few passive
// peers walk to a random node, which answers with as many of its passive
// view. None with Config.NoShuffle.
func (n *Node) sendShuffle() {
	if len(n.active) == 0 || n.cfg.NoShuffle {
		return
	}
	to := n.active[n.rng.IntN(len(n.active))].id
	peers := []PeerID{n.cfg.Self}
	var act []PeerID
	for _, l := range n.active {
		if l.id != to {
			act = append(act, l.id)
		}
	}
	peers = append(peers, n.sample(act, n.cfg.ShuffleActive)...)
	peers = append(peers, n.sample(n.passive, n.cfg.ShufflePassive)...)
	n.shuffled = peers
	n.send(to, Message{Kind: KindShuffle, Peer: n.cfg.Self, TTL: n.cfg.ActiveWalk, Peers: peers})
}

func (n *Node) onShuffle(from PeerID, m Message) {
	if m.Peer == n.cfg.Self {
		return
	}
	if m.TTL > 1 {
		var next []PeerID
		for _, l := range n.active {
			if l.id != from && l.id != m.Peer {
				next = append(next, l.id)
			}
		}
		if len(next) > 0 {
			m.TTL--
			n.send(next[n.rng.IntN(len(next))], m)
			return
		}
	}
	var cands []PeerID
	for _, p := range n.passive {
		if p != m.Peer && !contains(m.Peers, p) {
			cands = append(cands, p) // what the origin does not have
		}
	}
	reply := n.sample(cands, len(m.Peers))
	n.send(m.Peer, Message{Kind: KindShuffleReply, Peers: reply})
	for _, p := range m.Peers {
		n.addPassive(p, reply)
	}
}

// sample returns k random elements of s (all of them if fewer), in a
// new slice.
func (n *Node) sample(s []PeerID, k int) []PeerID {
	s = slices.Clone(s)
	n.rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s[:min(k, len(s))]
}
