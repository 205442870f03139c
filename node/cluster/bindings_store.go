package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/acl"
)

// Storing the directory of bindings (bindings.go), so that a node restarted
// alone still knows who signed the grants it holds: its own claims and
// hand-overs before they are announced, peers' bindings on the next tick.

// bindingsSaver stores the directory: at once for this node's own claims
// and hand-overs, on the next tick for bindings admitted from peers
// (unsaved).
type bindingsSaver struct {
	mu      sync.Mutex    // one store at a time, each of the set as it is then
	unsaved atomic.Bool   // peers' bindings admitted and not stored yet
	saves   atomic.Uint64 // times the directory was stored
}

// bindingsMeta is the store metadata key of the directory: the encoded
// bindings in the order they were admitted.
//
// The directory is stored whole, with a synced write. This node's own
// claims and hand-overs are stored before they are announced (claimAgents,
// handover return once they are durable): a node must never forget what
// it signed. Bindings admitted from peers are stored on the next tick
// (storeUnsavedBindings), all those admitted since at once: at a start
// among N peers each admits N claims one frame at a time, and storing the
// whole set each time was N² bytes encoded and written a node, under
// knownMu (in the simulator, 294 MB of the 8.1 GB a 100-node run of 2,000
// ops allocated). A peer's binding lost to a crash before that tick is
// learnt again from the peers, as one admitted while the node was down.
const bindingsMeta = "cluster/bindings"

// loadBindings fills the directory from the store.
func (l *loop) loadBindings() {
	l.dir = acl.NewDirectory()
	l.dir.SetSeals(l.cfg.Engine.Seals) // shared in the simulator; nil in a node (each binding is verified once)
	l.heldBindings = map[bindingKey]bool{}
	l.bindingIDs, l.bindingEncs, l.bindingReps, l.ownBindings = nil, nil, nil, nil
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

// storeBindings stores the directory as it is now, durably. Any
// goroutine; not with knownMu held. Stores run one at a time, each of the
// set as it is when it begins, so a later one never stores fewer bindings.
func (l *loop) storeBindings() {
	sv := l.bx.saver
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.unsaved.Store(false)
	l.knownMu.RLock()
	encs := l.bindingEncs // only appended to: what it holds now stays
	l.knownMu.RUnlock()
	l.writeBindings(encs)
}

// writeBindings stores encs as the directory, durably; with the saver's
// mutex held.
func (l *loop) writeBindings(encs [][]byte) {
	sv := l.bx.saver
	raw, _ := msgpack.Marshal(encs)
	sv.saves.Add(1)
	if err := l.svc.Store().SetMeta(bindingsMeta, raw); err != nil {
		sv.unsaved.Store(true) // tried again on the next tick
		l.log.Warn("could not store bindings", "err", err)
	}
}

// admitOwn runs admit, which admits bindings this node signed (with
// knownMu held) and reports whether it added any, and then stores the
// directory before knownMu is let go: no reader of the held bindings
// (answerIndex on the loop, a bindings frame) sees one of this node's
// before it is durable, or a crash could leave peers holding a claim or
// hand-over the node forgot. Own bindings are rare, so readers waiting
// out the sync cost little. Any goroutine; saver.mu before knownMu, as
// storeBindings takes them.
func (l *loop) admitOwn(admit func() bool) {
	sv := l.bx.saver
	sv.mu.Lock()
	defer sv.mu.Unlock()
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	if admit() {
		sv.unsaved.Store(false)
		l.writeBindings(l.bindingEncs)
	}
}

// storeUnsavedBindings stores the directory if bindings were admitted from
// peers since it was last stored. The loop runs it every tick.
func (l *loop) storeUnsavedBindings() {
	if l.bx.saver.unsaved.Load() {
		l.storeBindings()
	}
}
