package store

import "github.com/mnemohq/mnemo/crdt"

// MissingVia is Missing answered through the dot index (scan false) or by
// a scan of the namespace (scan true), whatever the requester lacks.
func (s *Store) MissingVia(scan bool, ns string, have *crdt.Context, first string, fn func(string, *crdt.Record) error) (*crdt.Context, error) {
	how := missingIndex
	if scan {
		how = missingScan
	}
	return s.missing(ns, have, first, fn, how)
}

// IndexRunMax is the longest run of counters one index key covers.
const IndexRunMax = runMax

// QueueLen is how many writes wait in the group-commit queue.
func (s *Store) QueueLen() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue)
}

// frontSealed reports whether the first n queued writes are sealed.
func (s *Store) frontSealed(n int) bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for _, r := range s.queue[:min(n, len(s.queue))] {
		select {
		case <-r.ready:
		default:
			return false
		}
	}
	return true
}
