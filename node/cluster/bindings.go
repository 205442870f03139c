package cluster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Who hosts which agent. Every node claims its local principals with a
// binding signed by its key (acl.Binding) and sends a new claim or
// hand-over, alone, to every peer at once. Otherwise bindings settle by
// digest and index, as namespaces do by digest sync. Every frame carries
// the digest of its sender's set. A node sends a new peer its digest and
// asks for the peer's (a probe), again every tick until the peer's frame
// arrives (a frame sent before the peer knew this node is refused by its
// transport), and every peer its digest alone every BindingsInterval (a
// summary). A node that sees a digest differ from its own sends its index
// (a short id per binding) and asks for what it lacks; the peer answers
// with the bindings that index lacks, and with its own index if it lacks
// some itself, which the first node answers in turn: four frames at most,
// and only missing bindings travel. An ask whose answer is lost is asked
// again after bindingsAskGap (three tries), and a node sends its index to
// at most one peer per bindingsAskGap on its own account, so a newcomer
// that hears many differing digests at once is sent the set once.
//
// So a settled cluster exchanges a few dozen bytes per pair each interval,
// a partition's heal costs a digest each way when nothing changed, and a
// node lacking bindings gets just those. (Before, every join and claim sent
// every binding to every peer: at 100 nodes starting together, 83 MB of
// the 177 MB mnemo sim moved, 28 MB now.) A frame whose digest matches the
// receiver's is not decoded further. A node admits
// bindings into its acl.Directory — first claim stands, only the current
// host's hand-over moves an agent — and stores them, so a node restarted
// alone still knows who signed the grants it holds. Which agents a peer
// hosts (what it may read and write) is read from the directory, never
// from gossip metadata.

// BindingsInterval is how often a node sends the digest of its bindings to
// every peer, so a lost frame costs at most this delay.
const BindingsInterval = 30 * time.Second

// The bindings frames a node sends to many peers, each encoded once per
// change of its set: the digest always, and the index in an ask.
type bindingsForm int

const (
	bindingsSummary bindingsForm = iota // the digest alone
	bindingsProbe                       // the digest; send yours back
	bindingsAsk                         // the digest and the index; send what I lack, and your index
	bindingsForms
)

// bindingsAskGap is the least time between two indexes a node sends to
// ask a peer for the bindings it lacks.
const bindingsAskGap = 500 * time.Millisecond

// MaxBindingsPerFrame bounds the bindings one frame may carry; a frame with
// more is refused whole.
const MaxBindingsPerFrame = 4096

// bindingsMeta is the store metadata key of the directory: the encoded
// bindings in the order they were admitted.
const bindingsMeta = "cluster/bindings"

// loadBindings fills the directory from the store.
func (l *loop) loadBindings() {
	l.dir = acl.NewDirectory()
	l.reindexBindings()
	raw, err := l.svc.Store().Meta(bindingsMeta)
	if err != nil || raw == nil {
		return
	}
	var encs [][]byte
	if err := msgpack.Unmarshal(raw, &encs); err != nil {
		l.log.Warn("stored bindings unreadable; relearning them from peers", "err", err)
		return
	}
	for _, e := range encs {
		if b, err := acl.DecodeBinding(e); err == nil {
			_, _ = l.dir.Admit(b)
		}
	}
	l.reindexBindings()
}

// saveBindings stores the directory. Call with knownMu held.
func (l *loop) saveBindings() {
	var encs [][]byte
	for _, b := range l.dir.Bindings() {
		encs = append(encs, b.Encode())
	}
	raw, _ := msgpack.Marshal(encs)
	if err := l.svc.Store().SetMeta(bindingsMeta, raw); err != nil {
		l.log.Warn("could not store bindings", "err", err)
	}
}

