package cluster

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/replica"
)

// Refusals waiting for a binding: content a peer sent that was refused
// because its author or sender may not write here, remembered per (peer,
// namespace) so that the binding that lets it pass, once admitted, asks
// that peer for it again (noteRefused, resyncRefused).

// maxRefused bounds the (peer, namespace) pairs remembered for a sync
// once the bindings change.
const maxRefused = 4096

// refusal is a (peer, namespace) pair's refused content, waiting for a
// binding: the replicas whose bindings it lacked (none known: any
// binding admitted may help), and when it was first refused.
type refusal struct {
	reps []crdt.ReplicaID
	at   time.Time
}

// noteRefused remembers a namespace whose content a peer sent was refused
// because its author or sender may not write it here: the binding that
// says who hosts that author may not have reached this node yet (deltas
// and bindings travel apart), and nothing else would ask for that content
// again before anti-entropy picks the pair (every peers × 10 s). reps are
// the replicas whose bindings the refusal lacked (pullForRejection), or,
// when it does not say, those the memory service's refusal of the same
// delta named (applyRefused).
func (l *loop) noteRefused(rj replica.Rejection, reps []crdt.ReplicaID) {
	if !errors.Is(rj.Err, replica.ErrNotAllowed) && !errors.Is(rj.Err, acl.ErrDenied) {
		return
	}
	if len(reps) == 0 {
		reps = l.applyRefused[refusedKey{rj.From, rj.Namespace}]
	}
	if _, ok := l.refusedFrom[rj.From][rj.Namespace]; ok {
		return
	}
	if l.refusedN >= maxRefused {
		l.dropStaleRefusals()
	}
	if l.refusedN >= maxRefused {
		return
	}
	if l.refusedFrom == nil {
		l.refusedFrom = map[replica.PeerID]map[string]refusal{}
	}
	if l.refusedFrom[rj.From] == nil {
		l.refusedFrom[rj.From] = map[string]refusal{}
	}
	l.refusedFrom[rj.From][rj.Namespace] = refusal{reps: reps, at: l.cfg.Clock.Now()}
	l.refusedN++
}

// dropStaleRefusals forgets the refusals that waited BindingsInterval
// for their binding: resyncRefused drops them at the next binding
// admitted, but until one is, they kept the map full, and a refusal
// then was not remembered at all (anti-entropy alone repaired it).
func (l *loop) dropStaleRefusals() {
	now := l.cfg.Clock.Now()
	for p, byNS := range l.refusedFrom {
		for ns, rf := range byNS {
			if now.Sub(rf.at) >= BindingsInterval {
				delete(byNS, ns)
				l.refusedN--
			}
		}
		if len(byNS) == 0 {
			delete(l.refusedFrom, p)
		}
	}
}

// refusedKey is a (peer, namespace) pair of applyRefused.
type refusedKey struct {
	peer replica.PeerID
	ns   string
}

// resyncRefused asks the peers whose content was refused (noteRefused)
// for a sync of those namespaces, when the bindings admitted since may let
// it pass (bound: the replicas whose bindings were admitted): a refusal
// that named the replicas it lacked once one of them is in bound, any
// other at once. The others wait for the binding they lack,
// BindingsInterval at most (then anti-entropy repairs them). A
// refusal that still holds is refused again and remembered again. Asking
// every pair at every change, when bindings came on demand one pull at a
// time (bindings_demand.go), asked the same syncs again and again: at
// 100 nodes most of the run's sync frames.
func (l *loop) resyncRefused(bound map[crdt.ReplicaID]bool) {
	now := l.cfg.Clock.Now()
	for _, p := range slices.Sorted(maps.Keys(l.refusedFrom)) {
		byNS := l.refusedFrom[p]
		for _, ns := range slices.Sorted(maps.Keys(byNS)) {
			rf := byNS[ns]
			switch {
			case len(rf.reps) == 0 || slices.ContainsFunc(rf.reps, func(r crdt.ReplicaID) bool { return bound[r] }):
				_ = l.eng.RequestSync(p, ns) // a peer gone since: nothing to ask
			case now.Sub(rf.at) < BindingsInterval:
				continue
			}
			delete(byNS, ns)
			l.refusedN--
		}
		if len(byNS) == 0 {
			delete(l.refusedFrom, p)
		}
	}
}
