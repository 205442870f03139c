package replica

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
)

// The engine hears back: Ready hands deltas out to apply, Advance reports
// what the driver did with them (doc.go, "The loop").

// ErrRefused wraps the driver's error in the Rejection of a delta the engine
// accepted and the driver then did not apply (Advance).
var ErrRefused = errors.New("replica: delta refused by the node")

// Refusal is a delta of the last Ready.Apply the driver did not apply.
type Refusal struct {
	Index int   // position in Ready.Apply
	Err   error // why (clock skew, an acl or surgery gate, an unknown author, the disk)
}

// batchAck is the ack of one live batch, sent once the outcome of every
// delta of the batch handed out to apply is known.
type batchAck struct {
	to  PeerID
	seq uint64
}

// outcomes tracks the deltas to apply and the acks waiting on them: first
// while they wait in Engine.ready, then, once Ready has handed them out,
// until Advance reports how they fared.
type outcomes struct {
	ackOf []int      // parallel to the Apply slice: index into acks, or -1
	acks  []batchAck // acks waiting on at least one delta
	// handed out by Ready, awaiting Advance
	out      []Apply
	outAckOf []int
	outAcks  []batchAck
	// outFirst: namespaces of out that had no tree and of which this node
	// held nothing when Ready handed them out (startTrees)
	outFirst []string
}

// toApply hands a checked delta out to apply, belonging to no batch's ack
// (yet: ackAfter attaches it).
func (e *Engine) toApply(a Apply) {
	e.ready.Apply = append(e.ready.Apply, a)
	e.wait.ackOf = append(e.wait.ackOf, -1)
}

// ackAfter acknowledges batch seq from peer to: at once if it added nothing
// to apply since Ready.Apply had n entries (every delta was rejected, held
// or redundant: nothing left whose outcome is unknown), otherwise when
// Advance reports the outcome of those deltas.
func (e *Engine) ackAfter(to PeerID, seq uint64, n int) {
	if len(e.ready.Apply) == n {
		e.sendAck(e.peers[to], seq)
		return
	}
	i := len(e.wait.acks)
	e.wait.acks = append(e.wait.acks, batchAck{to: to, seq: seq})
	for j := n; j < len(e.wait.ackOf); j++ {
		e.wait.ackOf[j] = i
	}
}

// Ready returns and clears the outputs produced so far. The driver applies
// every Ready.Apply in order and then calls Advance; a Ready taken again
// without an Advance in between counts the earlier deltas as all applied
// (Advance(nil): the driver that never refuses).
func (e *Engine) Ready() Ready {
	if e.wait.out != nil {
		e.Advance(nil)
	}
	e.releaseTree()
	r := e.ready
	e.ready = Ready{}
	if len(r.Apply) > 0 {
		e.wait.out, e.wait.outAckOf, e.wait.outAcks = r.Apply, e.wait.ackOf, e.wait.acks
		e.wait.outFirst = e.firstHeld(r.Apply)
	}
	e.wait.ackOf, e.wait.acks = nil, nil
	return r
}

// HasReady reports whether Ready has something: the driver takes Ready and
// calls Advance until it has not (Advance may emit acks and release held
// deltas).
func (e *Engine) HasReady() bool {
	r := &e.ready
	return len(r.Messages) > 0 || len(r.Apply) > 0 || len(r.Rejected) > 0 || len(r.Errors) > 0 || len(e.treeOut) > 0
}

