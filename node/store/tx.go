package store

import (
	"github.com/mnemohq/mnemo/crdt"
)

// Tx builds one atomic change across namespaces: each Edit is made against
// the state as left by the edits before it in the same Tx, and by the
// Updates before it in the same commit group, so dots are allocated in
// sequence. Nothing is written until the Update closure returns nil.
type Tx struct {
	s       *Store
	replica crdt.ReplicaID
	lim     crdt.Limits
	ctxs    map[string]*crdt.Context
	recs    map[string]map[string]*crdt.Record
	deltas  map[string]*crdt.Map
	err     error
	// What the commit needs to know to take this Tx's joins instead of
	// making them again (prejoin, group.go): ns's context before the Tx,
	// and each entry as first read, with where it was read from.
	before map[string]*crdt.Context
	base   map[string]map[string]baseRec
}

// baseRec is an entry as a Tx first read it.
type baseRec struct {
	rec *crdt.Record
	// pending: read from a write not yet committed (an Update's record is
	// unsealed there: the commit joins again over the sealed one).
	pending bool
	// live: Edit found it not retracted.
	live bool
}

// Update runs fn, one writer at a time, against the store as left by every
// Update and Apply before it (committed or not yet), and applies everything
// it built in one synced transaction, usually shared with other writers
// (group.go); it returns once that is durable. If fn returns an error
// nothing is written. fn must not call Update or Apply (it would wait for
// itself), and should read the store through tx only: a direct read
// (Store.Record) misses the writes not yet committed.
func (s *Store) Update(replica crdt.ReplicaID, fn func(tx *Tx) error) ([]Change, error) {
	return s.submit(&request{replica: replica, fn: fn})
}

func (tx *Tx) ctx(ns string) *crdt.Context {
	c, ok := tx.ctxs[ns]
	if !ok {
		before := tx.s.pendContext(ns)
		c = before.Clone()
		tx.ctxs[ns] = c
		tx.before[ns] = before
	}
	return c
}

// Record returns the entry for id as this Tx sees it (nil if none).
func (tx *Tx) Record(ns, id string) (*crdt.Record, error) {
	if m, ok := tx.recs[ns]; ok {
		if r, ok := m[id]; ok {
			return r, nil
		}
	}
	r, pending, err := tx.s.pendRecordFrom(ns, id)
	if err != nil {
		return nil, err
	}
	if tx.recs[ns] == nil {
		tx.recs[ns] = map[string]*crdt.Record{}
		tx.base[ns] = map[string]baseRec{}
	}
	tx.recs[ns][id] = r
	tx.base[ns][id] = baseRec{rec: r, pending: pending}
	return r, nil
}

// Retracted reports whether id is retracted, in the store or in this Tx.
func (tx *Tx) Retracted(ns, id string) (bool, error) {
	if d, ok := tx.deltas[ns]; ok && d.Retracted(id) {
		return true, nil
	}
	return tx.s.pendRetracted(ns, id)
}

// Edit starts an edit of record id in ns. Call Commit with it when done.
func (tx *Tx) Edit(ns, id string) (*crdt.Edit, error) {
	gone, err := tx.Retracted(ns, id)
	if err != nil {
		return nil, err
	}
	if gone {
		return nil, crdt.ErrRetracted
	}
	rec, err := tx.Record(ns, id)
	if err != nil {
		return nil, err
	}
	if b, ok := tx.base[ns][id]; ok && !b.live {
		b.live = true
		tx.base[ns][id] = b
	}
	return crdt.NewEdit(tx.ctx(ns), rec, tx.replica, id, tx.lim)
}

// Commit folds an edit's delta into this Tx, which keeps it: e must not be
// used afterwards.
func (tx *Tx) Commit(ns, id string, e *crdt.Edit) {
	d := e.Delta()
	tx.fold(ns, id, d)
}

// Retract retracts id in ns within this Tx.
func (tx *Tx) Retract(ns, id string) error {
	rec, err := tx.Record(ns, id)
	if err != nil {
		return err
	}
	tx.fold(ns, id, crdt.RetractDelta(rec, id))
	return nil
}

func (tx *Tx) fold(ns, id string, d *crdt.Map) {
	c := tx.ctx(ns)
	rec := tx.recs[ns][id]
	if !d.Retracted(id) {
		tx.recs[ns][id] = crdt.JoinRecord(rec, c, d.Entry(id), d.Context())
	} else {
		delete(tx.recs[ns], id)
	}
	c.Join(d.Context())
	if tx.deltas[ns] == nil {
		// The first delta of ns in this Tx is taken, not copied into an
		// empty map (a save has one: a copy in the serial build stage).
		tx.deltas[ns] = d
		return
	}
	tx.deltas[ns].Join(d)
}

// Deltas is what this Tx built so far, per namespace (for replication).
func (tx *Tx) Deltas() map[string]*crdt.Map { return tx.deltas }
