package memory

import (
	"maps"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/store"
)

// Writing: every change of the service goes through write, which commits
// it, then updates the index and tells the listeners (service.go holds the
// operations, indexing.go the index).

// write runs fn in one store transaction, then updates the index and tells
// the listeners.
func (s *Service) write(fn func(tx *store.Tx) error) error { return s.writeKeeping(fn, nil) }

// writeKeeping is write, keeping in keep (may be nil) the view the index
// made of the memory keep names.
func (s *Service) writeKeeping(fn func(tx *store.Tx) error, keep *keptView) error {
	var deltas map[string]*crdt.Map
	changes, err := s.st.Update(s.cfg.Replica, func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		deltas = tx.Deltas()
		return nil
	})
	if err != nil {
		return mapStoreErr(err)
	}
	s.reindexKeeping(changes, keep)
	s.listenMu.RLock()
	ls := s.listeners
	s.listenMu.RUnlock()
	// in namespace order, not map order: a stepped replication loop (the
	// simulator's) must see the same writes give the same deltas in the
	// same order
	for _, ns := range slices.Sorted(maps.Keys(deltas)) {
		for _, l := range ls {
			l(ns, deltas[ns])
		}
	}
	s.afterSent(changes) // after the change itself is sent
	s.tellWatchers(changes)
	return nil
}

func (s *Service) afterSent(changes []store.Change) {
	for _, o := range s.feat.sent {
		o.AfterSent(changes)
	}
}
