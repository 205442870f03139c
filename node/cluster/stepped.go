package cluster

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
)

// Stepped is the replication loop run by its caller: the very logic a
// Cluster runs (the same engine, bindings, policy and memory service
// hooks), with no goroutine, no ticker and no transport or membership.
// The caller hands it each input with a method call; before the call
// returns, the loop has taken the local deltas waiting, handled the
// input, acted on the engine until it had nothing ready, and handed every
// frame it produced to the send function given to NewStepped, in order.
// Given the same calls with the same inputs (and a service that writes
// the same), it sends the same frames in the same order: it reads the
// time only from Config.Clock, draws randomness only from
// Config.Engine.Seed, and orders whatever it takes from maps.
//
// A Stepped is not safe for concurrent use: one goroutine at a time calls
// its methods, and send must not call back into it. The memory service it
// is hooked to may be written from any goroutine; those local deltas wait
// in the bounded queue of Config.LocalQueue (a full queue marks the
// namespace for a digest sync at the next Tick) until the next call that
// steps. The simulator (package sim) runs its nodes this way.
type Stepped struct {
	*loop
	send func(addr string, key ed25519.PublicKey, frame []byte)
	last []Sighting // from SetMembers, sorted by node id
}

var _ driver = (*Stepped)(nil)

// NewStepped builds a stepped loop over cfg.Service and hooks it to the
// service as Start does (key lookup, author check, local deltas). cfg.Clock
// is required (only its Now is used: there is no ticker, the caller calls
// Tick); cfg.Addr is what Advert advertises; Tick, SendQueue,
// StartTransport and StartMembership are unused. send delivers a frame to
// the member at addr whose key is key, as Transport.Send would, and may
// keep frame but not modify it (one frame may go to several peers);
// Deliver is its other end.
func NewStepped(cfg Config, send func(addr string, key ed25519.PublicKey, frame []byte)) (*Stepped, error) {
	if cfg.Clock == nil || send == nil {
		return nil, errors.New("cluster: a stepped loop needs a clock and a send function")
	}
	s := &Stepped{send: send}
	var err error
	if s.loop, err = newLoop(cfg, s); err != nil {
		return nil, err
	}
	s.hook()
	return s, nil
}

// open is the driver's: sending is a synchronous call of send.
func (s *Stepped) open(_ replica.PeerID, addr string, key ed25519.PublicKey) outlet {
	return syncOutlet{send: s.send, addr: addr, key: key}
}

// members is the driver's: the membership SetMembers gave last.
func (s *Stepped) members() []Sighting { return s.last }

// prove is the driver's: the simulated network carries frames to whoever
// an address names, with no impostor to guard against, so a new
// incarnation counts as proved at once.
func (s *Stepped) prove(candidate, string, ed25519.PublicKey) bool { return true }

// syncOutlet sends a peer's frames as they come.
type syncOutlet struct {
	send func(addr string, key ed25519.PublicKey, frame []byte)
	addr string
	key  ed25519.PublicKey
}

func (o syncOutlet) push(frame []byte) bool {
	o.send(o.addr, o.key, frame)
	return true
}

func (syncOutlet) close() {}

// step takes the local deltas waiting, runs fn (the input; nil for none)
// and acts on the engine, again while acting left local deltas waiting
// (a feature that writes on a peer's delta); false if the loop is closed.
func (s *Stepped) step(fn func()) bool {
	if s.stopped.Load() {
		return false
	}
	s.takeLocal()
	if fn != nil {
		fn()
	}
	s.act()
	for s.takeLocal() {
		s.act()
	}
	return true
}

// Deliver hands the loop a frame from the member whose key is from, as
// Inbound.Deliver does; like a transport it refuses, uncounted, a frame
// from a key that is not alive in the last SetMembers. The frame becomes
// the loop's.
func (s *Stepped) Deliver(from ed25519.PublicKey, frame []byte) {
	s.step(func() {
		if s.knownKey(from) {
			s.receive(from, frame)
		}
	})
}

// SetMembers replaces the membership, as a Membership's change does: ms
// is every member known, this node included, in any order. A member that
// joins is sent the bindings and a digest sync; frames for one that is
// not alive are dropped and counted (Status.DroppedFrames). The Stepped
// keeps a sorted copy of ms (not of its adverts).
func (s *Stepped) SetMembers(ms []Sighting) {
	if s.stopped.Load() {
		return
	}
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, byNodeID)
	s.SetSortedMembers(ms)
}

