package cluster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
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
// binding signed by its key (acl.Binding) and sends every binding it knows
// to each peer: when the peer joins, asking for the peer's in return, again
// every tick until the peer's arrive (a frame sent before the peer knew
// this node is refused by its transport), and to everyone whenever it
// claims a new principal or hands one over. Every BindingsInterval it sends
// everyone only a digest of its bindings (a summary); a peer whose digest
// differs answers with all of its own and asks for the sender's, so a lost
// frame costs at most that delay while a settled cluster exchanges a few
// dozen bytes per pair, not every binding (N² frames of N bindings each
// interval at N nodes). Every frame carries the digest, and a frame whose
// digest matches the receiver's is not decoded further. A node admits
// bindings into its acl.Directory — first claim stands, only the current
// host's hand-over moves an agent — and stores them, so a node restarted
// alone still knows who signed the grants it holds. Which agents a peer
// hosts (what it may read and write) is read from the directory, never
// from gossip metadata.

// BindingsInterval is how often a node sends the digest of its bindings to
// every peer (its bindings go on join, on a mismatch and when it claims or
// hands over a principal), so a lost frame costs at most this delay.
const BindingsInterval = 30 * time.Second

// What a bindings frame carries: the digest always; every binding too,
// or every binding and a request for the peer's.
type bindingsForm int

const (
	bindingsSummary bindingsForm = iota // the digest alone
	bindingsAll                         // every binding
	bindingsAsk                         // every binding; send yours back
	bindingsForms
)

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
	var encs []string
	for _, b := range l.dir.Bindings() {
		e := string(b.Encode())
		l.heldBindings[e] = true
		encs = append(encs, e)
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
// and reports whether it added any. A local principal another node already
// hosts is not claimed: the conflict is logged and counted, and that
// principal's records signed here will not count elsewhere.
func (l *loop) claimAgents() bool {
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	added := false
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
			added = true
		}
	}
	if added {
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
	m := &wire.Message{Kind: wire.KindBindings, Reply: form == bindingsAsk, BindingsSum: l.bindingsSum}
	if form != bindingsSummary {
		for _, b := range l.dir.Bindings() {
			m.Bindings = append(m.Bindings, b.Encode())
		}
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

// sendBindings sends every binding to every peer: after a claim or a
// hand-over, which should not wait for the next summary.
func (l *loop) sendBindings() {
	l.sendBindingsTo(l.senderIDs(func(replica.PeerID) bool { return true }), bindingsAll)
}

// askBindings sends the bindings, asking for theirs, to every peer not yet
// heard from.
func (l *loop) askBindings() {
	l.sendBindingsTo(l.senderIDs(func(id replica.PeerID) bool { _, ok := l.peers[id]; return ok && !l.heard[id] }), bindingsAsk)
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
		l.push(id, frame)
	}
}

// receiveBindings admits a peer's bindings and answers as the frame asks.
// A frame whose digest is this node's own holds nothing new (a summary
// that matches needs no answer; a request gets the summary back, which
// tells the peer it was heard). A summary that differs gets every binding
// and a request for the peer's. Bindings already held are not decoded
// again.
func (l *loop) receiveBindings(from replica.PeerID, m *wire.Message) {
	l.heard[from] = true
	l.knownMu.RLock()
	same := bytes.Equal(m.BindingsSum, l.bindingsSum)
	l.knownMu.RUnlock()
	switch {
	case same && m.Reply:
		l.sendBindingsTo([]replica.PeerID{from}, bindingsSummary)
		return
	case same:
		return
	case len(m.Bindings) == 0 && !m.Reply:
		l.sendBindingsTo([]replica.PeerID{from}, bindingsAsk)
		return
	case m.Reply:
		l.sendBindingsTo([]replica.PeerID{from}, bindingsAll)
	}
	if len(m.Bindings) > MaxBindingsPerFrame {
		l.rejected.Add(1)
		l.log.Warn("bindings frame too large", "peer", from, "bindings", len(m.Bindings))
		return
	}
	changed := false
	l.knownMu.Lock()
	for _, e := range m.Bindings {
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

// announceBindings sends every binding to every peer and re-reads which
// agents each member hosts: after a hand-over.
func (l *loop) announceBindings() {
	l.sendBindings()
	l.setMembers(l.drv.members())
}
