package cluster

import (
	"crypto/ed25519"
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
// this node is refused by its transport), and to everyone every
// BindingsInterval and whenever it claims a new principal. A node
// admits bindings into its acl.Directory — first claim stands, only the
// current host's hand-over moves an agent — and stores them, so a node
// restarted alone still knows who signed the grants it holds. Which agents
// a peer hosts (what it may read and write) is read from the directory,
// never from gossip metadata.

// BindingsInterval is how often a node sends its bindings to every peer
// (besides on join and when it claims a new principal), so a lost frame
// costs at most this delay.
const BindingsInterval = 30 * time.Second

// MaxBindingsPerFrame bounds the bindings one frame may carry; a frame with
// more is refused whole.
const MaxBindingsPerFrame = 4096

// bindingsMeta is the store metadata key of the directory: the encoded
// bindings in the order they were admitted.
const bindingsMeta = "cluster/bindings"

// loadBindings fills the directory from the store.
func (c *Cluster) loadBindings() {
	c.dir = acl.NewDirectory()
	c.reindexBindings()
	raw, err := c.svc.Store().Meta(bindingsMeta)
	if err != nil || raw == nil {
		return
	}
	var encs [][]byte
	if err := msgpack.Unmarshal(raw, &encs); err != nil {
		c.log.Warn("stored bindings unreadable; relearning them from peers", "err", err)
		return
	}
	for _, e := range encs {
		if b, err := acl.DecodeBinding(e); err == nil {
			_, _ = c.dir.Admit(b)
		}
	}
	c.reindexBindings()
}

// saveBindings stores the directory. Call with knownMu held.
func (c *Cluster) saveBindings() {
	var encs [][]byte
	for _, b := range c.dir.Bindings() {
		encs = append(encs, b.Encode())
	}
	raw, _ := msgpack.Marshal(encs)
	if err := c.svc.Store().SetMeta(bindingsMeta, raw); err != nil {
		c.log.Warn("could not store bindings", "err", err)
	}
}

// reindexBindings rebuilds byReplica and everByReplica. Call with knownMu
// held.
func (c *Cluster) reindexBindings() {
	c.byReplica = map[crdt.ReplicaID][]namespace.Address{}
	c.everByReplica = map[crdt.ReplicaID][]namespace.Address{}
	for _, b := range c.dir.Bindings() {
		r := acl.ReplicaIDOf(b.Key)
		if !slices.Contains(c.everByReplica[r], b.Principal) {
			c.everByReplica[r] = append(c.everByReplica[r], b.Principal)
		}
		if cur, _ := c.dir.KeyOf(b.Principal); cur.Equal(b.Key) && !slices.Contains(c.byReplica[r], b.Principal) {
			c.byReplica[r] = append(c.byReplica[r], b.Principal)
		}
	}
}

// claimAgents signs a binding for every local principal not yet bound,
// and reports whether it added any. A local principal another node already
// hosts is not claimed: the conflict is logged and counted, and that
// principal's records signed here will not count elsewhere.
func (c *Cluster) claimAgents() bool {
	c.knownMu.Lock()
	defer c.knownMu.Unlock()
	added := false
	for _, p := range c.cfg.Agents() {
		if k, ok := c.dir.KeyOf(p); ok {
			if !k.Equal(c.cfg.Identity.Public) {
				c.conflicts.Add(1)
				c.log.Warn("a local principal is hosted by another node; not claimed", "principal", p, "host", acl.NodeIDOf(k))
			}
			continue
		}
		b, err := acl.NewBinding(c.cfg.Identity, p, crdt.Timestamp(c.cfg.Clock.Now().UnixNano()))
		if err != nil {
			c.log.Warn("could not claim principal", "principal", p, "err", err)
			continue
		}
		if changed, err := c.dir.Admit(b); err == nil && changed {
			added = true
		}
	}
	if added {
		c.reindexBindings()
		c.saveBindings()
	}
	return added
}

// HostedElsewhere reports whether p is bound to another node's key: this
// node may not act for it (no token, no claim).
func (c *Cluster) HostedElsewhere(p namespace.Address) (acl.NodeID, bool) {
	c.knownMu.RLock()
	defer c.knownMu.RUnlock()
	k, ok := c.dir.KeyOf(p)
	if !ok || k.Equal(c.cfg.Identity.Public) {
		return "", false
	}
	return acl.NodeIDOf(k), true
}

// bindingsFrame encodes every known binding; reply asks the peer for its own.
func (c *Cluster) bindingsFrame(reply bool) []byte {
	c.knownMu.RLock()
	m := &wire.Message{Kind: wire.KindBindings, Reply: reply}
	for _, b := range c.dir.Bindings() {
		m.Bindings = append(m.Bindings, b.Encode())
	}
	c.knownMu.RUnlock()
	frame, err := c.codec.Encode(m)
	if err != nil {
		c.log.Error("encode bindings", "err", err)
		return nil
	}
	return frame
}

// sendBindings sends every binding to every peer. Loop goroutine only.
func (c *Cluster) sendBindings() {
	c.lastBindings = c.cfg.Clock.Now()
	c.sendBindingsTo(func(replica.PeerID) bool { return true }, false)
}

// askBindings sends the bindings, asking for theirs, to every peer not yet
// heard from. Loop goroutine only.
func (c *Cluster) askBindings() {
	c.sendBindingsTo(func(id replica.PeerID) bool { _, ok := c.peers[id]; return ok && !c.heard[id] }, true)
}

func (c *Cluster) sendBindingsTo(to func(replica.PeerID) bool, reply bool) {
	var frame []byte
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.senders {
		if !to(id) {
			continue
		}
		if frame == nil {
			frame = c.bindingsFrame(reply)
		}
		if !queueFrame(s, frame) {
			c.dropped.Add(1)
		}
	}
}

func queueFrame(s *sender, frame []byte) bool {
	if frame == nil {
		return false
	}
	select {
	case s.ch <- frame:
		return true
	default:
		return false
	}
}

// receiveBindings admits a peer's bindings, and answers with this node's
// when asked. Loop goroutine only.
func (c *Cluster) receiveBindings(from replica.PeerID, raw [][]byte, reply bool) {
	c.heard[from] = true
	if reply {
		c.sendBindingsTo(func(id replica.PeerID) bool { return id == from }, false)
	}
	if len(raw) > MaxBindingsPerFrame {
		c.rejected.Add(1)
		c.log.Warn("bindings frame too large", "peer", from, "bindings", len(raw))
		return
	}
	changed := false
	c.knownMu.Lock()
	for _, e := range raw {
		b, err := acl.DecodeBinding(e)
		if err == nil {
			var ch bool
			ch, err = c.dir.Admit(b)
			changed = changed || ch
		}
		if err != nil {
			c.rejected.Add(1)
			if errors.Is(err, acl.ErrHostedElsewhere) {
				c.conflicts.Add(1)
			}
			c.log.Warn("binding refused", "peer", from, "err", err)
		}
	}
	if changed {
		c.reindexBindings()
		c.saveBindings()
	}
	c.knownMu.Unlock()
	if changed {
		c.svc.RefreshPolicy() // records signed for newly bound principals may count now
		c.setMembers(c.ms.Members())
	}
}

// keyOf is the acl.KeyLookup of the memory service: remote principals from
// verified bindings.
func (c *Cluster) keyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	c.knownMu.RLock()
	defer c.knownMu.RUnlock()
	return c.dir.KeyOf(p)
}

