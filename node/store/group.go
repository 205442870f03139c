package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
)

// Group commit, pipelined: a write (Update, Apply) is built, then sealed,
// then committed in a group. Building runs one write at a time under
// build: an Update's closure runs against the committed snapshot plus what
// the writes built before it left pending (pending.go), and what it builds
// becomes pending in turn; the write then joins the commit queue in that
// order. Its writer seals it outside any lock. The writer that takes the
// lead commits a group: the sealed writes at the front of the queue, in
// order, joined into one KV transaction, committed once (one sync); then,
// under build, the contexts in memory and the snapshot move on and the
// pending entries the group made durable are dropped; then each write is
// released with its own result. So the next writes are built while a group
// syncs. See doc.go ("Writes") for the decisions.

// request is one write.
type request struct {
	replica crdt.ReplicaID
	fn      func(tx *Tx) error   // an Update's closure
	deltas  map[string]*crdt.Map // an Apply's deltas, or what fn built
	joined  map[string]*joined   // joins made before the commit (pendDeltas, prejoin)
	built   bool                 // deltas are fn's: sealed before commit
	tx      *Tx                  // what fn built them in
	seq     uint64               // build order
	// cutBefore: a group ends before this request unless it comes first
	// (it, or the group it was in, was too big for one transaction).
	cutBefore bool
	ready     chan struct{} // closed once sealed
	changes   []Change
	err       error
	done      chan struct{} // closed once changes and err are final
}

func (r *request) finish(changes []Change, err error) {
	r.changes, r.err = changes, err
	close(r.done)
}

// group is one KV transaction shared by the requests in it.
type group struct {
	s       *Store
	w       Writer                   // counts the bytes written into bytes
	ctxs    map[string]*crdt.Context // contexts as the members left them: not yet durable
	members []*request               // applied to w, in order
	taken   int                      // requests taken off the queue, members or not
	bytes   int
}

// context is ns's context as the group's members left it: callers must
// not change it.
func (g *group) context(ns string) *crdt.Context {
	if c, ok := g.ctxs[ns]; ok {
		return c
	}
	return g.s.committedContext(ns)
}

// add joins r's deltas into the group's transaction. An error returned
// means the transaction may hold part of them: the group must be
// abandoned.
func (g *group) add(r *request) error {
	g.taken++
	changes, ctxs, err := g.s.applyTo(g.w, g.context, r.deltas, r.joined)
	if err != nil {
		return err
	}
	r.changes = changes
	maps.Copy(g.ctxs, ctxs)
	g.members = append(g.members, r)
	return nil
}

// writeContexts writes the contexts the members left, once each: every
// member of a group of saves to one namespace moves the same context.
func (g *group) writeContexts() error {
	for _, ns := range slices.Sorted(maps.Keys(g.ctxs)) {
		if err := g.w.Set(ctxKey(ns), g.ctxs[ns].Encode()); err != nil {
			return err
		}
	}
	return nil
}

// errAbandon aborts a group's transaction after an apply failed.
var errAbandon = errors.New("store: group abandoned")

// submit builds r, seals it and waits until it is committed or refused,
// committing groups itself whenever it holds the lead.
func (s *Store) submit(r *request) ([]Change, error) {
	s.slots <- struct{}{} // bounded: wait for a place
	defer func() { <-s.slots }()
	r.done, r.ready = make(chan struct{}), make(chan struct{})
	queued, err := s.prepare(r)
	if err != nil || !queued {
		return nil, err
	}
	if r.built && s.signer.Sign != nil {
		for ns, d := range r.deltas {
			d.Seal(ns, s.signer)
		}
	}
	s.prejoin(r)
	close(r.ready)
	for {
		select {
		case <-r.done:
			return r.changes, r.err
		case s.lead <- struct{}{}:
		}
		select {
		case <-r.done: // the leader before took it
		default:
			s.commitGroup()
		}
		<-s.lead
	}
}

