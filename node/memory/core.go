package memory

import (
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// Feature is a feature package's entry point (Config.Features): Open calls
// Attach once, before it reads the store, with the core's privileged
// handle, and the feature registers there what it implements (Kind and the
// optional interfaces of kinds.go). A feature keeps the Core to write and
// read; its own API (the methods the HTTP API and the MCP tools call)
// checks the caller's permissions through it.
type Feature interface {
	Attach(c *Core)
}

// FeatureOf returns the first feature of type F attached to s (a feature
// package's Of), or F's zero value.
func FeatureOf[F Feature](s *Service) F {
	for _, f := range s.cfg.Features {
		if t, ok := f.(F); ok {
			return t
		}
	}
	var none F
	return none
}

// Core is the privileged handle a Feature gets at Attach: it writes and
// reads without the permission checks the Service's methods make, so only
// features hold one, and every feature method that serves a caller asks
// Check (or locates through Locate, which checks read) first. Safe for
// concurrent use; Register only during Attach.
type Core struct {
	s         *Service
	attaching bool
}

// Register plugs x into the core: every interface of kinds.go that x
// implements is consulted from now on, in registration order. It panics
// after Attach returned (the registry is read without locks).
func (c *Core) Register(x any) {
	if !c.attaching {
		panic("memory: Core.Register outside Feature.Attach")
	}
	c.s.feat.register(x)
}

// Service is the public service (its methods check the caller).
func (c *Core) Service() *Service { return c.s }

// Seals remembers the sealed records' signatures verified (Config.Seals).
func (c *Core) Seals() *crdt.SealCache { return c.s.seals }

// Logger is the service's logger.
func (c *Core) Logger() *slog.Logger { return c.s.log }

// Wall is the wall clock (Config.Now).
func (c *Core) Wall() time.Time { return c.s.cfg.Now() }

// Now is the wall time and a fresh hybrid-clock timestamp for a write.
func (c *Core) Now() (time.Time, crdt.Timestamp) { return c.s.now() }

// NewID returns a new time-ordered memory id.
func (c *Core) NewID(t time.Time) (string, error) { return c.s.newID(t) }

// Write runs fn in one store transaction, then indexes the change, hands
// the deltas to replication and tells the features (as every local write).
func (c *Core) Write(fn func(tx *store.Tx) error) error { return c.s.write(fn) }

// Record reads a record from the store (nil or empty: absent).
func (c *Core) Record(ns, id string) (*crdt.Record, error) { return c.s.st.Record(ns, id) }

// View is the effective view of the memory stored as id in ns.
func (c *Core) View(ns, id string, rec *crdt.Record) (Memory, ViewFlags) {
	return c.s.view(ns, id, rec)
}

// Check asks the Authorizer whether p holds perm on ns (errors wrap
// acl.ErrDenied).
func (c *Core) Check(p, ns namespace.Address, perm acl.Permission) error {
	return c.s.check(p, ns, perm)
}

// IsLocal reports whether principal p is hosted by this node.
func (c *Core) IsLocal(p namespace.Address) bool { return c.s.isLocal(p) }

// Resolve turns a caller's namespace argument into an address (relative
// to the caller's own namespace); ResolveWrite also checks write.
func (c *Core) Resolve(caller Caller, arg string) (namespace.Address, error) {
	return c.s.resolve(caller, arg)
}

// ResolveWrite is Resolve, then a check that the caller may write there.
func (c *Core) ResolveWrite(caller Caller, arg string) (namespace.Address, error) {
	return c.s.resolveWrite(caller, arg)
}

// Locate finds a memory by id among the namespaces the caller may read;
// an id the caller may not read is not found.
func (c *Core) Locate(caller Caller, id string, includeDeleted bool) (namespace.Address, *crdt.Record, error) {
	return c.s.locate(caller, id, includeDeleted)
}

// IndexFilter turns a Filter into the index's, scoped to what the caller
// may read (errors wrap ErrInvalid or acl.ErrDenied).
func (c *Core) IndexFilter(caller Caller, f Filter) (search.Filter, error) {
	return c.s.indexFilter(caller, f)
}

// ReadScope is the index filter of a read of namespace arg ("" : every
// namespace the caller may read), as Search and Timeline scope theirs.
func (c *Core) ReadScope(caller Caller, arg string) (search.Filter, error) {
	return c.s.readScope(caller, arg)
}

// List returns the live memories matching f, newest first when newest,
// at most limit (0: all), through the effective view.
func (c *Core) List(f search.Filter, newest bool, limit int) []Memory {
	return c.s.load(metaIDs(c.s.ix.List(f, newest, limit)))
}

// Matching runs fn with a predicate telling whether a memory id matches f
// in the search index, all answers from one state of it (search.Index.Within):
// how a Ranker applies the caller's filter. fn must not call the Service.
func (c *Core) Matching(f search.Filter, fn func(match func(id string) bool)) {
	c.s.ix.Within(f, fn)
}

// Touched lists the memories whose record or effective view the changes
// altered (a ChangeObserver's changes), once each, in order.
func (c *Core) Touched(changes []store.Change) []MemoryKey { return c.s.touched(changes) }

// KeyOf is the node key principal p is bound to (this node's for its own
// principals, membership's for others'), or false.
func (c *Core) KeyOf(p namespace.Address) (ed25519.PublicKey, bool) { return c.s.keyOf(p) }

// Reindex views and indexes the memory stored as id in ns again, after
// something its effective view depends on changed (an edit's status). It
// does nothing while Open's scan runs (every memory is indexed once, after
// it) or when the memory is absent or retracted.
func (c *Core) Reindex(ns, id string) {
	c.s.viewEpoch.Add(1) // first: a view made before this change is not put (putMemory)
	if c.s.loading() {
		return
	}
	seq := c.s.st.CommittedSeq() // rec is at least as new (putMemory)
	rec, err := c.s.st.Record(ns, id)
	if err != nil {
		c.s.log.Warn("memory unreadable", "namespace", ns, "id", id, "err", err)
		return
	}
	if rec.Empty() {
		return
	}
	c.s.index(ns, id, rec, seq, nil)
}

// Loading reports whether Open's scan is still running.
func (c *Core) Loading() bool { return c.s.loading() }

// SaveOptions are what a feature sets on a save beyond the request
// (Core.SaveTx).
type SaveOptions struct {
	ID         string   // the memory's id; "" makes a new one
	Lineage    string   // the id of the memory this copies
	Provenance []string // contributing authors and sources
	NoUpsert   bool     // never update the memory with the same topic key

	// What a restore keeps of the memory it reads (transfer's import).
	Author    string     // the memory's author; "" is the caller
	CreatedAt time.Time  // zero: now
	UpdatedAt time.Time  // zero: CreatedAt
	DeletedAt *time.Time // nil: live; else saved soft-deleted at that time
}

// SaveTx validates req and saves it into ns inside tx, as the caller (no
// permission check: the feature made it).
func (c *Core) SaveTx(tx *store.Tx, caller Caller, ns namespace.Address, req SaveRequest, o SaveOptions) (SaveResult, error) {
	p, err := normaliseSave(&req)
	if err != nil {
		return SaveResult{}, err
	}
	p.id, p.lineage, p.provenance, p.noUpsert = o.ID, o.Lineage, o.Provenance, o.NoUpsert
	p.author, p.createdAt, p.updatedAt, p.deletedAt = o.Author, o.CreatedAt, o.UpdatedAt, o.DeletedAt
	return c.s.saveTx(tx, caller, ns, req, p)
}

// SoftDeleteTx sets a memory's deleted_at inside tx.
func (c *Core) SoftDeleteTx(tx *store.Tx, ns namespace.Address, id string) error {
	return c.s.softDeleteTx(tx, ns, id)
}

// MarkCopyTx records inside tx that m, stored in ns, copies a memory of
// srcNS, so approved edits of the source follow it (surgery/copies.go).
func (c *Core) MarkCopyTx(tx *store.Tx, ns namespace.Address, m *Memory, srcNS string) error {
	return c.s.markCopyTx(tx, ns, m, srcNS)
}

// DerivedID is a stable memory id from a time and parts: the same parts
// give the same id, so a repeated copy or import is idempotent.
func DerivedID(t time.Time, parts ...string) string { return derivedID(t, parts...) }

// ViewFlags is what the effective view decides beyond a memory's fields.
type ViewFlags = viewFlags

// Count is how many memories the index holds that match f (no permission
// check, no effective view: f says what to count), e.g. the size of a
// feature's own namespace.
func (c *Core) Count(f search.Filter) int { return c.s.ix.Count(f) }

// CheckSave validates req and fills its defaults as a save does (errors
// wrap ErrInvalid or ErrTooLarge), writing nothing: a feature that saves
// in several transactions checks every request before the first.
func CheckSave(req *SaveRequest) error {
	_, err := normaliseSave(req)
	return err
}

// CheckMemoryID accepts an id as the node makes them (NewID, DerivedID):
// 26 characters of the id alphabet, so never another record kind's prefix
// nor a path (errors wrap ErrInvalid).
func CheckMemoryID(id string) error { return checkMemoryID(id) }

// CheckSessionID accepts a session id as StartSession does (errors wrap
// ErrInvalid).
func CheckSessionID(id string) error { return checkSessionID(id) }

// MaxSkew is how far ahead of the wall clock a peer's time may be
// (Config.MaxSkew): the bound on times a feature takes from outside.
func (c *Core) MaxSkew() time.Duration { return c.s.clock.MaxSkew() }

// IndexedIn is the namespace of the memory the index holds as id, or
// false. Ids are global (Get finds a memory by id alone), so a feature
// writing a given id checks it is not another namespace's.
func (c *Core) IndexedIn(id string) (string, bool) {
	m, ok := c.s.ix.Meta(id)
	return m.Namespace, ok
}

// ReadableSessions lists the sessions in the namespaces of f (a ReadScope),
// newest first.
func (c *Core) ReadableSessions(f search.Filter) []Session { return c.s.readableSessions(f) }

// CreateSessionTx writes a new session record inside tx, as the caller (no
// permission check). A zero started is now; ended and summary, when set,
// restore a session that is over.
func (c *Core) CreateSessionTx(tx *store.Tx, caller Caller, ns namespace.Address, req SessionStart, started time.Time, ended *time.Time, summary string) (Session, error) {
	return c.s.createSessionTx(tx, caller, ns, req, started, ended, summary)
}
