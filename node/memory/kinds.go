package memory

import (
	"context"

	"github.com/mnemohq/mnemo/namespace"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memory/effective"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// Kind is a record kind a feature owns (acl records, sessions, surgery
// edits and decisions, capsule meta records, projection specs): a record
// it Owns is never a memory. The core offers each record written here or
// arrived from a peer to the registered Kinds in registration order; the
// first that owns it Admits it. Both methods are called after the record
// is durable, on the writer's goroutine, possibly concurrently with reads:
// implementations must be safe for concurrent use.
//
// A feature implements Kind when it owns records, and any of the optional
// interfaces below for the points where the core consults it; the core
// finds them by type assertion (register).
type Kind interface {
	Owns(rec *crdt.Record) bool
	Admit(ns, id string, rec *crdt.Record)
}

// Forgetter drops what it derived from a record that left the store (a
// retract), whatever the record's kind: the record is gone, so it cannot
// be asked.
type Forgetter interface {
	Forget(ns, id string)
}

// RemoteChecker refuses a peer's delta before any of it applies (ApplyRemote);
// an error wraps ErrInvalid and says which record was refused.
type RemoteChecker interface {
	CheckRemote(ns string, delta *crdt.Map) error
}

// MemoryObserver sees every memory record before it is indexed (what
// copies and capsule items derive from the memories themselves).
type MemoryObserver interface {
	ObserveMemory(ns, id string, rec *crdt.Record)
}

// ChangeObserver is told, after each local write or peer delta is indexed,
// what changed (Record nil: retracted). Called in registration order.
type ChangeObserver interface {
	Changed(changes []store.Change)
}

// SentObserver is told what a write changed after the write's deltas went
// to the OnLocalDelta listeners (or a peer's delta applied), so writes it
// makes in response replicate after their cause.
type SentObserver interface {
	AfterSent(changes []store.Change)
}

// viewFlags is what the effective view decides beyond the memory's fields
// (retracted, quarantined, blocked channels).
type viewFlags = effective.Flags

// Viewer takes part in the effective view every read goes through: it may
// change the memory and set flags (retracted hides it everywhere).
type Viewer interface {
	View(ns, id string, m Memory, fl *viewFlags) Memory
}

// Affecter is a Viewer whose own records change other memories' views:
// it names the memory a change of one of its records re-views (an edit or
// decision: its target), or false.
type Affecter interface {
	Affects(c store.Change) (ns, id string, ok bool)
}

// MemoryKey names one memory.
type MemoryKey struct{ Namespace, ID string }

// touched lists the memories whose record or effective view changes
// altered, in order, once each: memory records written or retracted, and
// the memories the Affecters name for their own records. Other kinds'
// records (sessions, acl records, specs) touch no memory.
func (s *Service) touched(changes []store.Change) []MemoryKey {
	var out []MemoryKey
	seen := map[MemoryKey]bool{}
	for _, c := range changes {
		k, ok := MemoryKey{c.Namespace, c.ID}, true
		if c.Record != nil && schema.Str(c.Record, schema.FieldKind) != "" {
			ok = false
			for _, a := range s.feat.affecters {
				var ns, id string
				if ns, id, ok = a.Affects(c); ok {
					k = MemoryKey{ns, id}
					break
				}
			}
		}
		if ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// ReadGate hides memories from every read while it says so (expired or
// revoked capsule items). Gating reports whether any memory is gated at
// all, so reads cost nothing when none is.
type ReadGate interface {
	Visible(id string, now time.Time) bool
	Gating() bool
}

// PolicyObserver is told when the acl policy may have changed outside a
// store change (RefreshPolicy: membership or local principals changed);
// changes through the store reach ChangeObservers.
type PolicyObserver interface {
	PolicyChanged()
}

// Retracter takes over a hard delete (Delete with hard): surgery makes it
// an audited, possibly governed retract. Without one, Delete retracts the
// memory directly.
type Retracter interface {
	RetractMemory(ctx context.Context, c Caller, ns namespace.Address, id string) error
}

// Loader is told when Open's scan has offered every stored record, before
// the memories (held back until then) are viewed and indexed.
type Loader interface {
	Loaded()
}

// Opener runs once Open has indexed everything (repairs, sweeps).
type Opener interface {
	Opened()
}

// Ranker adds a second ranking to Search (hybrid retrieval:
// node/memory/semantic). Rank returns up to limit ids of memories that
// match f, best first, or nil when it has nothing to add (not ready, its
// model unreachable); Search fuses it with the lexical ranking (fusion.go).
// Rank may block for a round trip, bounded by ctx; it is called from
// concurrent searches. FusionK is the k of reciprocal rank fusion. The
// first registered Ranker is used.
type Ranker interface {
	Rank(ctx context.Context, query string, f search.Filter, limit int) []string
	FusionK() int
}

// Closer stops what a feature runs in the background; Service.Close calls
// it before it closes the store, so nothing the feature does outlives it.
type Closer interface {
	Close()
}

// features is the core's registry: what register found each feature to
// implement, in registration order. Set in Open, read-only after.
type features struct {
	kinds      []Kind
	forgetters []Forgetter
	remote     []RemoteChecker
	memories   []MemoryObserver
	changed    []ChangeObserver
	sent       []SentObserver
	viewers    []Viewer
	affecters  []Affecter
	gates      []ReadGate
	policy     []PolicyObserver
	retracters []Retracter
	loaders    []Loader
	openers    []Opener
	rankers    []Ranker
	closers    []Closer
}

func (f *features) register(x any) {
	if k, ok := x.(Kind); ok {
		f.kinds = append(f.kinds, k)
	}
	if v, ok := x.(Forgetter); ok {
		f.forgetters = append(f.forgetters, v)
	}
	if v, ok := x.(RemoteChecker); ok {
		f.remote = append(f.remote, v)
	}
	if v, ok := x.(MemoryObserver); ok {
		f.memories = append(f.memories, v)
	}
	if v, ok := x.(ChangeObserver); ok {
		f.changed = append(f.changed, v)
	}
	if v, ok := x.(SentObserver); ok {
		f.sent = append(f.sent, v)
	}
	if v, ok := x.(Viewer); ok {
		f.viewers = append(f.viewers, v)
	}
	if v, ok := x.(Affecter); ok {
		f.affecters = append(f.affecters, v)
	}
	if v, ok := x.(ReadGate); ok {
		f.gates = append(f.gates, v)
	}
	if v, ok := x.(PolicyObserver); ok {
		f.policy = append(f.policy, v)
	}
	if v, ok := x.(Retracter); ok {
		f.retracters = append(f.retracters, v)
	}
	if v, ok := x.(Loader); ok {
		f.loaders = append(f.loaders, v)
	}
	if v, ok := x.(Opener); ok {
		f.openers = append(f.openers, v)
	}
	if v, ok := x.(Ranker); ok {
		f.rankers = append(f.rankers, v)
	}
	if v, ok := x.(Closer); ok {
		f.closers = append(f.closers, v)
	}
}

// owner is the Kind that owns rec, or nil for a memory.
func (f *features) owner(rec *crdt.Record) Kind {
	for _, k := range f.kinds {
		if k.Owns(rec) {
			return k
		}
	}
	return nil
}

// loadState holds memory records back during Open's scan, so each is
// viewed and indexed once, with every record that changes its view (edits,
// grants) already admitted.
type loadState struct {
	mu      sync.Mutex
	pending *[]pendingRec // nil once loaded
}

// pendingRec is the key of a memory record held back during Open's scan.
// Only the key is held: 100k decoded records would hold about 300 MB at
// start; the second scan reads them again.
type pendingRec struct {
	ns, id string
}

// loading reports whether Open's scan is still running.
func (s *Service) loading() bool {
	s.opening.mu.Lock()
	defer s.opening.mu.Unlock()
	return s.opening.pending != nil
}

// holdBack keeps a memory record for the end of Open's scan; false once
// the scan is over.
func (s *Service) holdBack(ns, id string) bool {
	s.opening.mu.Lock()
	defer s.opening.mu.Unlock()
	if s.opening.pending == nil {
		return false
	}
	*s.opening.pending = append(*s.opening.pending, pendingRec{ns, id})
	return true
}

// gate is the index Accept hook of the registered ReadGates; nil when none
// gates anything (no cost on the search path).
func (s *Service) gate() func(string) bool {
	var on []ReadGate
	for _, g := range s.feat.gates {
		if g.Gating() {
			on = append(on, g)
		}
	}
	if len(on) == 0 {
		return nil
	}
	now := s.cfg.Now()
	return func(id string) bool {
		for _, g := range on {
			if !g.Visible(id, now) {
				return false
			}
		}
		return true
	}
}

// visible reports whether every ReadGate lets id be read at now.
func (s *Service) visible(id string, now time.Time) bool {
	for _, g := range s.feat.gates {
		if !g.Visible(id, now) {
			return false
		}
	}
	return true
}
