package memory

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// ErrLocked reports a data directory already held by another process; the
// message names the holder's pid. Opening the storage returns it
// (badgerkv.Open, which the node calls before Open); it is here so that the
// node's callers need not import the store.
var ErrLocked = store.ErrLocked

// Authorizer decides permissions; every Service method asks it before
// touching data. Errors wrap acl.ErrDenied. The default is the Service's
// acl Policy (see access.go); an Authorizer may also implement
// PermissionChecker for share and admin.
type Authorizer interface {
	CheckRead(principal, ns namespace.Address) error
	CheckWrite(principal, ns namespace.Address) error
}

// Config configures a Service.
type Config struct {
	Agent      namespace.Address // the owner agent (agent://NAME); required
	Replica    crdt.ReplicaID    // this node's replica id; 0 derives one from Agent
	Now        func() time.Time  // wall clock; default time.Now
	Rand       io.Reader         // id randomness; default crypto/rand
	Logger     *slog.Logger      // default discards
	Authorizer Authorizer        // default: the acl Policy built from the signed records in the store
	MaxSkew    time.Duration     // clock skew tolerated on incoming deltas; default crdt.DefaultMaxSkew
	// KV is the storage the Service runs over, and owns (see Open): on a
	// node Badger in the data directory (node/store/badgerkv, opened by
	// the node), in the simulator a store.MemKV, which can crash. Default:
	// a fresh store.MemKV, everything in memory (tests).
	KV store.KV

	// Identity signs the acl records this node writes and binds its local
	// principals. Default (tests only): a key derived from Agent.
	Identity acl.Identity
	// IsLocal reports whether a principal other than Agent belongs to this
	// node (session rules, issued tokens). Default: only Agent. Must be safe
	// for concurrent use; call RefreshPolicy when its answers change.
	IsLocal func(namespace.Address) bool
	// KeyOf binds principals of other nodes to their node keys (membership).
	// Default: none. Must be safe for concurrent use.
	KeyOf func(namespace.Address) (ed25519.PublicKey, bool)
	// ACLSigs remembers the acl record signatures verified; default one
	// of the Service's own. The simulator shares one between its nodes
	// (every node verifies the same records, with the same result).
	ACLSigs *acl.SigCache
	// ACLEvals remembers acl evaluations by namespace, records and the
	// keys their signers are bound to; default none (the book evaluates
	// each namespace whose records or bindings changed). The simulator
	// shares one between its nodes (each would evaluate the same records
	// under the same bindings to the same result).
	ACLEvals *acl.EvalCache
	// Seals remembers the signatures of sealed records the features
	// verify (surgery's edits and decisions, checked as each delta arrives
	// and again as it is admitted; Core.Seals); default a cache of the
	// Service's own (4096 entries). The simulator shares one between its
	// nodes (every node verifies the same seals, with the same result).
	Seals *crdt.SealCache
	// AutoPromote mirrors eligible saves into a shared namespace; default off.
	AutoPromote AutoPromote
	// Features are the feature packages to attach (Feature.Attach), after
	// the ones built into this package; the node wires the standard set.
	// Default none.
	Features []Feature
	// Timed, when set, is told how long each Save and Search took (OpSave,
	// OpSearch) and its error, for the node's metrics. It is called on the
	// caller's goroutine once the operation returns (a save once durable)
	// and must not block. The duration is the process's monotonic clock,
	// not Now: a latency, which nothing the service decides depends on.
	// Default nil.
	Timed func(op string, took time.Duration, err error)
}

// The operations Config.Timed names.
const (
	OpSave   = "save"
	OpSearch = "search"
)

// Service is one node's memory store: a store.Store over the KV for
// durability, a derived in-memory index for queries. Safe for concurrent
// use.
type Service struct {
	cfg   Config
	st    *store.Store
	ix    *search.Index
	ixMu  sync.Mutex // orders the puts of one memory (putMemory)
	auth  Authorizer
	log   *slog.Logger
	clkMu sync.Mutex
	clock *crdt.Clock

	// viewEpoch counts the re-views of memories whose view a feature
	// changed (Core.Reindex): a view made before ixMu is kept only if it
	// did not move meanwhile (putMemory).
	viewEpoch atomic.Uint64

	sessMu   sync.RWMutex
	sessions map[string]Session // key ns + "\x00" + session id

	listenMu  sync.RWMutex
	listeners []func(ns string, delta *crdt.Map)
	watchers  []func(namespaces []string)

	feat    features  // kinds.go: what the features registered
	opening loadState // kinds.go: memories held back during Open's scan

	acl   aclState
	seals *crdt.SealCache // Config.Seals, or the Service's own

	// authorOK, when set, decides the author check of ApplyRemote
	// (SetAuthorCheck, replication.go).
	authorOK atomic.Pointer[func(namespace.Address, crdt.ReplicaID) bool]
}

