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
// order, joined into one KV transaction and committed, not yet synced
// (Syncer.UpdateNoSync); the writers' contexts move on, and the lead is
// free for the next group. The leader then waits for a sync begun after
// its commit (syncAfter: one at a time, each covering every group
// committed before it began), which acknowledges those groups: the
// contexts readers see move on and each write is released with its own
// result. The next builder (or the leader, when build is free) drops the
// pending entries committed and renews the snapshot (fold). So the next
// writes are built, and the next group committed, while a group syncs.
// See doc.go ("Writes") for the decisions.

// request is one write.
type request struct {
	replica crdt.ReplicaID
	fn      func(tx *Tx) error   // an Update's closure
	deltas  map[string]*crdt.Map // an Apply's deltas, or what fn built
	joined  map[string]*joined   // joins made before the commit (pendDeltas, prejoin)
	built   bool                 // deltas are fn's: sealed before commit
	after   *request             // fn failed: the last write queued before it
	tx      *Tx                  // what fn built them in
	seq     uint64               // build order
	// cutBefore: a group ends before this request unless it comes first
	// (it, or the group it was in, was too big for one transaction).
	cutBefore bool
	queued    bool          // in the queue (guarded by qmu)
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

// last is the seq of the group's last member.
func (g *group) last() uint64 { return g.members[len(g.members)-1].seq }

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
	queued, wait, err := s.prepare(r)
	if err != nil {
		return nil, s.answerFailed(r, wait, err)
	}
	if !queued { // built nothing: answer once what it read is durable
		return nil, s.awaitDurable(wait)
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
		s.qmu.Lock()
		queued := r.queued // else a leader before took it
		s.qmu.Unlock()
		committed, syncs := false, uint64(0)
		if queued {
			committed = s.commitGroup()
			syncs = s.syncs.Load()
		}
		<-s.lead
		switch {
		case committed:
			s.syncAfter(syncs)
		case !queued:
			// A leader before took it: it is finished, or committed in a
			// group whose leader waits for the sync that acknowledges it.
			<-r.done
			return r.changes, r.err
		}
	}
}

// answerFailed is the answer to r, whose closure failed with err after
// reading what may not be durable yet: the writes built before it, the
// last of which is r.after (nil if none is still to be committed), and
// the committed state through wait. It is err once those are durable,
// or else what failed them: the closure read writes that are lost.
func (s *Store) answerFailed(r *request, wait uint64, err error) error {
	if a := r.after; a != nil {
		<-a.done
		if a.err != nil {
			return a.err
		}
	}
	if derr := s.awaitDurable(wait); derr != nil {
		return derr
	}
	return err
}

// prepare builds r under build: runs its closure, records what it built as
// pending and queues it. A closure's error (or panic) leaves nothing
// behind. An Update that built nothing is not queued, unless what it read
// was pending (then its answer waits for that to be durable); otherwise
// wait is the seq its answer waits for (what it read from the snapshot
// may be committed and not yet synced), as it is for a closure's error
// (what it read may be pending too).
func (s *Store) prepare(r *request) (queued bool, wait uint64, err error) {
	s.build <- struct{}{}
	defer func() { <-s.build }()
	if s.closed {
		return false, 0, ErrClosed
	}
	if err := s.brokenErr(); err != nil {
		return false, 0, err
	}
	s.fold()
	seq := s.seq + 1
	if r.fn != nil {
		tx := &Tx{s: s, replica: r.replica, lim: s.lim, ctxs: map[string]*crdt.Context{},
			recs: map[string]map[string]*crdt.Record{}, deltas: map[string]*crdt.Map{},
			before: map[string]*crdt.Context{}, base: map[string]map[string]baseRec{}}
		if err := r.fn(tx); err != nil {
			// Its error may rest on what it read: answer it, like a
			// closure that built nothing, once that is durable.
			s.qmu.Lock()
			if n := len(s.queue); n > 0 {
				r.after = s.queue[n-1]
			}
			s.qmu.Unlock()
			return false, s.visible.Load(), err
		}
		if len(tx.deltas) == 0 && s.pend.empty() {
			return false, s.visible.Load(), nil
		}
		r.deltas, r.built, r.tx = tx.deltas, true, tx
		s.pendTx(tx, seq)
	} else if r.joined, err = s.pendDeltas(r.deltas, seq); err != nil {
		return false, 0, err
	}
	s.seq, r.seq = seq, seq
	s.qmu.Lock()
	s.queue = append(s.queue, r)
	r.queued = true
	s.qmu.Unlock()
	return true, 0, nil
}

