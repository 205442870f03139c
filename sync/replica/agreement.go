package replica

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
)

// What each peer last told this node of its causal contexts, for people
// asking whether the replicas agree. A peer tells its context of a
// namespace when it asks for a digest sync and when it answers one (the
// context that ends the answer); answerSync sees both and remembers the
// newest, with the engine's time. Nothing of it is ever sent: it is read
// only by Agreement, so the map's order reaches no peer.
//
// Bounds: one context per peer and namespace held (answerSync records
// only a namespace that passes ShouldHold; anti-entropy's tick forgets the
// namespaces no longer held), dropped with the peer's state when the peer
// leaves or restarts (SetPeers). What is kept is the context's encoding,
// a few bytes per writing replica, and peers that tell the same bytes
// share one copy (remember); Agreement decodes them again, when someone
// looks. Kept decoded and unshared, the contexts held 10 MB of a 100-node
// simulator run's heap at its end; as kept now, the whole record (these
// bytes and the per-peer maps) holds about 6 MB, and the run's largest
// live heap went from 122 to 130 MB (GODEBUG=gctrace=1, mnemo sim --nodes
// 100 --ops 300 --seed 1 --loss 0.1).

// Agreement is how a peer's context of a namespace, as the peer last told
// it, compares with this node's context now.
type Agreement string

const (
	// AgreeEqual: both have seen exactly the same dots.
	AgreeEqual Agreement = "equal"
	// AgreeBehind: the peer lacks dots seen here and has seen none this
	// node lacks (a write made here since it told, say).
	AgreeBehind Agreement = "behind"
	// AgreeAhead: the peer has seen dots this node lacks, and lacks none
	// seen here.
	AgreeAhead Agreement = "ahead"
	// AgreeConcurrent: each has seen dots the other lacks.
	AgreeConcurrent Agreement = "concurrent"
)

// compareContexts says how theirs stands against ours.
func compareContexts(ours, theirs *crdt.Context) Agreement {
	if ours.Equal(theirs) {
		return AgreeEqual
	}
	theyLack := len(theirs.Missing(ours)) > 0
	weLack := len(ours.Missing(theirs)) > 0
	switch {
	case theyLack && weLack:
		return AgreeConcurrent
	case weLack:
		return AgreeAhead
	default:
		// Not equal, and we lack nothing of theirs: they lack something.
		return AgreeBehind
	}
}

// toldContext is a peer's context of one namespace, encoded as it came
// (it decoded then), and when it arrived.
type toldContext struct {
	enc []byte // never modified
	at  time.Time
}

// PeerAgreement is one peer's agreement on one namespace.
type PeerAgreement struct {
	Peer      PeerID    `json:"peer"`
	Namespace string    `json:"namespace"`
	Agreement Agreement `json:"agreement"`
	// Told is when the peer's context arrived, by the engine's clock (the
	// last Tick before it).
	Told time.Time `json:"told"`
}

// remember notes that p told enc (it decodes) as its context of ns.
// Converged peers tell the same bytes, so bytes equal to the last ones
// kept for ns are kept as those: in a quiet cluster a namespace costs one
// copy, not one per peer. enc may alias the frame: it is copied.
func (e *Engine) remember(p *peerState, ns string, enc []byte) {
	last, ok := e.toldLast[ns]
	if !ok || !bytes.Equal(last, enc) {
		last = bytes.Clone(enc)
		if e.toldLast == nil {
			e.toldLast = map[string][]byte{}
		}
		e.toldLast[ns] = last
	}
	if p.told == nil {
		p.told = map[string]toldContext{}
	}
	p.told[ns] = toldContext{enc: last, at: e.now}
}

// forgetUnheld drops what peers told of namespaces this node no longer
// holds.
func (e *Engine) forgetUnheld() {
	for ns := range e.toldLast {
		if !e.pol.ShouldHold(ns) {
			delete(e.toldLast, ns)
		}
	}
	for _, p := range e.peers {
		for ns := range p.told {
			if !e.pol.ShouldHold(ns) {
				delete(p.told, ns)
			}
		}
	}
}

// Agreement compares, for every peer and every namespace held of which
// the peer has told its context, that context with this node's context
// now; sorted by peer, then namespace. It changes nothing and sends
// nothing. A namespace no peer has told of yet is not listed.
func (e *Engine) Agreement() []PeerAgreement {
	ours := map[string]*crdt.Context{}
	var out []PeerAgreement
	for _, id := range e.sortedPeers() {
		p := e.peers[id]
		for _, ns := range slices.Sorted(maps.Keys(p.told)) {
			if !e.pol.ShouldHold(ns) {
				continue
			}
			c, ok := ours[ns]
			if !ok {
				c = e.st.Context(ns)
				ours[ns] = c
			}
			t := p.told[ns]
			theirs, err := crdt.DecodeContext(t.enc, e.cfg.Limits)
			if err != nil {
				continue // it decoded when it came: cannot happen
			}
			out = append(out, PeerAgreement{Peer: id, Namespace: ns, Agreement: compareContexts(c, theirs), Told: t.at})
		}
	}
	return out
}
