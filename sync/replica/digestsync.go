package replica

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Digest sync: the answering side (what a requester lacks, in batches),
// and at the end the asking side (RequestSync, requestSync).

// answerSync replies with what the requester lacks, in batches.
func (e *Engine) answerSync(p *peerState, m *wire.Message) {
	var own []wire.NamespaceContext
	seen := make(map[string]bool, min(len(m.Contexts), e.cfg.MaxSyncContexts))
	for _, nc := range m.Contexts {
		ns := nc.Namespace
		if seen[ns] {
			continue // asked twice in one message: answered once
		}
		if len(seen) == e.cfg.MaxSyncContexts {
			e.reject(p, ns, fmt.Errorf("%w: more than %d", ErrTooManyContexts, e.cfg.MaxSyncContexts))
			break
		}
		seen[ns] = true
		if m.Reply {
			delete(p.joinWait, ns) // the peer asked first: this exchange repairs both ways
		}
		if !e.pol.ShouldHold(ns) {
			continue
		}
		have, err := crdt.DecodeContext(nc.Context, e.cfg.Limits)
		if err != nil {
			e.reject(p, ns, err)
			continue
		}
		e.remember(p, ns, nc.Context)
		if e.trees[ns] != nil && !e.pol.ReplicaMayWrite(p.Replica, ns) {
			e.askWriterFor(ns, have)
		}
		ret, err := e.st.Retracted(ns)
		if err != nil {
			e.stateErr(p, fmt.Errorf("replica: answering %s's sync of %s: %w", p.ID, ns, err))
			continue
		}
		sum := retractedSum(ret)
		ctx := e.st.Context(ns)
		if m.Reply && ctx.IsEmpty() && e.toldEmptyRecently(ns) {
			// This node holds none of ns and told another requester so
			// less than RetransmitAfter ago: that one's whole copy may be
			// on its way, and this requester, told the same, would send a
			// second (emptyTold). It is not told now; this node asks it
			// RetransmitAfter later (joinWait, as the other writers of a
			// new reader wait), with what the first copy brought by then,
			// unless it asks again first.
			if p.joinWait == nil {
				p.joinWait = map[string]SyncCause{}
			}
			if len(p.joinWait) == 0 {
				p.joinAt = e.now.Add(e.cfg.RetransmitAfter)
			}
			p.joinWait[ns] = CauseReverse
		} else if m.Reply {
			if ctx.IsEmpty() {
				e.toldEmpty(ns)
			}
			// Our context reveals no content, and it lets the requester send
			// what we lack even when we cannot yet tell it may read ns (the
			// grant that says so may be among what we lack).
			own = append(own, namespaceContextOf(ns, ctx, ret, sum))
			if len(ctx.Missing(have)) > 0 && e.mayOwe(p, ns, have) {
				// The requester holds dots we lack: its answer to our
				// context is owed, and asked for again if it is lost
				// (Tick), as our own requests are, until we hold what it
				// had. (A reader sends no content: nothing is owed.) A
				// holder of none of ns cannot tell the requester may read
				// it: the retries go as authority asks.
				put(&p.asked, ns, asking{at: e.now, tries: p.asked[ns].tries, want: have, cause: CauseReverse,
					authority: p.asked[ns].authority || !e.pol.PeerMayRead(p.Peer, ns)})
			}
		}
		if !e.pol.PeerMayRead(p.Peer, ns) {
			continue // never send a namespace's content to a peer that may not read it
		}
		if !e.pol.ReplicaMayWrite(e.cfg.Replica, ns) {
			// Only writers send content (their removal claims count, a
			// reader's would not, and a reader relaying records without
			// them would leave the requester past a removal it never saw).
			continue
		}
		sendRetracted := uint64(len(ret)) != nc.Retracted || !bytes.Equal(sum[:], nc.RetSum)
		if !sendRetracted || len(ret) == 0 {
			ret = nil
		}
		if !e.sendMissing(p, ns, ctx, have, ret) {
			continue
		}
		put(&p.answered, ns, e.now)
		delete(p.joining, ns)
	}
	if len(own) > 0 {
		e.send(p.ID, &wire.Message{Kind: wire.KindSyncReply, Contexts: own})
	}
}

