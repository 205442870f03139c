package cluster

import (
	"github.com/mnemohq/mnemo/acl"
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
	return s.svc.Store().Missing(ns, have, memory.ACLPrefix, fn)
}

func (s storeState) Retracted(ns string) ([]string, error) { return s.svc.Store().RetractedIDs(ns) }

// policy answers the engine from this node's access policy and the
// membership the loop keeps. The engine calls it, so on the loop only.
type policy struct {
	l *loop
	// parsed remembers what the engine's namespace strings parse to: it
	// asks PeerMayRead for every peer and namespace it sends and
	// ReplicaMayWrite for every dot it receives, and parsing the string
	// each time (twice in PeerMayRead) was 7% of a 100-node simulation's
	// CPU. At most parsedMax entries, then it starts afresh (a forgotten
	// one is parsed again: a cost, never another answer).
	parsed map[string]parsedNS
}

// parsedNS is a namespace string as parsed once: ok is false for one that
// does not parse, replicated says whether it is shared at all.
type parsedNS struct {
	addr           namespace.Address
	ok, replicated bool
}

// parsedMax bounds policy.parsed: a node replicates its team, project and
// inbox namespaces, a few hundred in the largest simulations.
const parsedMax = 4096

func (p *policy) parse(ns string) parsedNS {
	if pn, ok := p.parsed[ns]; ok {
		return pn
	}
	var pn parsedNS
	if addr, err := namespace.Parse(ns); err == nil {
		pn = parsedNS{addr: addr, ok: true, replicated: memory.Replicated(ns)}
	}
	if p.parsed == nil || len(p.parsed) >= parsedMax {
		p.parsed = make(map[string]parsedNS)
	}
	p.parsed[ns] = pn
	return pn
}

var _ replica.Policy = (*policy)(nil)

// ShouldHold: every team and project namespace a peer sends (the sender
// decided this node may read it; writes are still checked per dot), and
// inboxes whose target or writer is a local principal.
func (p *policy) ShouldHold(ns string) bool {
	pn := p.parse(ns)
	if !pn.replicated {
		return false
	}
	target, writer, inbox := memory.InboxParties(pn.addr)
	if !inbox {
		return true
	}
	for _, a := range p.l.cfg.Agents() {
		if a == target || a == writer {
			return true
		}
	}
	return false
}

// PeerMayRead: a member one of whose agents, by a verified binding, may
// read ns; with bindings on demand, a project namespace every member (acl:
// any agent bound to a key reads a project, and a member may bind a fresh
// one at will, so asking for one adds no check, and it would make every
// reader's binding travel to every member: bindings_demand.go).
func (p *policy) PeerMayRead(peer replica.Peer, ns string) bool {
	pn := p.parse(ns)
	if !pn.replicated {
		return false
	}
	if pn.addr.Kind == namespace.KindProject && p.l.onDemand() {
		return true
	}
	for _, a := range peer.Principals {
		if p.l.svc.MayReadAddress(a, pn.addr) {
			return true
		}
	}
	return false
}

// ForDelta counts the signed acl records a delta carries (a namespace's
// creation or a grant travels inside the namespace it governs).
func (p *policy) ForDelta(ns string, d *crdt.Map) replica.Policy {
	pol := p.l.svc.PolicyWithDelta(ns, d)
	if pol == nil {
		return p
	}
	return &deltaPolicy{policy: p, acl: pol}
}

var _ replica.DeltaPolicy = (*policy)(nil)

// deltaPolicy answers write checks from an acl policy that includes a
// delta's own records.
type deltaPolicy struct {
	*policy
	acl *acl.Policy
}

func (d *deltaPolicy) ReplicaMayWrite(r crdt.ReplicaID, ns string) bool {
	if d.l.cfg.SkipWriteCheck {
		return true
	}
	pn := d.parse(ns)
	if !pn.ok {
		return false
	}
	for _, a := range d.principalsOf(r) {
		if d.acl.Allowed(a, pn.addr, acl.Write) {
			return true
		}
	}
	d.l.noteDeltaSigners(ns, pn.addr, d.acl)
	return false
}

func (p *policy) principalsOf(r crdt.ReplicaID) []namespace.Address {
	if r == p.l.replica {
		return p.l.cfg.Agents()
	}
	return p.l.principalsOfReplica(r)
}

func (p *policy) ReplicaMayWrite(r crdt.ReplicaID, ns string) bool {
	if p.l.cfg.SkipWriteCheck {
		return true
	}
	pn := p.parse(ns)
	if !pn.ok {
		return false
	}
	for _, a := range p.principalsOf(r) {
		if p.l.svc.MayWriteAddress(a, pn.addr) {
			return true
		}
	}
	return false
}