// Advance reports the outcome of the last Ready's Apply: every delta was
// applied except those refused. A refused delta is counted as a rejection
// of its sender and reported in the next Ready.Rejected (ErrRefused wrapping
// the refusal's error); the ack of a live batch is sent only now, and not at
// all if a delta of the batch was refused (the sender's ack timeout then
// falls back to a digest sync, which retries it); a refused delta
// released from the held ones, whose batch was acked when it was held,
// has its sender asked for a digest sync. Held deltas whose
// dependencies are now applied are released into the next Ready.Apply.
//
// Advance panics if a refusal's Index is outside the last Ready.Apply: that
// is a bug of the driver.
func (e *Engine) Advance(refused []Refusal) {
	w := &e.wait
	applied, ackOf, acks := w.out, w.outAckOf, w.outAcks
	first := w.outFirst
	w.out, w.outAckOf, w.outAcks, w.outFirst = nil, nil, nil, nil
	withhold := make([]bool, len(acks))
	seen := make(map[int]bool, len(refused))
	for _, rf := range refused {
		if rf.Index < 0 || rf.Index >= len(applied) {
			panic(fmt.Sprintf("replica: Advance: refusal of delta %d, the last Ready had %d", rf.Index, len(applied)))
		}
		if seen[rf.Index] {
			continue
		}
		seen[rf.Index] = true
		a := applied[rf.Index]
		err := fmt.Errorf("%w: %w", ErrRefused, rf.Err)
		if p, ok := e.peers[a.From]; ok {
			e.reject(p, a.Namespace, err)
		} else {
			e.ready.Rejected = append(e.ready.Rejected, Rejection{From: a.From, Namespace: a.Namespace, Err: err})
		}
		if a.author != "" {
			e.askAuthor(a.author, a.Namespace) // no ack timeout retries a relayed delta
		}
		if !a.Live && a.author == "" && errors.Is(rf.Err, crdt.ErrClockSkew) {
			e.skewRefused(a.From, a.Namespace)
		}
		if i := ackOf[rf.Index]; i >= 0 {
			withhold[i] = true
		} else if p, ok := e.peers[a.From]; ok && a.Live && a.author == "" {
			// A live delta released from the held ones: its batch was
			// acked when it was held, so no ack timeout of the sender's
			// retries it. Its sender is asked for a sync instead (the
			// simulator's sweep found a node whose clock was behind
			// refuse two released deltas for skew and lack their dots for
			// 53.9 s, until another writer's anti-entropy picked it:
			// mnemo sim --mixed --sweep 1 --seed 1440).
			needSyncOf(p, a.Namespace, CauseHeld)
		}
	}
	for i, a := range applied {
		if !seen[i] {
			e.appliedIn(a.Namespace) // a grant a held delta lacked may be in it
		}
	}
	for i, a := range acks {
		if p, ok := e.peers[a.to]; ok && !withhold[i] {
			e.sendAck(p, a.seq)
		}
	}
	e.startTrees(first)
	// What is now applied may free held deltas; what was refused is not in
	// the state, so nothing is released on its account.
	e.release()
	// Tree payloads held back while their inputs' deltas were applied.
	e.releaseTree()
}

// firstHeld lists the namespaces of the sync answers in apply that have
// no tree and of which this node holds nothing yet: if one is applied,
// the node has just come to hold the namespace (a join). Live deltas are
// not looked at (a holder of none of a namespace refuses its tree's, and
// direct sends go to replica sets below the threshold or to a writer's
// tree without links yet), so the context copy is made for answers only.
func (e *Engine) firstHeld(apply []Apply) []string {
	if !e.treesOn() {
		return nil
	}
	var out, looked []string
	for _, a := range apply {
		ns := a.Namespace
		if a.Live || e.trees[ns] != nil || slices.Contains(looked, ns) {
			continue
		}
		looked = append(looked, ns)
		if e.st.Context(ns).IsEmpty() {
			out = append(out, ns)
		}
	}
	return out
}

// startTrees makes the tree of each namespace of first that this node
// now holds, if its replica set reached the threshold (refreshTree), as
// refreshTrees would at the next anti-entropy round or membership change. A node that
// came to hold a project from a sync answer otherwise stayed off its
// tree, and got none of the project's later writes, until that round:
// up to AntiEntropyInterval (in sim's TestScaleFigures at 100/300/0.1 a
// holder got the set-up at 2.2 s and joined the tree at 10.2 s, the last
// to get every write made in between). Only a namespace held for the
// first time is looked at, so a namespace below the threshold costs no
// walk over the peers for each delta applied.
func (e *Engine) startTrees(first []string) {
	for _, ns := range first {
		if e.trees[ns] == nil && !e.st.Context(ns).IsEmpty() {
			e.refreshTree(ns)
		}
	}
}

// stateErr reports an error of State met while serving peer p.
func (e *Engine) stateErr(p *peerState, err error) {
	p.stats.StateErrors++
	e.ready.Errors = append(e.ready.Errors, err)
}

// skewRefused: the driver refused a sync answer of ns from peer for clock
// skew (this node's clock behind the writer's by more than the bound the
// node tolerates: the answer's newest records are ahead of it). The
// answer came; what it brought is refused only until this clock catches
// up. So the request it answered does not spend one of its syncTries, up
// to syncTries times (then anti-entropy's, as any request's): a writer
// that kept writing had every answer carry a record still too new, and a
// holder of none of ns (which anti-entropy never asks about: it holds
// none) gave up after four and lacked the writer's 70 dots for 56.1 s,
// until the writer's anti-entropy picked it (mnemo sim --mixed --sweep 1
// --seed 1158).
func (e *Engine) skewRefused(peer PeerID, ns string) {
	p := e.peers[peer]
	if p == nil {
		return
	}
	a, ok := p.asked[ns]
	if !ok || a.tries == 0 || a.skewed >= syncTries {
		return
	}
	a.tries--
	a.skewed++
	p.asked[ns] = a
}