// sendMissing sends p, in batches, the records of ns that have (p's
// context) lacks, ctx being this node's context of ns; ret, when not nil,
// goes with the last batch (the retracted ids). It reports false if the
// store failed, and then nothing went.
func (e *Engine) sendMissing(p *peerState, ns string, ctx, have *crdt.Context, ret []string) bool {
	// Records go out in batches. Every batch's context claims the dots
	// both sides have seen (so a dot the requester holds in a sent
	// record and this side removed is dropped there) and the dots
	// removed here that the requester never saw: a batch that brought
	// a record past a removal without the removed dot would let the
	// requester take that dot back from a peer that never saw the
	// removal, and then hold it for good with a context equal to
	// everyone's (the simulator found this at 100 nodes). Which dots
	// were removed is known once every record is found, so the
	// batches are made first and sent then. The last batch carries the
	// retracted ids.
	//
	// But a removed dot's claim is only safe beside the record it was
	// removed from: a join drops only what the delta's own records
	// hold, so a batch claiming it without that record, arriving when
	// the record's batch was lost, moves the requester's context past
	// a removal its record never saw, and releases live deltas held
	// for it onto the stale record (sim/doc.go, Found 6). Which record
	// a removed dot was in is not kept, so an answer that claims
	// removed dots goes whole, in one message up to
	// WholeAnswerMaxBytes; only a larger one is still split, and can
	// still leave that gap.
	shared := ctx.Intersect(have)
	var found []sentRecord
	removed, err := e.st.Missing(ns, have, func(id string, rec *crdt.Record) error {
		found = append(found, sentRecord{id, rec, len(crdt.EncodeRecord(rec)) + len(id)})
		return nil
	})
	if err != nil {
		// Nothing goes: a batch without the removed dots (known only
		// once every record is found) could carry a record past a
		// removal the requester never saw, the very gap the claims
		// close. The requester's next sync asks again.
		e.stateErr(p, fmt.Errorf("replica: answering %s's sync of %s: %w", p.ID, ns, err))
		return false
	}
	limit := e.cfg.BatchMaxBytes
	if removed != nil && !removed.IsEmpty() {
		limit = max(limit, e.cfg.WholeAnswerMaxBytes)
	}
	batches := batchRecords(found, limit)
	if len(batches) == 0 && ((removed != nil && !removed.IsEmpty()) || ret != nil) {
		batches = append(batches, map[string]*crdt.Record{})
	}
	claims := shared
	if removed != nil && !removed.IsEmpty() {
		claims = shared.Clone()
		claims.Join(removed)
	}
	for i, b := range batches {
		var rids []string
		if ret != nil && i == len(batches)-1 {
			rids = ret
		}
		d := crdt.AssembleMap(claims.Clone(), b, rids)
		nd := wire.NamespaceDelta{Namespace: ns, Delta: d.Encode()}
		nd.Sign(wire.KindSyncReply, e.cfg.Signer)
		msg := &wire.Message{Kind: wire.KindSyncReply, Deltas: []wire.NamespaceDelta{nd}}
		p.stats.BytesSent += uint64(msg.Size())
		e.send(p.ID, msg)
	}
	return true
}

// sentRecord is a record a sync answer sends, with its encoded size.
type sentRecord struct {
	id   string
	rec  *crdt.Record
	size int
}

// batchRecords cuts recs, in order, into batches that reach limit bytes
// at most by their last record.
func batchRecords(recs []sentRecord, limit int) []map[string]*crdt.Record {
	var batches []map[string]*crdt.Record
	batch, size := map[string]*crdt.Record{}, 0
	for _, r := range recs {
		batch[r.id] = r.rec
		size += r.size
		if size >= limit {
			batches = append(batches, batch)
			batch, size = map[string]*crdt.Record{}, 0
		}
	}
	if len(batch) > 0 {
		batches = append(batches, batch)
	}
	return batches
}

func (e *Engine) namespaceContext(ns string) (wire.NamespaceContext, error) {
	ret, err := e.st.Retracted(ns)
	if err != nil {
		return wire.NamespaceContext{}, err
	}
	return namespaceContextOf(ns, e.st.Context(ns), ret, retractedSum(ret)), nil
}

func namespaceContextOf(ns string, ctx *crdt.Context, ret []string, sum [32]byte) wire.NamespaceContext {
	return wire.NamespaceContext{Namespace: ns, Context: ctx.Encode(), Retracted: uint64(len(ret)), RetSum: sum[:]}
}

func retractedSum(ids []string) [32]byte {
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// RequestSync asks peer for a digest sync of ns now (catch-up). An empty ns
// means every namespace the pair shares.
func (e *Engine) RequestSync(peer PeerID, ns string) error {
	p, ok := e.peers[peer]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownPeer, peer)
	}
	if ns == "" {
		for _, n := range e.st.Namespaces() {
			if e.pol.PeerMayRead(p.Peer, n) {
				needSyncOf(p, n, CauseRequested)
			}
		}
	} else {
		needSyncOf(p, ns, CauseRequested)
	}
	e.flush(p)
	return nil
}