// Open opens the store over cfg.KV and rebuilds the query index from it.
// The Service owns cfg.KV: its Close closes it, and so does Open when it
// fails.
func Open(cfg Config) (*Service, error) {
	if cfg.KV == nil {
		cfg.KV = store.NewMemKV()
	}
	id, err := cfg.setDefaults()
	if err != nil {
		_ = cfg.KV.Close()
		return nil, err
	}
	// Every transaction's delta is sealed with the node key (crdt.Seal), so
	// peers can tell which replica wrote each dot, however it reaches them.
	st, err := store.Open(cfg.KV, store.Options{Signer: id.Signer()}) // closes the KV when it fails
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, st: st, ix: search.New(), auth: cfg.Authorizer, log: cfg.Logger,
		clock: crdt.NewClock(cfg.MaxSkew), sessions: map[string]Session{}, seals: cfg.Seals,
	}
	if s.seals == nil {
		s.seals = crdt.NewSealCache(4096)
	}
	s.registerFeatures()
	core := &Core{s: s, attaching: true}
	for _, f := range cfg.Features {
		f.Attach(core)
	}
	core.attaching = false
	if err := s.initACL(id); err != nil {
		st.Close()
		return nil, err
	}
	if err := s.rebuild(); err != nil {
		st.Close()
		return nil, err
	}
	st.ReleaseFilePages() // the rebuild read every data file once; they need not stay resident
	for _, o := range s.feat.openers {
		o.Opened()
	}
	return s, nil
}

