package store

import (
	"errors"

	"github.com/mnemohq/mnemo/crdt"
)

// pending is what the writes built but not yet committed leave behind:
// the state the next write's closure must see (the build stage reads it
// before the snapshot). It is guarded by Store.build. Each entry names the
// last write that set it (seq), so the entries a commit made durable are
// dropped once the snapshot holds them.
type pending struct {
	recs map[string]map[string]pendRec // ns → id →
	ctxs map[string]pendCtx
}

type pendRec struct {
	rec       *crdt.Record // unsealed: closures need no seals
	retracted bool
	seq       uint64
}

type pendCtx struct {
	ctx *crdt.Context // never changed once here
	seq uint64
}

func (p *pending) reset() {
	p.recs = map[string]map[string]pendRec{}
	p.ctxs = map[string]pendCtx{}
}

func (p *pending) empty() bool { return len(p.recs) == 0 && len(p.ctxs) == 0 }

func (p *pending) setRec(ns, id string, e pendRec) {
	m := p.recs[ns]
	if m == nil {
		m = map[string]pendRec{}
		p.recs[ns] = m
	}
	m[id] = e
}

// drop forgets the entries set by writes up to seq (now in the snapshot).
func (p *pending) drop(seq uint64) {
	for ns, m := range p.recs {
		for id, e := range m {
			if e.seq <= seq {
				delete(m, id)
			}
		}
		if len(m) == 0 {
			delete(p.recs, ns)
		}
	}
	for ns, e := range p.ctxs {
		if e.seq <= seq {
			delete(p.ctxs, ns)
		}
	}
}

// Snapshotter is a KV that hands out a long-lived read snapshot. The Store
// reads the committed state its writers build on from one, renewed after
// each commit: Badger's View waits for every commit in flight to finish
// (its read timestamp does), which would stop the next group being built
// during the last one's sync. Optional: without it the Store reads through
// View.
type Snapshotter interface {
	// Snapshot returns a Reader over the state committed now, for use by
	// one goroutine at a time, and its release (call once, after the last
	// read).
	Snapshot() (Reader, func())
}

// viewReader reads through View, one snapshot per call: a KV without
// Snapshot.
type viewReader struct{ kv KV }

func (v viewReader) Get(key []byte) (val []byte, err error) {
	err = v.kv.View(func(r Reader) error {
		val, err = r.Get(key)
		return err
	})
	return val, err
}

func (v viewReader) Iterate(prefix []byte, fn func(key, value []byte) error) error {
	return v.kv.View(func(r Reader) error { return r.Iterate(prefix, fn) })
}

func (v viewReader) IterateFrom(prefix, start []byte, fn func(key, value []byte) error) error {
	return v.kv.View(func(r Reader) error { return r.IterateFrom(prefix, start, fn) })
}

// renewSnapshot replaces the build stage's snapshot with one of the state
// committed now. Called under build (and, after Open, under lead, so no
// commit is in flight and Badger's snapshot does not wait).
func (s *Store) renewSnapshot() {
	if s.snapRelease != nil {
		s.snapRelease()
		s.snapRelease = nil
	}
	if sn, ok := s.kv.(Snapshotter); ok {
		s.snap, s.snapRelease = sn.Snapshot()
		return
	}
	s.snap = viewReader{s.kv}
}

// The build stage's reads (under build): the pending state, else the
// snapshot, else the committed contexts.

func (s *Store) pendContext(ns string) *crdt.Context {
	if e, ok := s.pend.ctxs[ns]; ok {
		return e.ctx
	}
	return s.committedContext(ns)
}

func (s *Store) pendRecord(ns, id string) (*crdt.Record, error) {
	rec, _, err := s.pendRecordFrom(ns, id)
	return rec, err
}

// pendRecordFrom is pendRecord, and whether the entry was pending.
func (s *Store) pendRecordFrom(ns, id string) (rec *crdt.Record, pending bool, err error) {
	if e, ok := s.pend.recs[ns][id]; ok {
		return e.rec, true, nil
	}
	rec, err = s.readRecord(s.snap, ns, id)
	return rec, false, err
}