// prepare builds r under build: runs its closure, records what it built as
// pending and queues it. A closure's error (or panic) leaves nothing
// behind. An Update that built nothing is not queued, unless what it read
// was pending (then its answer waits for that to be durable).
func (s *Store) prepare(r *request) (queued bool, err error) {
	s.build <- struct{}{}
	defer func() { <-s.build }()
	if s.closed {
		return false, ErrClosed
	}
	seq := s.seq + 1
	if r.fn != nil {
		tx := &Tx{s: s, replica: r.replica, lim: s.lim, ctxs: map[string]*crdt.Context{},
			recs: map[string]map[string]*crdt.Record{}, deltas: map[string]*crdt.Map{},
			before: map[string]*crdt.Context{}, base: map[string]map[string]baseRec{}}
		if err := r.fn(tx); err != nil {
			return false, err
		}
		if len(tx.deltas) == 0 && s.pend.empty() {
			return false, nil
		}
		r.deltas, r.built, r.tx = tx.deltas, true, tx
		s.pendTx(tx, seq)
	} else if r.joined, err = s.pendDeltas(r.deltas, seq); err != nil {
		return false, err
	}
	s.seq, r.seq = seq, seq
	s.qmu.Lock()
	s.queue = append(s.queue, r)
	s.qmu.Unlock()
	return true, nil
}

// prejoin makes, in the writer's goroutine and outside any lock, what the
// commit would otherwise make under the lead, one write after another:
// the join of each sealed record with the entry stored before it, its
// encoding and its writes to the dot index. An Update's namespace qualifies when the Tx read every entry
// it wrote from the committed state (none was pending) and found each one
// it edited not retracted: the group's transaction holds exactly that
// state when this write's turn comes (the writes between are committed, or
// earlier in the group, and none touched these entries), so the commit
// reads nothing there and takes these joins (applyTo). A namespace where
// an entry was pending is left to the commit, which joins over the sealed
// record the write before left. An Apply's joins (pendDeltas) are only
// encoded here.
func (s *Store) prejoin(r *request) {
	if !r.built {
		for _, j := range r.joined {
			for id, jr := range j.recs {
				jr.enc = crdt.EncodeRecord(jr.merged)
				j.recs[id] = jr
			}
		}
		return
	}
	tx := r.tx
	r.tx = nil
	for ns, d := range r.deltas {
		base := tx.base[ns]
		ok := true
		for _, id := range d.RetractedIDs() {
			if b, found := base[id]; !found || b.pending {
				ok = false
			}
		}
		d.Records(func(id string, _ *crdt.Record) bool {
			b, found := base[id]
			ok = ok && (d.Retracted(id) || found && !b.pending && b.live)
			return ok
		})
		if !ok {
			continue
		}
		before, next := tx.before[ns], tx.ctxs[ns]
		j := &joined{next: next, checked: true, recs: map[string]joinedRec{}}
		for _, id := range d.RetractedIDs() {
			local, dots := base[id].rec, &kvOps{}
			_ = reindex(dots, ns, id, local, nil, before, next) // kvOps never fails
			j.recs[id] = joinedRec{local: local, dots: dots}
		}
		d.Records(func(id string, drec *crdt.Record) bool {
			if !d.Retracted(id) {
				local := base[id].rec
				merged := crdt.JoinRecord(local, before, drec, d.Context())
				dots := &kvOps{}
				_ = reindex(dots, ns, id, local, merged, before, next) // kvOps never fails
				j.recs[id] = joinedRec{local: local, merged: merged, enc: crdt.EncodeRecord(merged), dots: dots}
			}
			return true
		})
		if r.joined == nil {
			r.joined = map[string]*joined{}
		}
		r.joined[ns] = j
	}
}