// fold drops the pending entries of the writes committed so far and
// renews the snapshot to hold them (under build). A leader folds after
// its commit when build is free; otherwise the next write built does.
func (s *Store) fold() {
	seq := s.kvSeq.Load()
	if seq == s.folded {
		return
	}
	s.pend.drop(seq)
	s.renewSnapshot()
	s.folded = seq
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
	r.cutBefore, r.queued = false, false
	return r
}

// requeue puts rs back at the front of the queue, in order.
func (s *Store) requeue(rs ...*request) {
	s.qmu.Lock()
	for _, r := range rs {
		r.queued = true
	}
	s.queue = append(rs, s.queue...)
	s.qmu.Unlock()
}

// commitGroup commits one group, not yet synced (called by the leader,
// whose own request is queued), and reports whether it did: the leader
// then waits for a sync (syncAfter).
func (s *Store) commitGroup() bool {
	if s.closed {
		s.failQueue(ErrClosed)
		return false
	}
	if err := s.brokenErr(); err != nil {
		s.failQueue(err)
		return false
	}
	s.qmu.Lock()
	first := s.queue[0]
	s.qmu.Unlock()
	<-first.ready // its writer is sealing it
	g := &group{s: s, ctxs: map[string]*crdt.Context{}}
	var failed *request
	var failErr error
	err := s.skv.UpdateNoSync(func(w Writer) error {
		g.w = countingWriter{w, &g.bytes}
		for r := s.next(g); r != nil; r = s.next(g) {
			if err := g.add(r); err != nil {
				failed, failErr = r, err
				return errAbandon
			}
		}
		if err := g.writeContexts(); err != nil {
			return err
		}
		s.visible.Store(g.last()) // before a reader can find it
		return nil
	})
	switch {
	case err == nil:
		s.ctxMu.Lock()
		maps.Copy(s.ctxs, g.ctxs)
		s.ctxMu.Unlock()
		s.smu.Lock()
		s.unsynced = append(s.unsynced, g)
		s.smu.Unlock()
		s.kvSeq.Store(g.last())
		select { // no commit is in flight: Badger's snapshot does not wait
		case s.build <- struct{}{}:
			s.fold()
			<-s.build
		default:
		}
		return true
	case failed != nil && errors.Is(failErr, ErrTxnTooBig) && len(g.members) > 0:
		// Nothing was committed. The members before the failed request
		// are committed again from their deltas, in order, by the next
		// group; the failed one after them, in a group of its own.
		failed.cutBefore = true
		s.requeue(append(g.members, failed)...)
	case failed == nil && errors.Is(err, ErrTxnTooBig) && len(g.members) > 1:
		// The commit found the group too big: commit it in halves. What
		// it made visible was not committed: readers wait for no more
		// than what was (else one waiting for it would wait for good if
		// Close came before the halves).
		s.visible.Store(s.kvSeq.Load())
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
		s.settle()
		for _, r := range g.members {
			r.finish(nil, err)
		}
		s.failQueue(fmt.Errorf("%w: %w", ErrAborted, err))
	}
	return false
}

// syncAfter returns once a sync begun after syncs syncs had begun has
// ended: every group committed before the caller read syncs is then
// acknowledged (or failed). It runs that sync itself unless one began
// meanwhile; one sync at a time, and each acknowledges every group
// committed before it began, so the groups committed during one sync
// share the next.
func (s *Store) syncAfter(syncs uint64) {
	s.syncing <- struct{}{}
	defer func() { <-s.syncing }()
	if s.syncs.Load() > syncs {
		return // it began after the caller's commit, and holding syncing says it ended
	}
	s.syncs.Add(1)
	through := s.kvSeq.Load() // every write up to it is committed
	err := s.brokenErr()
	if err == nil {
		err = s.skv.Sync()
	}
	s.acknowledge(through, err)
}