// SetSortedMembers is SetMembers for a membership ms already sorted by
// node id (slices.SortStableFunc with byNodeID gives that order), which
// the Stepped keeps as it is, without a copy: nobody may modify ms or the
// adverts it holds afterwards. The simulator hands one membership to all
// its nodes this way; a copy per node was 117 MB at 1,000 nodes.
func (s *Stepped) SetSortedMembers(ms []Sighting) {
	if s.stopped.Load() {
		return
	}
	s.last = ms
	s.step(func() { s.setMembers(s.last) })
}

// byNodeID orders sightings by node id.
func byNodeID(a, b Sighting) int { return cmp.Compare(a.NodeID, b.NodeID) }

// SortMembers sorts ms by node id as SetMembers does, for SetSortedMembers.
func SortMembers(ms []Sighting) { slices.SortStableFunc(ms, byNodeID) }

// Tick is what a Cluster does at each tick of its ticker, at the time
// Config.Clock gives now: the engine's timers (ack timeouts,
// anti-entropy), digest syncs for local deltas the queue dropped, and the
// bindings to members not yet heard from (and every BindingsInterval
// the digest to a few that may not hold the same).
func (s *Stepped) Tick() { s.step(s.tick) }

// TreesDue is when the broadcast trees next owe announcements or wants
// (replica.Engine.TreesDue), in Config.Clock time; zero when they owe
// none. A Cluster checks every Config.TreeTick; a stepped loop's caller
// calls FlushTrees then.
func (s *Stepped) TreesDue() time.Time { return s.eng.TreesDue() }

// FlushTrees sends what the trees owe at Config.Clock's now, as a
// Cluster does every Config.TreeTick.
func (s *Stepped) FlushTrees() { s.step(s.flushTrees) }

// Pump takes the local deltas waiting and sends what they make.
func (s *Stepped) Pump() { s.step(nil) }

// Advert is what this node advertises to the membership, with Config.Addr
// as its address. It steps nothing.
func (s *Stepped) Advert() Advert { return s.advert(s.cfg.Addr) }

// Status reports the replication counters and the namespaces held (and
// with digests their digests and each peer's agreement), with Config.Addr
// as the QUIC address. It steps nothing: reading the state sends no frame
// and leaves the local deltas waiting.
func (s *Stepped) Status(digests bool) Status {
	var agreement []replica.PeerAgreement
	if digests {
		agreement = s.eng.Agreement()
	}
	st := s.status(s.eng.Stats(), agreement, digests)
	st.Trees = s.eng.TreeStats()
	st.Syncs = s.eng.SyncStats()
	st.QUIC = s.cfg.Addr
	return st
}

// Members lists the membership of the last SetMembers, with the agents
// each member hosts by the bindings. It steps nothing.
func (s *Stepped) Members() []Member { return s.memberList(s.last) }

// Sync asks peer (a node id; "" = every peer) for a digest sync of every
// shared namespace now. Errors: ErrStopped, or the engine's for an
// unknown peer.
func (s *Stepped) Sync(peer string) error {
	var err error
	if !s.step(func() { err = s.requestSync(peer) }) {
		return ErrStopped
	}
	return err
}

// RefreshAgents claims the node's new principals (Config.Agents) and sends
// the claims to every peer. The caller re-advertises: Advert has the new
// names. Errors: ErrStopped.
func (s *Stepped) RefreshAgents() error {
	if s.stopped.Load() {
		return ErrStopped
	}
	added := s.claimAgents()
	s.step(func() { s.sendNewBindings(added) })
	return nil
}

// HostedElsewhere reports whether p is bound to another node's key, as
// Cluster.HostedElsewhere. It steps nothing.
func (s *Stepped) HostedElsewhere(p namespace.Address) (acl.NodeID, bool) {
	return s.hostedElsewhere(p)
}

// Handover moves principal p to the node whose key is to, as
// Cluster.Handover does, and sends the hand-over to every peer. Errors
// wrap ErrNotHosted or acl.ErrInvalid, or are ErrStopped.
func (s *Stepped) Handover(p namespace.Address, to ed25519.PublicKey) (acl.Binding, error) {
	if s.stopped.Load() {
		return acl.Binding{}, ErrStopped
	}
	b, err := s.handover(p, to)
	if err != nil {
		return acl.Binding{}, err
	}
	s.step(func() { s.announceHandover(b) })
	return b, nil
}

// Close stops the loop: the service's local deltas are ignored from then
// on (those waiting are dropped), and the stepping methods do nothing.
// The service keeps the key lookup and author check (its directory of
// bindings, which a new loop over it replaces). Idempotent.
func (s *Stepped) Close() {
	if s.stopped.Swap(true) {
		return
	}
	s.closeOutlets()
	s.localMu.Lock()
	s.localQ, s.spareQ = nil, nil
	s.localMu.Unlock()
}