func (s *Store) pendRetracted(ns, id string) (bool, error) {
	if e, ok := s.pend.recs[ns][id]; ok {
		return e.retracted, nil
	}
	_, err := s.snap.Get(retKey(ns, id))
	if errors.Is(err, ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// pendTx records what a closure's Tx built as pending, for write seq.
func (s *Store) pendTx(tx *Tx, seq uint64) {
	for ns, d := range tx.deltas {
		s.pend.ctxs[ns] = pendCtx{tx.ctxs[ns], seq}
		for _, id := range d.RetractedIDs() {
			s.pend.setRec(ns, id, pendRec{retracted: true, seq: seq})
		}
		d.Records(func(id string, _ *crdt.Record) bool {
			if !d.Retracted(id) {
				s.pend.setRec(ns, id, pendRec{rec: tx.recs[ns][id], seq: seq})
			}
			return true
		})
	}
}

// pendDeltas records a peer's deltas (Apply) as pending, for write seq:
// joined as applyTo will join them, minus the encoding and the index. On
// an error nothing is recorded.
//
// It returns, for each namespace no uncommitted write touches, the join
// it made (joined): applyTo, which commits the write over the same state,
// takes it instead of reading and joining every entry a second time. A
// namespace with pending entries is left out: what the commit joins over
// there (sealed records) is not what the pending state holds (records an
// Update built, unsealed), so applyTo joins it again.
func (s *Store) pendDeltas(deltas map[string]*crdt.Map, seq uint64) (map[string]*joined, error) {
	type set struct {
		ns, id string
		e      pendRec
	}
	var sets []set
	ctxs := map[string]pendCtx{}
	var out map[string]*joined
	for ns, d := range deltas {
		cur := s.pendContext(ns)
		_, ctxPending := s.pend.ctxs[ns]
		var j *joined
		if !ctxPending && len(s.pend.recs[ns]) == 0 {
			j = &joined{recs: map[string]joinedRec{}}
		}
		for _, id := range d.RetractedIDs() {
			sets = append(sets, set{ns, id, pendRec{retracted: true, seq: seq}})
		}
		var err error
		d.Records(func(id string, drec *crdt.Record) bool {
			if d.Retracted(id) {
				return true
			}
			var gone bool
			if gone, err = s.pendRetracted(ns, id); err != nil || gone {
				return err == nil
			}
			var local *crdt.Record
			if local, err = s.pendRecord(ns, id); err != nil {
				return false
			}
			merged := crdt.JoinRecord(local, cur, drec, d.Context())
			sets = append(sets, set{ns, id, pendRec{rec: merged, seq: seq}})
			if j != nil {
				j.recs[id] = joinedRec{local: local, merged: merged}
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		next := cur.Clone()
		next.Join(d.Context())
		ctxs[ns] = pendCtx{next, seq}
		if j != nil {
			j.next = next
			if out == nil {
				out = map[string]*joined{}
			}
			out[ns] = j
		}
	}
	for _, x := range sets {
		s.pend.setRec(x.ns, x.id, x.e)
	}
	for ns, c := range ctxs {
		s.pend.ctxs[ns] = c
	}
	return out, nil
}

// joined is one namespace of a peer's delta as pendDeltas joined it over
// the committed state: ns's context once the delta is in (never changed),
// and each entry's record before and after (records are not changed once
// built either).
type joined struct {
	next *crdt.Context
	recs map[string]joinedRec
	// checked: no entry of the delta was retracted in the state it was
	// joined over, and recs holds every entry (prejoin): the commit reads
	// nothing.
	checked bool
}

type joinedRec struct {
	local, merged *crdt.Record
	enc           []byte // merged encoded (prejoin), or nil
	dots          *kvOps // the dot index's writes (prejoin), or nil
}

// index makes id's writes to the dot index on w: those prejoin recorded,
// or those write makes (j may be nil).
func (j *joined) index(id string, w Writer, write func(w Writer) error) error {
	if jr, ok := j.rec(id); ok && jr.dots != nil {
		return jr.dots.replay(w)
	}
	return write(w)
}

// kvOps records the writes made through it (it reads nothing), to make
// them again on another Writer.
type kvOps struct{ ops []kvOp }

type kvOp struct {
	key, value []byte
	del        bool
}

var errNoReads = errors.New("store: recorded writes cannot be read")

func (o *kvOps) Get([]byte) ([]byte, error)                    { return nil, errNoReads }
func (o *kvOps) Iterate([]byte, func(k, v []byte) error) error { return errNoReads }
func (o *kvOps) IterateFrom([]byte, []byte, func(k, v []byte) error) error {
	return errNoReads
}

func (o *kvOps) Set(key, value []byte) error {
	o.ops = append(o.ops, kvOp{key: key, value: value})
	return nil
}

func (o *kvOps) Delete(key []byte) error {
	o.ops = append(o.ops, kvOp{key: key, del: true})
	return nil
}

func (o *kvOps) replay(w Writer) error {
	for _, op := range o.ops {
		var err error
		if op.del {
			err = w.Delete(op.key)
		} else {
			err = w.Set(op.key, op.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rec is id's join, if j holds it (j may be nil).
func (j *joined) rec(id string) (joinedRec, bool) {
	if j == nil {
		return joinedRec{}, false
	}
	r, ok := j.recs[id]
	return r, ok
}
