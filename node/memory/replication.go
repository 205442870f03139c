package memory

import (
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
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
	return err == nil && s.auth.CheckRead(principal, a) == nil
}

// MayWrite reports whether principal may write ns; replication asks it
// before applying a peer's write.
func (s *Service) MayWrite(principal namespace.Address, ns string) bool {
	a, err := namespace.Parse(ns)
	return err == nil && s.auth.CheckWrite(principal, a) == nil
}

// PolicyWithDelta is the acl policy of ns counting, besides the records
// this node holds, the acl records inside d: a peer's delta may carry the
// creation or grant that authorises the rest of it. It returns nil when d
// holds no acl record (the current policy applies). Records that do not
// decode or verify are left out.
func (s *Service) PolicyWithDelta(ns string, d *crdt.Map) *acl.Policy {
	var incoming []acl.SignedRecord
	d.Records(func(id string, rec *crdt.Record) bool {
		if !strings.HasPrefix(id, aclPrefix) {
			return true
		}
		if r, err := decodeACL(ns, id, rec); err == nil && r.VerifySignature() == nil {
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
	book := acl.NewBook(s.keyOf)
	s.acl.mu.Lock()
	held := s.acl.book.Records(addr.Root())
	s.acl.mu.Unlock()
	for _, r := range append(held, incoming...) {
		_ = book.AddRecord(r)
	}
	return book.Policy()
}

// ACLPrefix starts the ids of the signed acl records a namespace holds;
// replication sends them before the records they authorise.
const ACLPrefix = aclPrefix