// acknowledge releases the groups committed through seq once a sync
// covering them ended with err (holding syncing). On success the contexts
// readers see and the durable seq move on, then each write is released
// with its changes; a failed sync fails them, and breaks the store.
func (s *Store) acknowledge(seq uint64, err error) {
	s.smu.Lock()
	n := 0
	for n < len(s.unsynced) && s.unsynced[n].last() <= seq {
		n++
	}
	done := s.unsynced[:n:n]
	s.unsynced = slices.Clone(s.unsynced[n:])
	s.smu.Unlock()
	if err != nil {
		err = s.breakWith(err)
		for _, g := range done {
			for _, r := range g.members {
				r.finish(nil, err)
			}
		}
		return
	}
	s.ctxMu.Lock()
	for _, g := range done {
		maps.Copy(s.dctxs, g.ctxs)
	}
	s.ctxMu.Unlock()
	for _, g := range done {
		for _, r := range g.members {
			for _, c := range r.changes {
				s.recent.add(c.Namespace, c.ID, r.seq)
			}
		}
	}
	s.advance(seq)
	for _, g := range done {
		for _, r := range g.members {
			for i := range r.changes {
				r.changes[i].Seq = r.seq
			}
			r.finish(r.changes, nil)
		}
	}
}

// settle, under lead after a group failed to commit (nothing of it is in
// the KV) and at Close, syncs what the groups before it committed and moves the
// durable seq past the failed writes, which never will be: a reader
// waiting for them (awaitDurable) is released. If that sync failed, what
// a reader saw may be lost: the readers fail with its error instead.
func (s *Store) settle() {
	s.syncAfter(s.syncs.Load())
	if s.brokenErr() == nil { // else the readers get its error
		s.advance(s.visible.Load())
	}
}

// advance moves the durable seq to seq (never back) and wakes the readers
// waiting for it.
func (s *Store) advance(seq uint64) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if seq <= s.committed.Load() {
		return
	}
	s.committed.Store(seq)
	close(s.durCh)
	s.durCh = make(chan struct{})
}

// breakWith records a failed sync: after it nothing is known of what is
// on disk, so every write fails with the first such error, wrapped in
// ErrSync. It returns that error.
func (s *Store) breakWith(err error) error {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.broken == nil {
		s.broken = fmt.Errorf("%w: %w", ErrSync, err)
		close(s.durCh)
		s.durCh = make(chan struct{})
	}
	return s.broken
}

func (s *Store) brokenErr() error {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return s.broken
}

// awaitDurable returns once every write up to seq is durable (or will
// never be), or with the error that broke the store.
func (s *Store) awaitDurable(seq uint64) error {
	for s.committed.Load() < seq {
		s.dmu.Lock()
		ch, err := s.durCh, s.broken
		s.dmu.Unlock()
		if s.committed.Load() >= seq {
			return nil
		}
		if err != nil {
			return err
		}
		<-ch
	}
	return nil
}

// view is kv.View for reads of the replicated state: it returns once
// everything fn may have read is durable, so that no read passes on a
// write a crash could still lose (doc.go, "What readers see").
func (s *Store) view(fn func(r Reader) error) error {
	if err := s.kv.View(fn); err != nil {
		return err
	}
	return s.awaitDurable(s.visible.Load())
}

// syncedKV is a KV without Syncer seen as one: each commit is its own
// synced Update.
type syncedKV struct{ KV }

func (k syncedKV) UpdateNoSync(fn func(w Writer) error) error { return k.Update(fn) }
func (k syncedKV) Sync() error                                { return nil }

// failQueue fails every queued request with err, resets the pending state
// to what is committed and renews the snapshot (under build, so no write is
// built meanwhile).
func (s *Store) failQueue(err error) {
	s.build <- struct{}{}
	defer func() { <-s.build }()
	s.qmu.Lock()
	q := s.queue
	s.queue = nil
	for _, r := range q {
		r.queued = false
	}
	s.qmu.Unlock()
	for _, r := range q {
		r.finish(nil, err)
	}
	s.pend.reset()
	if !s.closed {
		s.folded = s.kvSeq.Load()
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
