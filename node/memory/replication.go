package memory

import (
	"fmt"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
)

// Replicated reports whether ns is a namespace that replicates between
// nodes: team and project namespaces, and inboxes (which go to the node of
// their target). Every other agent namespace stays on its node.
func Replicated(ns string) bool {
	a, err := namespace.Parse(ns)
	if err != nil {
		return false
	}
	if a.Kind == namespace.KindTeam || a.Kind == namespace.KindProject {
		return true
	}
	_, _, inbox := InboxParties(a)
	return inbox
}

// MayRead reports whether principal may read ns, by the same Authorizer as
// every other path; replication asks it before sending ns to a peer.
func (s *Service) MayRead(principal namespace.Address, ns string) bool {
	a, err := namespace.Parse(ns)
	return err == nil && s.MayReadAddress(principal, a)
}

// MayReadAddress is MayRead of a parsed namespace: replication, which asks
// for every peer and namespace it sends, parses each namespace once.
func (s *Service) MayReadAddress(principal, ns namespace.Address) bool {
	return s.may(principal, ns, acl.Read)
}

// MayWrite reports whether principal may write ns; replication asks it
// before applying a peer's write.
func (s *Service) MayWrite(principal namespace.Address, ns string) bool {
	a, err := namespace.Parse(ns)
	return err == nil && s.MayWriteAddress(principal, a)
}

// MayWriteAddress is MayWrite of a parsed namespace, as MayReadAddress.
func (s *Service) MayWriteAddress(principal, ns namespace.Address) bool {
	return s.may(principal, ns, acl.Write)
}

// may is the Authorizer's decision on perm (read or write). The default
// authorizer's is taken without the error it would build for a refusal:
// replication asks before every send and for every peer's write.
func (s *Service) may(principal, ns namespace.Address, perm acl.Permission) bool {
	if _, ok := s.auth.(policyAuthorizer); ok {
		if err, ok := inboxDecision(principal, ns, perm); ok {
			return err == nil
		}
		return s.Policy().Allowed(principal, ns, perm)
	}
	if perm == acl.Read {
		return s.auth.CheckRead(principal, ns) == nil
	}
	return s.auth.CheckWrite(principal, ns) == nil
}

// SetAuthorCheck sets how ApplyRemote decides whether the replica that
// wrote a record's author field may name that author: replication passes
// the cluster's verified bindings (the author is, or was before a
// hand-over, hosted by that replica's node). Without one (a Service used
// without replication) authors are not checked. fn must be safe for
// concurrent use.
func (s *Service) SetAuthorCheck(fn func(author namespace.Address, writer crdt.ReplicaID) bool) {
	if fn == nil {
		s.authorOK.Store(nil)
		return
	}
	s.authorOK.Store(&fn)
}

func (s *Service) authorHostedBy(p namespace.Address, r crdt.ReplicaID) bool {
	if fn := s.authorOK.Load(); fn != nil {
		return (*fn)(p, r)
	}
	return true
}

// checkRemoteAuthors refuses a peer's delta holding a record whose author
// names an agent the node of the replica that wrote it does not host: one
// member cannot write in another agent's name. Errors wrap acl.ErrDenied.
func (s *Service) checkRemoteAuthors(ns string, d *crdt.Map) error {
	var bad error
	d.Records(func(id string, rec *crdt.Record) bool {
		f, ok := rec.Field(schema.FieldAuthor)
		if !ok {
			return true
		}
		p, err := namespace.ParsePrincipal(string(f.Value))
		if err != nil || !s.authorHostedBy(p, f.Dot.Replica) {
			bad = fmt.Errorf("%w: %s in %s names author %q, not hosted by the node of replica %v that wrote it",
				acl.ErrDenied, id, ns, f.Value, f.Dot.Replica)
			return false
		}
		return true
	})
	return bad
}

// PolicyWithDelta is the acl policy of ns counting, besides the records
// this node holds, the acl records inside d: a peer's delta may carry the
// creation or grant that authorises the rest of it. It returns nil when d
// holds no acl record (the current policy applies). Records that do not
// decode or verify are left out.
func (s *Service) PolicyWithDelta(ns string, d *crdt.Map) *acl.Policy {
	var incoming []acl.SignedRecord
	d.Records(func(id string, rec *crdt.Record) bool {
		if !strings.HasPrefix(id, schema.ACLPrefix) {
			return true
		}
		if r, err := decodeACL(ns, id, rec); err == nil {
			incoming = append(incoming, r)
		}
		return true
	})
	if len(incoming) == 0 {
		return nil
	}
	addr, err := namespace.Parse(ns)
	if err != nil {
		return nil
	}
	// The held records were verified when they were admitted; the fork
	// verifies only the incoming ones it does not hold already, through
	// the Service's SigCache, so the gate and the admission that follow
	// do not verify them again.
	s.acl.mu.Lock()
	if cur := s.Policy(); s.acl.book.Covers(cur, incoming) {
		s.acl.mu.Unlock()
		return cur // held and counted already: it answers about ns as the fork would
	}
	book := s.acl.book.Fork(addr.Root())
	s.acl.mu.Unlock()
	added := false
	for _, r := range incoming {
		added = book.AddRecord(r) == nil || added
	}
	if !added {
		return nil
	}
	return book.Policy()
}

// ACLPrefix starts the ids of the signed acl records a namespace holds;
// replication sends them before the records they authorise.
const ACLPrefix = schema.ACLPrefix