// reindexBindings rebuilds byReplica, everByReplica, the held encodings
// and their digest, and drops the encoded bindings frames: call it, with
// knownMu held, whenever dir changes.
func (l *loop) reindexBindings() {
	l.bindingsFrames = [bindingsForms][]byte{}
	l.byReplica = map[crdt.ReplicaID][]namespace.Address{}
	l.everByReplica = map[crdt.ReplicaID][]namespace.Address{}
	l.heldBindings = map[string]bool{}
	l.bindingIDs, l.bindingEncs = nil, nil
	var encs []string
	for _, b := range l.dir.Bindings() {
		e := string(b.Encode())
		l.heldBindings[e] = true
		encs = append(encs, e)
		l.bindingIDs = append(l.bindingIDs, []byte(bindingID(e)))
		l.bindingEncs = append(l.bindingEncs, []byte(e))
		r := acl.ReplicaIDOf(b.Key)
		if !slices.Contains(l.everByReplica[r], b.Principal) {
			l.everByReplica[r] = append(l.everByReplica[r], b.Principal)
		}
		if cur, _ := l.dir.KeyOf(b.Principal); cur.Equal(b.Key) && !slices.Contains(l.byReplica[r], b.Principal) {
			l.byReplica[r] = append(l.byReplica[r], b.Principal)
		}
	}
	l.bindingsSum = bindingsDigest(encs)
}

// bindingsDigest is the digest of a set of encoded bindings: SHA-256 over
// the sorted, length-prefixed encodings, so two nodes holding the same
// bindings agree whatever order they admitted them in.
func bindingsDigest(encs []string) []byte {
	slices.Sort(encs)
	h := sha256.New()
	var n [4]byte
	for _, e := range encs {
		binary.BigEndian.PutUint32(n[:], uint32(len(e)))
		h.Write(n[:])
		h.Write([]byte(e))
	}
	return h.Sum(nil)
}

// claimAgents signs a binding for every local principal not yet bound,
// and returns those it added. A local principal another node already
// hosts is not claimed: the conflict is logged and counted, and that
// principal's records signed here will not count elsewhere.
func (l *loop) claimAgents() []acl.Binding {
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	var added []acl.Binding
	for _, p := range l.cfg.Agents() {
		if k, ok := l.dir.KeyOf(p); ok {
			if !k.Equal(l.cfg.Identity.Public) {
				l.conflicts.Add(1)
				l.log.Warn("a local principal is hosted by another node; not claimed", "principal", p, "host", acl.NodeIDOf(k))
			}
			continue
		}
		b, err := acl.NewBinding(l.cfg.Identity, p, crdt.Timestamp(l.cfg.Clock.Now().UnixNano()))
		if err != nil {
			l.log.Warn("could not claim principal", "principal", p, "err", err)
			continue
		}
		if changed, err := l.dir.Admit(b); err == nil && changed {
			added = append(added, b)
		}
	}
	if len(added) > 0 {
		l.reindexBindings()
		l.saveBindings()
	}
	return added
}

// hostedElsewhere reports whether p is bound to another node's key. Any
// goroutine.
func (l *loop) hostedElsewhere(p namespace.Address) (acl.NodeID, bool) {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	k, ok := l.dir.KeyOf(p)
	if !ok || k.Equal(l.cfg.Identity.Public) {
		return "", false
	}
	return acl.NodeIDOf(k), true
}

// bindingsFrame is the bindings frame of form. Each form is encoded once
// per change of the directory: the same bindings go to every peer on join,
// every tick until heard, in replies and on every claim, and encoding them
// (compressed) each time cost as much as admitting them.
func (l *loop) bindingsFrame(form bindingsForm) []byte {
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	if f := l.bindingsFrames[form]; f != nil {
		return f
	}
	m := &wire.Message{Kind: wire.KindBindings, Reply: form != bindingsSummary, BindingsSum: l.bindingsSum}
	if form == bindingsAsk {
		m.BindingIDs = l.bindingIndex()
	}
	frame, err := l.codec.Encode(m)
	if err != nil {
		l.log.Error("encode bindings", "err", err)
		return nil
	}
	l.bindingsFrames[form] = frame
	return frame
}

// sendBindingsSummary sends the digest of the bindings to every peer: the
// periodic check, each BindingsInterval.
func (l *loop) sendBindingsSummary() {
	l.lastBindings = l.cfg.Clock.Now()
	l.sendBindingsTo(l.senderIDs(func(replica.PeerID) bool { return true }), bindingsSummary)
}

