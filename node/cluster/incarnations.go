package cluster

import (
	"cmp"
	"crypto/ed25519"
	"maps"
	"slices"

	"github.com/mnemohq/mnemo/sync/replica"
)

// Incarnations: which of a node's sightings the loop talks to.
//
// A node restarted on new ports comes back as a new incarnation
// (Advert.Incarnation) while the membership still lists the old one alive,
// until its failure detector gives up on it. The loop addresses one
// incarnation per node: the newest whose address has proved the node's key
// (Prover), or the one it already addresses. An incarnation announced
// beside it is proved before anything moves to it; then the loop sends
// there, and the engine starts the peer over (replica.Peer.Incarnation):
// a sync of every shared namespace at once, both ways, since the
// restarted node syncs with every peer it finds.

// candidate names one incarnation of a node at one address.
type candidate struct {
	id   replica.PeerID
	inc  uint64
	addr string
}

func candidateOf(s Sighting) candidate {
	return candidate{replica.PeerID(s.NodeID), s.Incarnation, s.Addr}
}

// choose picks the incarnation of one node to address among alive (its
// alive sightings, in any order, at least one), given cur (the one
// addressed now, or nil) and proved (the candidates whose address proved
// the key). It returns the pick and the candidates worth proving.
//
// Trusted are the proved candidates and cur. The pick is the newest
// trusted one; with none, the newest of all (the transport still pins the
// key on every send, so an address nobody proved gets frames only if it
// holds the key). Worth proving are the unproved candidates newer than the
// pick, and, when the pick is not trusted and there is a choice, every
// unproved one: a fresh node that finds a live incarnation and an
// announced newer one it cannot reach must not stay on the newer.
func choose(alive []*Sighting, cur *Sighting, proved func(candidate) bool) (pick *Sighting, prove []Sighting) {
	sorted := slices.Clone(alive)
	slices.SortFunc(sorted, func(a, b *Sighting) int { // newest first; ties by address
		return cmp.Or(cmp.Compare(b.Incarnation, a.Incarnation), cmp.Compare(a.Addr, b.Addr))
	})
	trusted := func(s *Sighting) bool {
		c := candidateOf(*s)
		return proved(c) || cur != nil && c == candidateOf(*cur)
	}
	i := slices.IndexFunc(sorted, trusted)
	pick = sorted[max(i, 0)]
	for _, s := range sorted {
		if trusted(s) {
			continue
		}
		if s.Incarnation > pick.Incarnation || i < 0 && len(sorted) > 1 {
			prove = append(prove, *s)
		}
	}
	return pick, prove
}

// choosePeers picks the incarnation of each member to address (choose),
// starts the proofs it wants, and picks again when the driver proves one at
// once. ms is the membership; it returns the alive peers other than this
// node, each as the sighting addressed: a pointer into ms, which the
// loop keeps (l.sightings), not a copy per peer.
func (l *loop) choosePeers(ms []Sighting) map[replica.PeerID]*Sighting {
	byID := map[replica.PeerID][]*Sighting{}
	alive := map[candidate]bool{}
	for i := range ms {
		m := &ms[i]
		id := replica.PeerID(m.NodeID)
		if id == l.self || m.State != StateAlive || len(m.PublicKey) != ed25519.PublicKeySize {
			continue
		}
		byID[id] = append(byID[id], m)
		alive[candidateOf(*m)] = true
	}
	// Proofs of candidates no longer listed are forgotten (one that comes
	// back is proved again); proofs in flight end on their own.
	maps.DeleteFunc(l.proved, func(c candidate, _ bool) bool { return !alive[c] })
	isProved := func(c candidate) bool { return l.proved[c] }
	for {
		chosen := make(map[replica.PeerID]*Sighting, len(byID))
		l.wanted = map[candidate]Sighting{}
		for id, ss := range byID {
			var cur *Sighting
			if pi, ok := l.peers[id]; ok {
				cur = pi.member
			}
			pick, prove := choose(ss, cur, isProved)
			chosen[id] = pick
			for _, s := range prove {
				l.wanted[candidateOf(s)] = s
			}
		}
		if !l.startProofs() {
			return chosen
		}
	}
}

// startProofs asks the driver to prove each wanted candidate that is
// neither proved nor being proved, in a fixed order, and reports whether
// one was proved at once (then the choice must be made again).
func (l *loop) startProofs() (provedNow bool) {
	cs := slices.SortedFunc(maps.Keys(l.wanted), func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.inc, b.inc), cmp.Compare(a.addr, b.addr))
	})
	for _, c := range cs {
		if l.proved[c] || l.proving[c] {
			continue
		}
		s := l.wanted[c]
		if l.drv.prove(c, s.Addr, s.PublicKey) {
			l.proved[c] = true
			provedNow = true
			continue
		}
		l.proving[c] = true
	}
	return provedNow
}

// proofDone is the driver's report on a proof it ran: ok, the candidate's
// address holds its key. A failed proof is tried again on a later tick
// while the candidate is wanted.
func (l *loop) proofDone(c candidate, ok bool) {
	delete(l.proving, c)
	if _, wanted := l.wanted[c]; !wanted {
		return
	}
	if !ok {
		l.log.Debug("an announced incarnation did not prove its key", "peer", c.id, "incarnation", c.inc, "addr", c.addr)
		return
	}
	l.proved[c] = true
	l.setMembers(l.sightings)
}

// retryProofs runs on each tick: proofs that failed are tried again.
func (l *loop) retryProofs() {
	if l.startProofs() {
		l.setMembers(l.sightings)
	}
}