// setDefaults validates c, fills in the defaults and resolves the node's
// identity.
func (c *Config) setDefaults() (acl.Identity, error) {
	if c.Agent.IsZero() || c.Agent.Kind != namespace.KindAgent || c.Agent.Path != "" {
		return acl.Identity{}, fmt.Errorf("%w: config needs an agent root address, got %q", ErrInvalid, c.Agent)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if err := c.AutoPromote.Validate(); err != nil {
		return acl.Identity{}, err
	}
	id, err := resolveIdentity(*c)
	if err != nil {
		return acl.Identity{}, err
	}
	if c.Replica == 0 {
		c.Replica = id.ReplicaID()
	}
	return id, nil
}

// rebuild loads every record into the index and restores the clock. The
// Kinds' records are admitted during the scan; the memories are held back
// and indexed after it, once, with every record that changes their view
// known (edits sort after the memories they edit, and re-putting a
// document costs more than putting it).
func (s *Service) rebuild() error {
	var maxTS crdt.Timestamp
	s.opening.mu.Lock()
	s.opening.pending = &[]pendingRec{}
	s.opening.mu.Unlock()
	err := s.st.Scan("", func(ns, id string, rec *crdt.Record) error {
		maxTS = max(maxTS, rec.MaxTimestamp())
		s.index(ns, id, rec, s.st.CommittedSeq(), nil)
		return nil
	})
	s.clock.Restore(maxTS)
	for _, l := range s.feat.loaders {
		l.Loaded()
	}
	if ferr := s.indexHeldBack(); err == nil {
		err = ferr
	}
	return err
}

// indexHeldBack indexes the memory records held back during the first
// scan, reading them in a second one: both run in key order, so the held
// keys are met in the order they were held (Open runs before any writer).
func (s *Service) indexHeldBack() error {
	s.opening.mu.Lock()
	recs := *s.opening.pending
	s.opening.pending = nil
	s.opening.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	i := 0
	return s.st.Scan("", func(ns, id string, rec *crdt.Record) error {
		for i < len(recs) && (recs[i].ns < ns || recs[i].ns == ns && recs[i].id < id) {
			i++ // gone since the first scan
		}
		if i < len(recs) && recs[i].ns == ns && recs[i].id == id {
			i++
			s.index(ns, id, rec, s.st.CommittedSeq(), nil)
		}
		return nil
	})
}

// Close stops the features' background work (Closer), then closes the
// store.
func (s *Service) Close() error {
	for _, c := range s.feat.closers {
		c.Close()
	}
	return s.st.Close()
}

// Owner is the node's owner agent.
func (s *Service) Owner() namespace.Address { return s.cfg.Agent }

// Store exposes the replicated state to the replication layer.
func (s *Service) Store() *store.Store { return s.st }

// Indexed is how many memories the search index holds, over every
// namespace (deleted ones included): a measure for status and tests.
func (s *Service) Indexed() int { return s.ix.Len() }

// Replica is this node's replica id.
func (s *Service) Replica() crdt.ReplicaID { return s.cfg.Replica }

// OnLocalDelta registers fn to be called, after a local write is durable,
// with the delta of each namespace it changed (for replication).
func (s *Service) OnLocalDelta(fn func(ns string, delta *crdt.Map)) {
	s.listenMu.Lock()
	s.listeners = append(s.listeners, fn)
	s.listenMu.Unlock()
}

// OnChanged registers fn to be told, after every local write and every
// peer's delta applied, the namespaces whose state changed (sorted, no
// duplicates). fn runs on the writer's goroutine: it must not block and
// must not call back into the Service. The web console uses it to push
// live updates.
func (s *Service) OnChanged(fn func(namespaces []string)) {
	s.listenMu.Lock()
	s.watchers = append(s.watchers, fn)
	s.listenMu.Unlock()
}

func (s *Service) tellWatchers(changes []store.Change) {
	s.listenMu.RLock()
	ws := s.watchers
	s.listenMu.RUnlock()
	if len(ws) == 0 || len(changes) == 0 {
		return
	}
	var nss []string
	for _, c := range changes {
		nss = append(nss, c.Namespace)
	}
	slices.Sort(nss)
	nss = slices.Compact(nss)
	for _, w := range ws {
		w(nss)
	}
}

func (s *Service) now() (time.Time, crdt.Timestamp) {
	w := s.cfg.Now()
	s.clkMu.Lock()
	ts := s.clock.Now(w)
	s.clkMu.Unlock()
	return ts.Time(), ts
}

// ApplyRemote applies a delta received from a peer: every registered
// RemoteChecker (acl records, surgery records) passes it, every record's
// author must be hosted by the node of the replica that wrote it
// (checkRemoteAuthors), and its timestamps are checked against the clock's
// skew bound, before any of it applies.
func (s *Service) ApplyRemote(ns string, delta *crdt.Map) error {
	for _, c := range s.feat.remote {
		if err := c.CheckRemote(ns, delta); err != nil {
			return err
		}
	}
	if err := s.checkRemoteAuthors(ns, delta); err != nil {
		return err
	}
	s.clkMu.Lock()
	_, err := s.clock.Observe(delta.MaxTimestamp(), s.cfg.Now())
	s.clkMu.Unlock()
	if err != nil {
		return err
	}
	changes, err := s.st.Apply(map[string]*crdt.Map{ns: delta})
	if err != nil {
		return err
	}
	s.reindex(changes)
	s.afterSent(changes)
	s.tellWatchers(changes)
	return nil
}

func mapStoreErr(err error) error {
	switch {
	case errors.Is(err, crdt.ErrTooLarge):
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	case errors.Is(err, crdt.ErrRetracted):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, crdt.ErrInvalid):
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return err
}

// resolveWrite turns a namespace argument into an address the caller may write.
func (s *Service) resolveWrite(c Caller, arg string) (namespace.Address, error) {
	ns, err := s.resolve(c, arg)
	if err != nil {
		return ns, err
	}
	return ns, s.auth.CheckWrite(c.Principal, ns)
}

func (s *Service) resolve(c Caller, arg string) (namespace.Address, error) {
	if c.Principal.IsZero() {
		return namespace.Address{}, fmt.Errorf("%w: no caller principal", ErrInvalid)
	}
	ns, err := namespace.Resolve(c.Principal, arg)
	if err != nil {
		return ns, fmt.Errorf("%w: namespace: %v", ErrInvalid, err)
	}
	return ns, nil
}

// readScope is the set of namespaces a read covers: the given one (and its
// sub-namespaces) if the caller may read it, otherwise every namespace the
// node holds that the caller may read.
func (s *Service) readScope(c Caller, arg string) (search.Filter, error) {
	if arg != "" {
		ns, err := s.resolve(c, arg)
		if err != nil {
			return search.Filter{}, err
		}
		if err := s.auth.CheckRead(c.Principal, ns); err != nil {
			return search.Filter{}, err
		}
		return search.Filter{Namespaces: []string{ns.String()}, Subtree: true, Accept: s.gate()}, nil
	}
	if c.Principal.IsZero() {
		return search.Filter{}, fmt.Errorf("%w: no caller principal", ErrInvalid)
	}
	f := search.Filter{Namespaces: []string{}, Accept: s.gate()} // gate: kinds.go
	for _, name := range s.st.Namespaces() {
		ns, err := namespace.Parse(name)
		if err != nil {
			continue
		}
		if t, _, ok := InboxParties(ns); ok && t != c.Principal {
			continue // what the caller delivered to others is not its own memory (ask for the inbox by name)
		}
		if s.auth.CheckRead(c.Principal, ns) == nil {
			f.Namespaces = append(f.Namespaces, name)
		}
	}
	if len(f.Namespaces) == 0 {
		f.Namespaces = []string{"\x00none"} // nothing readable: match nothing
	}
	return f, nil
}

// Get returns one memory.
func (s *Service) Get(ctx context.Context, c Caller, id string, includeDeleted bool) (Memory, error) {
	ns, rec, err := s.locateView(c, id, includeDeleted)
	if err != nil {
		return Memory{}, err
	}
	m, fl := s.view(ns.String(), id, rec)
	if fl.Retracted {
		return Memory{}, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	return s.resolveReference(c, m), nil
}

// Save creates a memory, or updates the live memory of the same namespace
// with the same topic key.
func (s *Service) Save(ctx context.Context, c Caller, req SaveRequest) (res SaveResult, err error) {
	if s.cfg.Timed != nil {
		defer s.timed(OpSave, time.Now(), &err)
	}
	p, err := normaliseSave(&req)
	if err != nil {
		return SaveResult{}, err
	}
	ns, err := s.resolveWrite(c, req.Namespace)
	if err != nil {
		return SaveResult{}, err
	}
	p.contentHash = schema.ContentHash(req.Content)
	var saved savedRecord
	keep := &keptView{ns: ns.String()} // the index's view answers, not a second one
	err = s.writeKeeping(func(tx *store.Tx) error {
		var e error
		saved, e = s.saveRecordTx(tx, c, ns, req, p)
		keep.id = saved.id
		return e
	}, keep)
	if err != nil {
		return SaveResult{}, err
	}
	if saved.rec != nil && keep.ok {
		res = SaveResult{Memory: keep.m}
	} else {
		res = s.savedResult(ns, saved)
	}
	s.autoPromote(c, res.Memory)
	return res, nil
}

// timed reports an operation begun at start to Config.Timed (deferred).
func (s *Service) timed(op string, start time.Time, err *error) {
	s.cfg.Timed(op, time.Since(start), *err)
}

// saveTx writes a save inside a transaction (shared by compaction, sessions
// and import).
func (s *Service) saveTx(tx *store.Tx, c Caller, ns namespace.Address, req SaveRequest, p saveParams) (SaveResult, error) {
	sv, err := s.saveRecordTx(tx, c, ns, req, p)
	if err != nil {
		return SaveResult{}, err
	}
	return s.savedResult(ns, sv), nil
}

// saveRecordTx is saveTx without the view of a new memory.
func (s *Service) saveRecordTx(tx *store.Tx, c Caller, ns namespace.Address, req SaveRequest, p saveParams) (savedRecord, error) {
	now, ts := s.now()
	if req.TopicKey != "" && !p.noUpsert {
		if id, ok := s.ix.ByTopicKey(ns.String(), req.TopicKey); ok {
			upd := UpdateRequest{Type: &req.Type, Title: &req.Title, Content: &req.Content, Tags: &req.Tags,
				Importance: req.Importance, Confidence: req.Confidence}
			if req.Summary != "" {
				upd.Summary = &req.Summary
			}
			if req.LinkedFiles != nil {
				upd.LinkedFiles = &req.LinkedFiles
			}
			for _, f := range []struct {
				v   string
				dst **string
			}{{req.Project, &upd.Project}, {req.SessionID, &upd.SessionID}, {req.Channel, &upd.Channel}} {
				if f.v != "" {
					v := f.v
					*f.dst = &v
				}
			}
			if req.Scope != "" {
				upd.Scope = &req.Scope
			}
			m, err := s.updateTx(tx, c, ns, id, upd)
			return savedRecord{res: SaveResult{Memory: m, Upserted: true}}, err
		}
	}
	id := p.id
	if schema.IsReserved(id) {
		return savedRecord{}, invalid("id %q: the %q, %q and %q prefixes are reserved", id, schema.ACLPrefix, schema.EditPrefix, schema.DecisionPrefix)
	}
	if id == "" {
		var err error
		if id, err = s.newID(now); err != nil {
			return savedRecord{}, err
		}
	}
	created := now
	if !p.createdAt.IsZero() {
		created = p.createdAt
	}
	e, err := tx.Edit(ns.String(), id)
	if err != nil {
		return savedRecord{}, err
	}
	author := c.Principal.String()
	if p.author != "" {
		author = p.author
	}
	hash := p.contentHash
	if hash == "" {
		hash = schema.ContentHash(req.Content)
	}
	sets := []struct{ name, value string }{
		{schema.FieldType, req.Type}, {schema.FieldTitle, req.Title}, {schema.FieldContent, req.Content}, {schema.FieldSummary, req.Summary},
		{schema.FieldTopicKey, req.TopicKey}, {schema.FieldScope, req.Scope}, {schema.FieldSubjectType, req.SubjectType},
		{schema.FieldSubjectID, req.SubjectID}, {schema.FieldProject, req.Project}, {schema.FieldSessionID, req.SessionID},
		{schema.FieldChannel, req.Channel}, {schema.FieldAuthor, author}, {schema.FieldLineage, p.lineage}, {schema.FieldHash, hash},
	}
	for _, f := range sets {
		if f.value == "" {
			continue
		}
		if err := e.Set(ts, f.name, []byte(f.value)); err != nil {
			return savedRecord{}, err
		}
	}
	updated := created
	if !p.updatedAt.IsZero() {
		updated = p.updatedAt
	}
	for _, f := range []struct {
		name string
		v    []byte
	}{{schema.FieldImportance, schema.EncodeNum(*req.Importance)}, {schema.FieldConfidence, schema.EncodeNum(*req.Confidence)},
		{schema.FieldCreatedAt, schema.EncodeTime(created)}} {
		if err := e.Set(ts, f.name, f.v); err != nil {
			return savedRecord{}, err
		}
	}
	if err := schema.Touch(e, ts, updated); err != nil {
		return savedRecord{}, err
	}
	if p.deletedAt != nil {
		if err := e.Set(ts, schema.FieldDeletedAt, schema.EncodeTime(*p.deletedAt)); err != nil {
			return savedRecord{}, err
		}
	}
	for _, t := range req.Tags {
		if err := e.Add(schema.SetTags, t); err != nil {
			return savedRecord{}, err
		}
	}
	for _, f := range req.LinkedFiles {
		if err := e.Add(schema.SetLinkedFiles, f); err != nil {
			return savedRecord{}, err
		}
	}
	for _, pv := range p.provenance {
		if err := e.Add(schema.SetProvenance, pv); err != nil {
			return savedRecord{}, err
		}
	}
	tx.Commit(ns.String(), id, e)
	rec, _ := tx.Record(ns.String(), id)
	return savedRecord{id: id, rec: rec}, nil
}

// Update changes the given fields of a live memory.
func (s *Service) Update(ctx context.Context, c Caller, id string, req UpdateRequest) (Memory, error) {
	if err := normaliseUpdate(&req); err != nil {
		return Memory{}, err
	}
	ns, _, err := s.locate(c, id, false)
	if err != nil {
		return Memory{}, err
	}
	if err := s.auth.CheckWrite(c.Principal, ns); err != nil {
		return Memory{}, err
	}
	var m Memory
	err = s.write(func(tx *store.Tx) error {
		var e error
		m, e = s.updateTx(tx, c, ns, id, req)
		return e
	})
	return m, err
}

func (s *Service) updateTx(tx *store.Tx, c Caller, ns namespace.Address, id string, req UpdateRequest) (Memory, error) {
	cur, err := tx.Record(ns.String(), id)
	if err != nil {
		return Memory{}, err
	}
	if cur.Empty() || schema.IsSession(cur) {
		return Memory{}, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	if !schema.Time(cur, schema.FieldDeletedAt).IsZero() {
		return Memory{}, fmt.Errorf("%w: memory %q is deleted", ErrNotFound, id)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{schema.FieldSubjectType, req.SubjectType}, {schema.FieldSubjectID, req.SubjectID}} {
		if f.v != nil && schema.Str(cur, f.name) != "" && *f.v != schema.Str(cur, f.name) {
			return Memory{}, fmt.Errorf("%w: subject_type and subject_id are immutable once set (memory %q)", ErrConflict, id)
		}
	}
	now, ts := s.now()
	e, err := tx.Edit(ns.String(), id)
	if err != nil {
		return Memory{}, err
	}
	changed := false
	set := func(name string, v []byte) error {
		if f, ok := cur.Field(name); ok && string(f.Value) == string(v) {
			return nil
		}
		changed = true
		return e.Set(ts, name, v)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{schema.FieldType, req.Type}, {schema.FieldTitle, req.Title}, {schema.FieldContent, req.Content}, {schema.FieldSummary, req.Summary},
		{schema.FieldTopicKey, req.TopicKey}, {schema.FieldScope, req.Scope}, {schema.FieldSubjectType, req.SubjectType},
		{schema.FieldSubjectID, req.SubjectID}, {schema.FieldProject, req.Project}, {schema.FieldSessionID, req.SessionID}, {schema.FieldChannel, req.Channel}} {
		if f.v != nil {
			if err := set(f.name, []byte(*f.v)); err != nil {
				return Memory{}, err
			}
		}
	}
	if req.Content != nil {
		if err := set(schema.FieldHash, []byte(schema.ContentHash(*req.Content))); err != nil {
			return Memory{}, err
		}
	}
	if req.Importance != nil {
		if err := set(schema.FieldImportance, schema.EncodeNum(*req.Importance)); err != nil {
			return Memory{}, err
		}
	}
	if req.Confidence != nil {
		if err := set(schema.FieldConfidence, schema.EncodeNum(*req.Confidence)); err != nil {
			return Memory{}, err
		}
	}
	for _, sv := range []struct {
		name string
		v    *[]string
	}{{schema.SetTags, req.Tags}, {schema.SetLinkedFiles, req.LinkedFiles}} {
		if sv.v == nil {
			continue
		}
		want := map[string]bool{}
		for _, x := range *sv.v {
			want[x] = true
		}
		for _, old := range cur.Elements(sv.name) {
			if !want[old] {
				e.Remove(sv.name, old)
				changed = true
			}
		}
		for _, x := range *sv.v {
			if !cur.HasElement(sv.name, x) {
				if err := e.Add(sv.name, x); err != nil {
					return Memory{}, err
				}
				changed = true
			}
		}
	}
	if changed {
		if err := schema.Touch(e, ts, now); err != nil {
			return Memory{}, err
		}
		tx.Commit(ns.String(), id, e)
	}
	rec, _ := tx.Record(ns.String(), id)
	m, _ := s.view(ns.String(), id, rec)
	return m, nil
}

// Delete soft-deletes a memory (it leaves search, context and timeline; Get
// shows it with include_deleted). hard=true retracts it: final, its content
// is dropped everywhere.
func (s *Service) Delete(ctx context.Context, c Caller, id string, hard bool) error {
	ns, _, err := s.locate(c, id, hard)
	if err != nil {
		return err
	}
	if err := s.auth.CheckWrite(c.Principal, ns); err != nil {
		return err
	}
	if hard {
		// With surgery attached, a retract goes on the audit log like any
		// other, under the namespace's approval rules.
		for _, r := range s.feat.retracters {
			return r.RetractMemory(ctx, c, ns, id)
		}
	}
	return s.write(func(tx *store.Tx) error {
		if hard {
			return tx.Retract(ns.String(), id)
		}
		return s.softDeleteTx(tx, ns, id)
	})
}

func (s *Service) softDeleteTx(tx *store.Tx, ns namespace.Address, id string) error {
	now, ts := s.now()
	e, err := tx.Edit(ns.String(), id)
	if err != nil {
		return err
	}
	if err := e.Set(ts, schema.FieldDeletedAt, schema.EncodeTime(now)); err != nil {
		return err
	}
	if err := schema.Touch(e, ts, now); err != nil {
		return err
	}
	tx.Commit(ns.String(), id, e)
	return nil
}