// sendNewBindings sends bindings just made here (a claim, a hand-over),
// alone, to every peer: they should not wait for the next summary.
func (l *loop) sendNewBindings(bs []acl.Binding) {
	if len(bs) == 0 {
		return
	}
	m := &wire.Message{Kind: wire.KindBindings}
	for _, b := range bs {
		m.Bindings = append(m.Bindings, b.Encode())
	}
	l.knownMu.RLock()
	m.BindingsSum = l.bindingsSum
	l.knownMu.RUnlock()
	l.sendFrameTo(l.senderIDs(func(replica.PeerID) bool { return true }), m)
}

// bindingIndex is the short id of every binding held, in the directory's
// order (made by reindexBindings; callers must not change it). Call with
// knownMu held.
func (l *loop) bindingIndex() [][]byte { return l.bindingIDs }

// bindingID is the short id of an encoded binding in an index.
func bindingID(enc string) string {
	sum := sha256.Sum256([]byte(enc))
	return string(sum[:wire.BindingIDSize])
}

// sendFrameTo encodes m and sends it to ids.
func (l *loop) sendFrameTo(ids []replica.PeerID, m *wire.Message) {
	if len(ids) == 0 {
		return
	}
	frame, err := l.codec.Encode(m)
	if err != nil {
		l.log.Error("encode bindings", "err", err)
		l.dropped.Add(uint64(len(ids)))
		return
	}
	for _, id := range ids {
		l.push(id, wire.KindBindings, frame)
	}
}

// askBindings sends the digest of the bindings, asking for the peer's, to
// every peer not yet heard from.
func (l *loop) askBindings() {
	l.sendBindingsTo(l.senderIDs(func(id replica.PeerID) bool { _, ok := l.peers[id]; return ok && !l.heard[id] }), bindingsProbe)
}

// asked is a bindings index sent asking a peer for what this node lacks.
type asked struct {
	at    time.Time
	tries int
}

// bindingsAskTries bounds the asks in a row a peer leaves unanswered;
// after them, the next summary starts over.
const bindingsAskTries = 3

// askIndex sends this node's index to from, asking for the bindings it
// lacks, and expects an answer (any frame of from's that asks nothing).
func (l *loop) askIndex(from replica.PeerID) {
	a := l.bindingsAsked[from]
	l.bindingsAsked[from] = asked{at: l.cfg.Clock.Now(), tries: a.tries + 1}
	l.sendBindingsTo([]replica.PeerID{from}, bindingsAsk)
}

