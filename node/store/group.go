package store

import (
	"errors"
	"fmt"
	"maps"

	"github.com/mnemohq/mnemo/crdt"
)

// Group commit: every write (Update, Apply) is a request in one queue. The
// writer that takes the lead commits a group: it takes requests off the
// front of the queue, in order, runs each against the KV transaction the
// group shares, commits that transaction once (one sync) and releases each
// request with its own result; the others wait for theirs or for the lead.
// See doc.go ("Writes") for the decisions.

// request is one write waiting for its group.
type request struct {
	replica crdt.ReplicaID
	fn      func(tx *Tx) error   // an Update's closure; nil once run
	deltas  map[string]*crdt.Map // an Apply's deltas, or what fn built (sealed)
	// built: deltas were built by fn over the state its group left, so
	// they depend on the requests before it in that group.
	built bool
	// requeued: put back at the front of the queue after its group was
	// abandoned (an apply failed); a prefix of the queue.
	requeued bool
	// cutBefore: a group ends before this request unless it comes first
	// (it, or the group it was in, was too big for one transaction).
	cutBefore bool
	changes   []Change
	err       error
	panicked  any           // what fn panicked with: the submitter panics with it
	done      chan struct{} // closed once changes, err and panicked are final
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
	return g.s.Context(ns)
}

// add runs r in the group: its closure (if any) against the group's state,
// then its deltas into the group's transaction. A closure that fails
// writes nothing and r is finished with its error at once. An error
// returned means the transaction holds part of r's writes: the group must
// be abandoned.
func (g *group) add(r *request) error {
	g.taken++
	if r.fn != nil {
		tx := &Tx{s: g.s, g: g, replica: r.replica, lim: g.s.lim, ctxs: map[string]*crdt.Context{},
			recs: map[string]map[string]*crdt.Record{}, deltas: map[string]*crdt.Map{}}
		err := r.run(tx)
		if err != nil {
			r.finish(nil, err)
			return nil
		}
		if g.s.signer.Sign != nil {
			for ns, d := range tx.deltas {
				d.Seal(ns, g.s.signer)
			}
		}
		r.deltas, r.built = tx.deltas, true
	}
	changes, ctxs, err := g.s.applyTo(g.w, g.context, r.deltas)
	if err != nil {
		return err
	}
	r.changes = changes
	maps.Copy(g.ctxs, ctxs)
	g.members = append(g.members, r)
	return nil
}

// run runs r's closure once. A panic in it finishes r (its submitter
// panics in turn) rather than unwinding the leader, which holds the lead
// and runs other writers' requests.
func (r *request) run(tx *Tx) (err error) {
	fn := r.fn
	r.fn = nil
	defer func() {
		if p := recover(); p != nil {
			r.panicked, err = p, errPanicked
		}
	}()
	return fn(tx)
}

var errPanicked = errors.New("store: Update's closure panicked")

// errAbandon aborts a group's transaction after an apply failed.
var errAbandon = errors.New("store: group abandoned")

// submit queues r and waits until it is committed or refused, committing
// groups itself whenever it holds the lead.
func (s *Store) submit(r *request) ([]Change, error) {
	r.done = make(chan struct{})
	s.slots <- struct{}{} // bounded: wait for a place
	defer func() { <-s.slots }()
	s.qmu.Lock()
	s.queue = append(s.queue, r)
	s.qmu.Unlock()
	for {
		select {
		case <-r.done:
			if r.panicked != nil {
				panic(r.panicked)
			}
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

// next takes the request at the front of the queue for a group that has
// taken n requests so far, or nil: the queue is empty or the group is
// full.
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
	s.queue[0] = nil
	s.queue = s.queue[1:]
	r.cutBefore, r.requeued = false, false
	return r
}

// requeue puts rs back at the front of the queue, in order.
func (s *Store) requeue(rs ...*request) {
	for _, r := range rs {
		r.requeued = true
	}
	s.qmu.Lock()
	s.queue = append(rs, s.queue...)
	s.qmu.Unlock()
}

// commitGroup commits one group (called by the leader).
func (s *Store) commitGroup() {
	if s.closed {
		s.failQueue(ErrClosed)
		return
	}
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
		return nil
	})
	switch {
	case err != nil && g.taken == 0:
		// The KV refused to open a transaction (closed, or cut): no group
		// can commit, so every waiting request fails.
		s.failQueue(applyErr(err))
	case err == nil:
		s.ctxMu.Lock()
		maps.Copy(s.ctxs, g.ctxs)
		s.ctxMu.Unlock()
		for _, r := range g.members {
			r.finish(r.changes, nil)
		}
	case failed != nil:
		// Nothing was committed. The members before the failed request
		// are committed again from the deltas they built, in order, by
		// the next group; the failed one, if it was only too big to share
		// a transaction, after them in a group of its own.
		if errors.Is(failErr, ErrTxnTooBig) && len(g.members) > 0 {
			failed.cutBefore = true
			s.requeue(append(g.members, failed)...)
			return
		}
		s.requeue(g.members...)
		failed.finish(nil, applyErr(failErr))
	case errors.Is(err, ErrTxnTooBig) && len(g.members) > 1:
		// The commit found the group too big: commit it in halves.
		g.members[len(g.members)/2].cutBefore = true
		s.requeue(g.members...)
	default:
		err = applyErr(err)
		for _, r := range g.members {
			r.finish(nil, err)
		}
		s.dropRequeued(err)
	}
}

// failQueue fails every queued request with err.
func (s *Store) failQueue(err error) {
	s.qmu.Lock()
	q := s.queue
	s.queue = nil
	s.qmu.Unlock()
	for _, r := range q {
		r.finish(nil, err)
	}
}

// dropRequeued, after a group failed to commit, refuses the requests put
// back at the front of the queue whose deltas were built over that
// group's state, which is now lost: they fail with err. The requeued
// Applies (a peer's deltas depend on nothing here) stay queued.
func (s *Store) dropRequeued(err error) {
	s.qmu.Lock()
	i := 0
	for i < len(s.queue) && s.queue[i].requeued {
		i++
	}
	requeued := s.queue[:i:i]
	var keep []*request
	for _, r := range requeued {
		if r.built {
			r.finish(nil, err)
		} else {
			keep = append(keep, r)
		}
	}
	s.queue = append(keep, s.queue[i:]...)
	s.qmu.Unlock()
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
