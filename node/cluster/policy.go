package cluster

import (
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/sync/replica"
)

// storeState is the engine's view of the node's Badger store: the shared
// namespaces only.
type storeState struct{ svc *memory.Service }

var _ replica.State = storeState{}

func (s storeState) Namespaces() []string {
	var out []string
	for _, ns := range s.svc.Store().Namespaces() {
		if memory.Replicated(ns) {
			out = append(out, ns)
		}
	}
	return out
}

func (s storeState) Context(ns string) *crdt.Context { return s.svc.Store().Context(ns) }

func (s storeState) Missing(ns string, have *crdt.Context, fn func(string, *crdt.Record) error) (*crdt.Context, error) {
	return s.svc.Store().Missing(ns, have, fn)
}

func (s storeState) Retracted(ns string) ([]string, error) { return s.svc.Store().RetractedIDs(ns) }

// policy answers the engine from this node's access policy and the
// membership the loop keeps. It is called on the loop goroutine only.
type policy struct{ c *Cluster }

var _ replica.Policy = (*policy)(nil)

func (p *policy) ShouldHold(ns string) bool { return memory.Replicated(ns) }

func (p *policy) PeerMayRead(peer replica.Peer, ns string) bool {
	if !memory.Replicated(ns) {
		return false
	}
	for _, a := range peer.Principals {
		if p.c.svc.MayRead(a, ns) {
			return true
		}
	}
	return false
}

func (p *policy) ReplicaMayWrite(r crdt.ReplicaID, ns string) bool {
	var principals []namespace.Address
	if r == p.c.cfg.Identity.ReplicaID() {
		principals = p.c.cfg.Agents()
	} else {
		principals = p.c.everSeen[r]
	}
	for _, a := range principals {
		if p.c.svc.MayWrite(a, ns) {
			return true
		}
	}
	return false
}