// askBindingsAgain asks again the peers whose answer is overdue, and, once
// bindingsAskGap has passed since the last ask, one peer whose index named
// bindings this node lacks when it could not ask at once.
func (l *loop) askBindingsAgain(now time.Time) {
	if len(l.lackFrom) > 0 && now.Sub(l.lastIndexAsk) >= bindingsAskGap {
		id := slices.Min(slices.Collect(maps.Keys(l.lackFrom)))
		delete(l.lackFrom, id)
		if _, ok := l.peers[id]; ok {
			l.lastIndexAsk = now
			l.askIndex(id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(l.bindingsAsked)) {
		a := l.bindingsAsked[id]
		switch {
		case now.Sub(a.at) < bindingsAskGap:
		case a.tries >= bindingsAskTries:
			delete(l.bindingsAsked, id)
		default:
			l.askIndex(id)
		}
	}
}

// senderIDs lists, sorted, the peers with an outlet that want picks.
func (l *loop) senderIDs(want func(replica.PeerID) bool) []replica.PeerID {
	var ids []replica.PeerID
	for id := range l.senders {
		if want(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// sendBindingsTo sends the bindings frame of form to ids, in that order.
func (l *loop) sendBindingsTo(ids []replica.PeerID, form bindingsForm) {
	if len(ids) == 0 {
		return
	}
	frame := l.bindingsFrame(form)
	for _, id := range ids {
		if frame == nil {
			l.dropped.Add(1)
			continue
		}
		l.push(id, wire.KindBindings, frame)
	}
}

// receiveBindings admits a peer's bindings and answers as the frame asks.
// A frame whose digest is this node's own holds nothing new (one that asks
// gets the digest back, which tells the peer it was heard). A digest alone
// that differs (a summary, a probe) gets this node's index, asking for
// what it lacks. An index gets the bindings it lacks and, if it asks and
// names bindings this node lacks, this node's index in return (to one
// peer per tick). Bindings already held are not decoded again.
func (l *loop) receiveBindings(from replica.PeerID, m *wire.Message) {
	l.heard[from] = true
	_, asking := l.bindingsAsked[from]
	if !m.Reply {
		delete(l.bindingsAsked, from) // the answer to our index (what it asks nothing)
	}
	l.knownMu.RLock()
	same := bytes.Equal(m.BindingsSum, l.bindingsSum)
	l.knownMu.RUnlock()
	switch {
	case same && m.Reply:
		l.sendBindingsTo([]replica.PeerID{from}, bindingsSummary)
		return
	case same:
		return
	case len(m.Bindings) > MaxBindingsPerFrame || len(m.BindingIDs) > MaxBindingsPerFrame:
		l.rejected.Add(1)
		l.log.Warn("bindings frame too large", "peer", from, "bindings", len(m.Bindings), "ids", len(m.BindingIDs))
		return
	case len(m.Bindings) == 0 && len(m.BindingIDs) == 0:
		if !(asking && !m.Reply) { // a bare digest answering our index: nothing more to get
			l.askIndex(from)
		}
		return
	}
	l.admitBindings(from, m.Bindings)
	if len(m.BindingIDs) > 0 {
		l.answerIndex(from, m)
	}
}

// admitBindings admits the encoded bindings a peer sent.
func (l *loop) admitBindings(from replica.PeerID, encs [][]byte) {
	changed := false
	l.knownMu.Lock()
	for _, e := range encs {
		if l.heldBindings[string(e)] {
			continue
		}
		b, err := acl.DecodeBinding(e)
		if err == nil {
			var ch bool
			ch, err = l.dir.Admit(b)
			changed = changed || ch
		}
		if err != nil {
			l.rejected.Add(1)
			if errors.Is(err, acl.ErrHostedElsewhere) {
				l.conflicts.Add(1)
			}
			l.log.Warn("binding refused", "peer", from, "err", err)
		}
	}
	if changed {
		l.reindexBindings()
		l.saveBindings()
	}
	l.knownMu.Unlock()
	if changed {
		l.svc.RefreshPolicy() // records signed for newly bound principals may count now
		l.setMembers(l.drv.members())
		l.resyncRefused()
	}
}

// maxRefused bounds the (peer, namespace) pairs remembered for a sync
// once the bindings change.
const maxRefused = 4096

// noteRefused remembers a namespace whose content a peer sent was refused
// because its author or sender may not write it here: the binding that
// says who hosts that author may not have reached this node yet (deltas
// and bindings travel apart), and nothing else would ask for that content
// again before anti-entropy picks the pair (every peers × 10 s).
func (l *loop) noteRefused(rj replica.Rejection) {
	if !errors.Is(rj.Err, replica.ErrNotAllowed) && !errors.Is(rj.Err, acl.ErrDenied) {
		return
	}
	if l.refusedFrom[rj.From][rj.Namespace] || l.refusedN >= maxRefused {
		return
	}
	if l.refusedFrom == nil {
		l.refusedFrom = map[replica.PeerID]map[string]bool{}
	}
	if l.refusedFrom[rj.From] == nil {
		l.refusedFrom[rj.From] = map[string]bool{}
	}
	l.refusedFrom[rj.From][rj.Namespace] = true
	l.refusedN++
}

// resyncRefused asks every peer whose content was refused (noteRefused)
// for a sync of those namespaces: the bindings changed, so what was
// refused may pass now. A refusal that still holds is refused again and
// remembered again, costing a sync per change of the bindings.
func (l *loop) resyncRefused() {
	for _, p := range slices.Sorted(maps.Keys(l.refusedFrom)) {
		for _, ns := range slices.Sorted(maps.Keys(l.refusedFrom[p])) {
			_ = l.eng.RequestSync(p, ns) // a peer gone since: nothing to ask
		}
	}
	l.refusedFrom, l.refusedN = nil, 0
}

// answerIndex sends a peer the bindings its index lacks, and, when it asks
// and its index names bindings this node lacks, this node's index (not
// asking back, so an exchange is at most four frames even when a binding
// is refused for good; and at most one such index per bindingsAskGap, so
// a newcomer that hears many differing indexes at once is sent the set
// once; the next summary asks again if that is lost).
func (l *loop) answerIndex(from replica.PeerID, m *wire.Message) {
	theirs := make(map[string]bool, len(m.BindingIDs))
	for _, id := range m.BindingIDs {
		theirs[string(id)] = true
	}
	now := l.cfg.Clock.Now()
	reply := &wire.Message{Kind: wire.KindBindings}
	l.knownMu.RLock()
	reply.BindingsSum = l.bindingsSum
	held := make(map[string]bool, len(l.bindingIDs))
	for i, id := range l.bindingIDs {
		held[string(id)] = true
		if !theirs[string(id)] {
			reply.Bindings = append(reply.Bindings, l.bindingEncs[i])
		}
	}
	lacking := false
	for id := range theirs {
		lacking = lacking || !held[id]
	}
	switch {
	case lacking && m.Reply && now.Sub(l.lastIndexAsk) >= bindingsAskGap:
		l.lastIndexAsk = now
		reply.BindingIDs = l.bindingIndex() // no Reply: the exchange ends with the peer's answer
	case lacking && m.Reply:
		l.lackFrom[from] = true // asked on a later tick (askBindingsAgain)
	}
	l.knownMu.RUnlock()
	if len(reply.Bindings) > 0 || len(reply.BindingIDs) > 0 || m.Reply {
		l.sendFrameTo([]replica.PeerID{from}, reply) // an ask always gets an answer
	}
}

// keyOf is the acl.KeyLookup of the memory service: remote principals from
// verified bindings.
func (l *loop) keyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return l.dir.KeyOf(p)
}

// principalsOfKey lists the principals bound to key.
func (l *loop) principalsOfKey(key ed25519.PublicKey) []namespace.Address {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return l.dir.PrincipalsOf(key)
}

// hostedBy reports whether the replica r's node hosts p or hosted it before
// a hand-over (an author check: p's writes come from p's node).
func (l *loop) hostedBy(p namespace.Address, r crdt.ReplicaID) bool {
	if r == l.cfg.Identity.ReplicaID() {
		return slices.Contains(l.cfg.Agents(), p)
	}
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return slices.Contains(l.everByReplica[r], p)
}

// principalsOfReplica lists the principals bound to the key of replica r.
func (l *loop) principalsOfReplica(r crdt.ReplicaID) []namespace.Address {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return l.byReplica[r]
}

// ErrNotHosted reports a hand-over of a principal this node does not host.
var ErrNotHosted = errors.New("cluster: principal not hosted by this node")

// handover signs the hand-over of p, which this node hosts, to the node
// whose key is to, and admits it; the driver then runs announceBindings
// on its loop. Any goroutine. Errors wrap ErrNotHosted or acl.ErrInvalid.
func (l *loop) handover(p namespace.Address, to ed25519.PublicKey) (acl.Binding, error) {
	l.knownMu.Lock()
	cur, ok := l.dir.KeyOf(p)
	if !ok || !cur.Equal(l.cfg.Identity.Public) {
		l.knownMu.Unlock()
		return acl.Binding{}, fmt.Errorf("%w: %s", ErrNotHosted, p)
	}
	b, err := acl.NewHandover(l.cfg.Identity, p, to, crdt.Timestamp(l.cfg.Clock.Now().UnixNano()))
	if err == nil {
		_, err = l.dir.Admit(b)
	}
	if err != nil {
		l.knownMu.Unlock()
		return acl.Binding{}, err
	}
	l.reindexBindings()
	l.saveBindings()
	l.knownMu.Unlock()
	l.log.Info("handed over", "binding", b.String())
	l.svc.RefreshPolicy()
	return b, nil
}

// announceHandover sends the hand-over b to every peer and re-reads which
// agents each member hosts.
func (l *loop) announceHandover(b acl.Binding) {
	l.sendNewBindings([]acl.Binding{b})
	l.setMembers(l.drv.members())
}