// principalsOfKey lists the principals bound to key.
func (c *Cluster) principalsOfKey(key ed25519.PublicKey) []namespace.Address {
	c.knownMu.RLock()
	defer c.knownMu.RUnlock()
	return c.dir.PrincipalsOf(key)
}

// hostedBy reports whether the replica r's node hosts p or hosted it before
// a hand-over (an author check: p's writes come from p's node).
func (c *Cluster) hostedBy(p namespace.Address, r crdt.ReplicaID) bool {
	if r == c.cfg.Identity.ReplicaID() {
		return slices.Contains(c.cfg.Agents(), p)
	}
	c.knownMu.RLock()
	defer c.knownMu.RUnlock()
	return slices.Contains(c.everByReplica[r], p)
}

// principalsOfReplica lists the principals bound to the key of replica r.
func (c *Cluster) principalsOfReplica(r crdt.ReplicaID) []namespace.Address {
	c.knownMu.RLock()
	defer c.knownMu.RUnlock()
	return c.byReplica[r]
}

// ErrNotHosted reports a hand-over of a principal this node does not host.
var ErrNotHosted = errors.New("cluster: principal not hosted by this node")

// Handover moves principal p, which this node hosts, to the node whose key
// is to: it signs the hand-over, admits it and sends it to every peer. From
// then on every node binds p to the new host; records p signed here before
// stay p's. The caller should stop acting for p here (its tokens, its
// rules): records this node signs for p no longer count elsewhere. Errors
// wrap ErrNotHosted or acl.ErrInvalid.
func (c *Cluster) Handover(p namespace.Address, to ed25519.PublicKey) (acl.Binding, error) {
	c.knownMu.Lock()
	cur, ok := c.dir.KeyOf(p)
	if !ok || !cur.Equal(c.cfg.Identity.Public) {
		c.knownMu.Unlock()
		return acl.Binding{}, fmt.Errorf("%w: %s", ErrNotHosted, p)
	}
	b, err := acl.NewHandover(c.cfg.Identity, p, to, crdt.Timestamp(c.cfg.Clock.Now().UnixNano()))
	if err == nil {
		_, err = c.dir.Admit(b)
	}
	if err != nil {
		c.knownMu.Unlock()
		return acl.Binding{}, err
	}
	c.reindexBindings()
	c.saveBindings()
	c.knownMu.Unlock()
	c.log.Info("handed over", "binding", b.String())
	c.svc.RefreshPolicy()
	_ = c.do(func() {
		c.sendBindings()
		c.setMembers(c.ms.Members())
	})
	return b, nil
}