// requestSync sends p one sync request for the namespaces it needs a sync
// of (needSync), each with this node's context.
func (e *Engine) requestSync(p *peerState) {
	nss := make([]string, 0, len(p.needSync))
	for ns := range p.needSync {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	causes := p.needSync
	p.needSync = map[string]SyncCause{}
	authority := p.authority
	p.authority = nil
	msg := &wire.Message{Kind: wire.KindSyncRequest, Reply: true}
	for _, ns := range nss {
		// An authority ask stays one on its retries: the peer's read is
		// still unknown here, and a retry dropped for it would leave the
		// entry owed for ever (askedAny then asks no one else).
		auth := authority[ns] || p.asked[ns].authority
		if !e.pol.PeerMayRead(p.Peer, ns) && !auth || !e.pol.ShouldHold(ns) {
			continue
		}
		nc, err := e.namespaceContext(ns)
		if err != nil {
			e.stateErr(p, fmt.Errorf("replica: asking %s for a sync of %s: %w", p.ID, ns, err))
			p.needSync[ns] = causes[ns] // try again next tick
			continue
		}
		msg.Contexts = append(msg.Contexts, nc)
		a := p.asked[ns]
		a.at, a.tries, a.cause, a.authority, a.lostBatch = e.now, a.tries+1, causes[ns], auth, false
		put(&p.asked, ns, a)
		e.syncStats.Asked[causes[ns]]++
	}
	if len(msg.Contexts) == 0 {
		return
	}
	p.stats.SyncsSent++
	p.stats.LastSync = e.now
	e.send(p.ID, msg)
}

// asking is a sync request waiting for the peer's answer: when it left,
// how many requests in a row went unanswered, and, once known, the
// peer's context when it answered (want). An answer comes in batches,
// and its last message is the peer's context: the request stays owed
// until this node's context covers want, so a lost batch is asked for
// again on the next timeout instead of waiting for anti-entropy to pick
// that peer (the simulator found an inbox whose only writer was never
// picked again in five minutes).
type asking struct {
	at    time.Time
	tries int
	want  *crdt.Context
	cause SyncCause // of the request (SyncStats)
	// authority: asked of a peer not known to read the namespace here
	// (askAuthority); its retries are asked the same way.
	authority bool
	// skewed: answers refused for clock skew, whose tries were given
	// back (skewRefused)
	skewed int
	// lostBatch: the answer's last message came and this node still
	// lacks what the peer had, so a batch of it was lost on a link that
	// works (syncRetryWait); cleared when the request is asked again.
	lostBatch bool
}

// antiEntropy asks, for each namespace held, one random peer among those
// that may read it for a digest sync, so each namespace gets a round as
// the epidemic model counts one, however few members share it; a node
// that may not write ns asks among its writers, since only writers send
// content (answerSync), and two readers comparing contexts repair
// nothing. One random peer for every namespace it may read, as before,
// left a namespace read by 3 of a node's 6 peers unsynced 7 rounds in a
// row (1% odds): a new reader of a team namespace got it from an owner
// that lacked a writer's records and waited 82 s (mnemo sim --mixed,
// seed 1291). The requests to one peer still leave as one message.
func (e *Engine) antiEntropy() {
	ids := e.sortedPeers()
	readers := make([]PeerID, 0, len(ids))
	for _, ns := range e.st.Namespaces() {
		var pick []PeerID
		if !e.pol.ReplicaMayWrite(e.cfg.Replica, ns) {
			pick = e.writersOf(ns) // this node is not among them
		}
		if len(pick) == 0 {
			readers = readers[:0]
			for _, id := range ids {
				if e.pol.PeerMayRead(e.peers[id].Peer, ns) {
					readers = append(readers, id)
				}
			}
			pick = readers
		}
		if len(pick) > 0 {
			needSyncOf(e.peers[pick[e.rng.IntN(len(pick))]], ns, CauseAntiEntropy)
		}
	}
}

// toldEmptyRecently reports whether this node told a peer, within the
// last RetransmitAfter, that it holds none of ns (emptyTold).
func (e *Engine) toldEmptyRecently(ns string) bool {
	at, ok := e.emptyTold[ns]
	return ok && e.now.Sub(at) < e.cfg.RetransmitAfter
}

// toldEmpty notes that this node tells a requester now that it holds
// none of ns. At most maxEmptyTold namespaces are noted at once (requests
// may name any namespace); past that, one is not noted, and its next
// requester is told too, as before the note existed.
func (e *Engine) toldEmpty(ns string) {
	if e.emptyTold == nil {
		e.emptyTold = map[string]time.Time{}
	}
	if len(e.emptyTold) >= maxEmptyTold {
		maps.DeleteFunc(e.emptyTold, func(_ string, at time.Time) bool { return e.now.Sub(at) >= e.cfg.RetransmitAfter })
	}
	if len(e.emptyTold) < maxEmptyTold {
		e.emptyTold[ns] = e.now
	}
}

// maxEmptyTold bounds Engine.emptyTold.
const maxEmptyTold = 1024
