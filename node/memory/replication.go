package memory

import (
	"github.com/mnemohq/mnemo/namespace"
)

// Replicated reports whether ns is a namespace that replicates between
// nodes: team and project namespaces. Agent namespaces stay on their node.
func Replicated(ns string) bool {
	a, err := namespace.Parse(ns)
	return err == nil && (a.Kind == namespace.KindTeam || a.Kind == namespace.KindProject)
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