// next takes the request at the front of the queue for group g, or nil:
// the queue is empty, the group is full, or the front is not sealed yet.
func (s *Store) next(g *group) *request {
	if g.taken >= s.groupMax || g.bytes >= s.groupBytes {
		return nil
	}
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if len(s.queue) == 0 || s.queue[0].cutBefore && len(g.members) > 0 {
		return nil
	}
	r := s.queue[0]
	select {
	case <-r.ready:
	default:
		return nil
	}
	s.queue[0] = nil
	s.queue = s.queue[1:]
	r.cutBefore = false
	return r
}

// requeue puts rs back at the front of the queue, in order.
func (s *Store) requeue(rs ...*request) {
	s.qmu.Lock()
	s.queue = append(rs, s.queue...)
	s.qmu.Unlock()
}

// commitGroup commits one group (called by the leader, whose own request
// is queued).
func (s *Store) commitGroup() {
	if s.closed {
		s.failQueue(ErrClosed)
		return
	}
	s.qmu.Lock()
	first := s.queue[0]
	s.qmu.Unlock()
	<-first.ready // its writer is sealing it
	g := &group{s: s, ctxs: map[string]*crdt.Context{}}
	var failed *request
	var failErr error
	err := s.kv.Update(func(w Writer) error {
		g.w = countingWriter{w, &g.bytes}
		for r := s.next(g); r != nil; r = s.next(g) {
			if err := g.add(r); err != nil {
				failed, failErr = r, err
				return errAbandon
			}
		}
		return g.writeContexts()
	})
	switch {
	case err == nil:
		s.build <- struct{}{}
		s.ctxMu.Lock()
		maps.Copy(s.ctxs, g.ctxs)
		s.ctxMu.Unlock()
		s.pend.drop(g.members[len(g.members)-1].seq)
		s.renewSnapshot()
		for _, r := range g.members {
			for _, c := range r.changes {
				s.recent.add(entryKey(c.Namespace, c.ID), r.seq)
			}
		}
		s.committed.Store(g.members[len(g.members)-1].seq)
		<-s.build
		for _, r := range g.members {
			for i := range r.changes {
				r.changes[i].Seq = r.seq
			}
			r.finish(r.changes, nil)
		}
	case failed != nil && errors.Is(failErr, ErrTxnTooBig) && len(g.members) > 0:
		// Nothing was committed. The members before the failed request
		// are committed again from their deltas, in order, by the next
		// group; the failed one after them, in a group of its own.
		failed.cutBefore = true
		s.requeue(append(g.members, failed)...)
	case failed == nil && errors.Is(err, ErrTxnTooBig) && len(g.members) > 1:
		// The commit found the group too big: commit it in halves.
		g.members[len(g.members)/2].cutBefore = true
		s.requeue(g.members...)
	default:
		// Nothing was committed, and the writes queued behind were built
		// over what failed: they all fail.
		if failed != nil {
			g.members = append(g.members, failed)
			err = failErr
		}
		err = applyErr(err)
		for _, r := range g.members {
			r.finish(nil, err)
		}
		s.failQueue(fmt.Errorf("%w: %w", ErrAborted, err))
	}
}

// failQueue fails every queued request with err, resets the pending state
// to what is committed and renews the snapshot (under build, so no write is
// built meanwhile).
func (s *Store) failQueue(err error) {
	s.build <- struct{}{}
	defer func() { <-s.build }()
	s.qmu.Lock()
	q := s.queue
	s.queue = nil
	s.qmu.Unlock()
	for _, r := range q {
		r.finish(nil, err)
	}
	s.pend.reset()
	if !s.closed {
		s.renewSnapshot()
	}
}

func applyErr(err error) error {
	if errors.Is(err, ErrTxnTooBig) {
		return fmt.Errorf("store: delta too large for one transaction: %w", err)
	}
	return fmt.Errorf("store: commit: %w", err)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	Writer
	n *int
}

func (c countingWriter) Set(key, value []byte) error {
	*c.n += len(key) + len(value)
	return c.Writer.Set(key, value)
}

func (c countingWriter) Delete(key []byte) error {
	*c.n += len(key)
	return c.Writer.Delete(key)
}
