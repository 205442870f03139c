package cluster

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Pulling the bindings a refused delta lacked. Content and bindings
// travel apart, so a delta may arrive before the binding that says which
// agents its writer's node hosts: the engine refuses it when it finds no
// right of the writer's replica to write the namespace
// (replica.WriterError), the memory service when a record's author is not
// hosted by the node of the replica that wrote it (acl.ErrDenied). The
// peer that sent the delta holds those bindings, or it could not have
// accepted the delta itself (a relay, a sync answer) or written it (its
// own). So the node asks that peer at once for the bindings of the
// delta's writers (a Bindings frame with BindingsOf) instead of waiting
// for the digest exchange to bring them (up to BindingsInterval, or
// never when the peer's digest round skips this node). The answer is a
// Bindings frame without a digest; admitting what it brings resyncs the
// refused namespaces from their senders (resyncRefused). A writer bound
// nowhere (a forged author) gets an answer of nothing, or none: each
// (peer, replica) is pulled at most once per bindingsPullGap, and at
// most maxPullsPerPeer replicas of a peer are remembered, so refusals a
// member provokes cost a small frame each, never a storm.

// bindingsPullGap is the least time between two pulls of one replica's
// bindings from one peer.
const bindingsPullGap = time.Second

// maxPullsPerPeer bounds the replicas one pull names, and those
// remembered as pulled from one peer.
const maxPullsPerPeer = 64

// pullForRejection pulls from the sender the bindings of the writer a
// refusal of namespace ns names: the engine's (replica.WriterError, with
// the keys that signed acl records of the delta which did not count for
// want of their signer's binding: deltaPolicy noted them), or, for a
// delta the memory service refused for its authors or signers
// (acl.ErrDenied, acl.ErrNotAuthorized), every replica whose writes it
// carries (d) and those signers. The loop calls it for each of the
// service's refusals, with the delta, and for each of the engine's
// Rejections, without: those include the service's refusals again
// (Advance reports them), which then pull nothing more. It returns the
// replicas whose bindings the refusal lacked (pulled, or pulled lately).
func (l *loop) pullForRejection(from replica.PeerID, ns string, err error, d *crdt.Map) []crdt.ReplicaID {
	var we *replica.WriterError
	switch {
	case errors.As(err, &we):
		reps := append([]crdt.ReplicaID{we.Replica}, l.deltaSigners[ns]...)
		delete(l.deltaSigners, ns)
		l.pullBindings(from, reps)
		return reps
	case d != nil && (errors.Is(err, acl.ErrDenied) || errors.Is(err, acl.ErrNotAuthorized)):
		reps := dotReplicasOf(d)
		if addr, perr := namespace.Parse(ns); perr == nil {
			if pol := l.svc.PolicyWithDelta(ns, d); pol != nil {
				for r := range l.unboundSignersIn(pol, addr, nil) {
					if !slices.Contains(reps, r) {
						reps = append(reps, r)
					}
				}
			}
		}
		l.pullBindings(from, reps)
		return reps
	}
	return nil
}

// dotReplicasOf lists, sorted, the replicas of the dots of d's records
// (at most maxPullsPerPeer): the nodes that wrote them.
func dotReplicasOf(d *crdt.Map) []crdt.ReplicaID {
	seen := map[crdt.ReplicaID]bool{}
	d.Records(func(_ string, r *crdt.Record) bool {
		for _, dot := range r.Dots() {
			seen[dot.Replica] = true
		}
		return len(seen) < maxPullsPerPeer
	})
	return slices.Sorted(maps.Keys(seen))
}

// pullBindings asks peer from for the bindings of reps, but for this
// node's own replica and those pulled from it in the last
// bindingsPullGap.
func (l *loop) pullBindings(from replica.PeerID, reps []crdt.ReplicaID) {
	now := l.cfg.Clock.Now()
	pulled := l.bx.pulled[from]
	for r, at := range pulled {
		if now.Sub(at) >= bindingsPullGap {
			delete(pulled, r)
		}
	}
	var ask []uint64
	for _, r := range reps {
		if _, recent := pulled[r]; recent || r == l.replica || len(pulled) >= maxPullsPerPeer {
			continue
		}
		if pulled == nil {
			pulled = map[crdt.ReplicaID]time.Time{}
			l.bx.pulled[from] = pulled
		}
		pulled[r] = now
		ask = append(ask, uint64(r))
	}
	if len(ask) == 0 {
		return
	}
	l.pulls.Add(1)
	l.sendFrameTo([]replica.PeerID{from}, &wire.Message{Kind: wire.KindBindings, BindingsOf: ask})
}

// answerPull sends peer from the bindings held whose key is of one of the
// replicas its pull names, in the directory's order (a hand-over after
// the binding it moves), if there are any. The frame carries no digest,
// so the receiver takes it for no answer to an index it asked with
// (receiveBindings).
func (l *loop) answerPull(from replica.PeerID, reps []uint64) {
	want := make(map[crdt.ReplicaID]bool, len(reps))
	for _, r := range reps {
		want[crdt.ReplicaID(r)] = true
	}
	m := &wire.Message{Kind: wire.KindBindings}
	l.knownMu.RLock()
	for i, r := range l.bindingReps {
		if want[r] && len(m.Bindings) < MaxBindingsPerFrame {
			m.Bindings = append(m.Bindings, l.bindingEncs[i])
		}
	}
	l.knownMu.RUnlock()
	if want[l.replica] {
		l.bx.pulledBy[from] = true
	}
	if len(m.Bindings) > 0 {
		l.sendFrameTo([]replica.PeerID{from}, m)
	}
}

// pullHeldWriters pulls again, each tick, the bindings of the writers
// whose deltas the engine holds for their right (replica.HeldWriters)
// from the peers those came from: a pull or its answer lost would
// otherwise leave them held until the engine gives up and asks for a
// sync, which brings the content again (and is refused again while the
// binding is still missing). pullBindings' gap keeps it to one pull of a
// (peer, replica) per bindingsPullGap.
func (l *loop) pullHeldWriters() {
	var from replica.PeerID
	var reps []crdt.ReplicaID
	for _, hw := range l.eng.HeldWriters() {
		if hw.From != from && len(reps) > 0 {
			l.pullBindings(from, reps)
			reps = reps[:0]
		}
		from = hw.From
		reps = append(reps, hw.Replica)
	}
	if len(reps) > 0 {
		l.pullBindings(from, reps)
	}
}
