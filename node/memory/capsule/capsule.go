package capsule

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// maxCapsuleRiskBytes bounds one risk; the other limits and the statuses
// are memapi's, the record names schema's.
const maxCapsuleRiskBytes = 1000

// capsuleBody is the meta record's JSON (schema.FieldCapsule); set once, never edited.
type capsuleBody struct {
	ID          string    `json:"id"`
	SubjectType string    `json:"subject_type"`
	SubjectID   string    `json:"subject_id"`
	Project     string    `json:"project,omitempty"`
	Scope       string    `json:"scope,omitempty"`
	Author      string    `json:"author"`
	Audience    []string  `json:"audience"`
	Risks       []string  `json:"risks"`
	Sources     []string  `json:"sources"` // source ids, in item order
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// capsuleEntry is an indexed meta record.
type capsuleEntry struct {
	ns             string
	target, writer namespace.Address
	body           capsuleBody
	revoked        bool
}

func (e *capsuleEntry) status(now time.Time) string {
	switch {
	case e.revoked:
		return memapi.CapsuleRevoked
	case !now.Before(e.body.ExpiresAt):
		return memapi.CapsuleExpired
	}
	return memapi.CapsuleActive
}

// Capsules is the capsule feature: attach it to a Service (memory.Config.Features),
// then find it with Of. Its index of capsules is derived from the store,
// as the search index is. Safe for concurrent use.
type Capsules struct {
	core *memory.Core

	mu    sync.RWMutex
	caps  map[string]*capsuleEntry   // by inbox namespace
	items map[string]string          // item id → capsule namespace
	byNS  map[string]map[string]bool // capsule namespace → item ids
}

// New returns the capsule feature, to attach to a Service.
func New() *Capsules { return &Capsules{} }

// Of returns the capsule feature attached to svc, or nil.
func Of(svc *memory.Service) *Capsules { return memory.FeatureOf[*Capsules](svc) }

// Attach plugs the feature into the core (memory.Feature): it owns the
// capsule meta records, sees every memory (items are the memories of a
// capsule inbox), forgets retracted records, gates the reads of dead
// capsules' items, and collects expired capsules at Open.
func (s *Capsules) Attach(c *memory.Core) {
	s.core = c
	c.Register(s)
}

// Owns reports whether rec is a capsule meta record (memory.Kind).
func (s *Capsules) Owns(rec *crdt.Record) bool {
	return schema.Str(rec, schema.FieldKind) == schema.KindCapsule
}

// Gating reports whether any capsule item is held (memory.ReadGate): reads
// cost nothing when none is.
func (s *Capsules) Gating() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items) > 0
}

// Opened collects the capsules that expired while the node was down.
func (s *Capsules) Opened() { s.sweepLogged() }

var (
	_ memory.Feature        = (*Capsules)(nil)
	_ memory.Kind           = (*Capsules)(nil)
	_ memory.MemoryObserver = (*Capsules)(nil)
	_ memory.Forgetter      = (*Capsules)(nil)
	_ memory.ReadGate       = (*Capsules)(nil)
	_ memory.Opener         = (*Capsules)(nil)
)

// ObserveMemory remembers a memory stored in a capsule inbox: a
// capsule item, hidden once its capsule expires or is revoked.
func (s *Capsules) ObserveMemory(ns, id string, _ *crdt.Record) {
	if !schema.IsCapsuleInbox(ns) {
		return
	}
	st := s
	st.mu.Lock()
	if st.items == nil {
		st.items, st.byNS = map[string]string{}, map[string]map[string]bool{}
	}
	st.items[id] = ns
	if st.byNS[ns] == nil {
		st.byNS[ns] = map[string]bool{}
	}
	st.byNS[ns][id] = true
	st.mu.Unlock()
}

func (s *Capsules) Admit(ns, id string, rec *crdt.Record) {
	if id != schema.CapsuleMetaID || !schema.IsCapsuleInbox(ns) {
		s.core.Logger().Warn("capsule record outside a capsule inbox ignored", "namespace", ns, "id", id)
		return
	}
	var b capsuleBody
	if err := json.Unmarshal([]byte(schema.Str(rec, schema.FieldCapsule)), &b); err != nil || b.ID == "" || b.ExpiresAt.IsZero() {
		s.core.Logger().Warn("unreadable capsule record ignored", "namespace", ns, "err", err)
		return
	}
	a, _ := namespace.Parse(ns)
	target, writer, _ := memory.InboxParties(a)
	if b.Author != writer.String() {
		s.core.Logger().Warn("capsule record with a foreign author ignored", "namespace", ns, "author", b.Author)
		return
	}
	e := &capsuleEntry{ns: ns, target: target, writer: writer, body: b, revoked: !schema.Time(rec, schema.FieldRevokedAt).IsZero()}
	st := s
	st.mu.Lock()
	if st.caps == nil {
		st.caps = map[string]*capsuleEntry{}
	}
	st.caps[ns] = e
	st.mu.Unlock()
}

// Forget drops a retracted record from the capsule index.
func (s *Capsules) Forget(ns, id string) {
	st := s
	st.mu.Lock()
	defer st.mu.Unlock()
	if id == schema.CapsuleMetaID {
		delete(st.caps, ns)
	}
	if st.items[id] == ns {
		delete(st.items, id)
		delete(st.byNS[ns], id)
		if len(st.byNS[ns]) == 0 {
			delete(st.byNS, ns)
		}
	}
}

// Visible reports whether id may be read at now: true unless
// it is an item of a capsule that expired, was revoked, or whose meta
// record is missing (fail closed).
func (s *Capsules) Visible(id string, now time.Time) bool {
	st := s
	st.mu.RLock()
	defer st.mu.RUnlock()
	ns, ok := st.items[id]
	if !ok {
		return true
	}
	e := st.caps[ns]
	return e != nil && e.status(now) == memapi.CapsuleActive
}

// Create writes a capsule into each audience member's inbox.
func (s *Capsules) Create(ctx context.Context, c memapi.Caller, req memapi.CapsuleRequest) (memapi.CapsuleCreated, error) {
	creator := c.Principal
	if creator.IsZero() {
		return memapi.CapsuleCreated{}, invalid("no caller principal")
	}
	if creator.Kind != namespace.KindAgent || creator.Path != "" {
		return memapi.CapsuleCreated{}, invalid("capsules are created by agent principals (agent://NAME), not %s", creator)
	}
	req.SubjectType, req.SubjectID = strings.TrimSpace(req.SubjectType), strings.TrimSpace(req.SubjectID)
	if req.SubjectType == "" || req.SubjectID == "" {
		return memapi.CapsuleCreated{}, invalid("subject_type and subject_id are required")
	}
	if req.Scope != "" {
		if err := memapi.CheckScope(req.Scope); err != nil {
			return memapi.CapsuleCreated{}, err
		}
	}
	switch {
	case req.TTLDays == 0:
		req.TTLDays = memapi.DefaultCapsuleTTLDays
	case req.TTLDays < 0 || req.TTLDays > memapi.MaxCapsuleTTLDays:
		return memapi.CapsuleCreated{}, invalid("ttl_days must be 1..%d, got %d", memapi.MaxCapsuleTTLDays, req.TTLDays)
	}
	if len(req.Risks) > memapi.MaxCapsuleRisks {
		return memapi.CapsuleCreated{}, invalid("at most %d risks, got %d", memapi.MaxCapsuleRisks, len(req.Risks))
	}
	risks := []string{}
	for _, r := range req.Risks {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if len(r) > maxCapsuleRiskBytes {
			return memapi.CapsuleCreated{}, invalid("a risk is %d bytes (max %d)", len(r), maxCapsuleRiskBytes)
		}
		risks = append(risks, r)
	}
	if len(req.Audience) == 0 {
		return memapi.CapsuleCreated{}, invalid("audience is required: the agents who may read the capsule")
	}
	if len(req.Audience) > memapi.MaxCapsuleAudience {
		return memapi.CapsuleCreated{}, invalid("at most %d audience members, got %d", memapi.MaxCapsuleAudience, len(req.Audience))
	}
	var audience []namespace.Address
	for _, a := range req.Audience {
		p, err := namespace.ParsePrincipal(strings.TrimSpace(a))
		if err != nil {
			return memapi.CapsuleCreated{}, invalid("audience %q: %v", a, err)
		}
		if p.Kind != namespace.KindAgent || p.Path != "" {
			return memapi.CapsuleCreated{}, invalid("audience %q: want an agent principal (agent://NAME)", a)
		}
		if p == creator {
			return memapi.CapsuleCreated{}, invalid("the creator (%s) always reads its capsules; leave it out of the audience", p)
		}
		if !slices.Contains(audience, p) {
			audience = append(audience, p)
		}
	}
	sources, err := s.sourcesOf(ctx, c, req)
	if err != nil {
		return memapi.CapsuleCreated{}, err
	}
	s.sweepLogged()
	now, _ := s.core.Now()
	rawID, err := s.core.NewID(now)
	if err != nil {
		return memapi.CapsuleCreated{}, err
	}
	id := strings.ToLower(rawID)
	body := capsuleBody{ID: id, SubjectType: req.SubjectType, SubjectID: req.SubjectID, Project: req.Project,
		Scope: req.Scope, Author: creator.String(), Risks: risks, CreatedAt: now,
		ExpiresAt: now.Add(time.Duration(req.TTLDays) * 24 * time.Hour)}
	for _, a := range audience {
		body.Audience = append(body.Audience, a.String())
	}
	for _, m := range sources {
		body.Sources = append(body.Sources, m.ID)
	}
	var inboxes []namespace.Address
	for _, a := range audience {
		ns, err := memory.InboxNamespace(a, creator, schema.CapsuleNamePrefix+id)
		if err != nil {
			return memapi.CapsuleCreated{}, err
		}
		if err := s.core.Check(creator, ns, acl.Write); err != nil {
			return memapi.CapsuleCreated{}, err
		}
		inboxes = append(inboxes, ns)
	}
	enc, err := json.Marshal(body)
	if err != nil {
		return memapi.CapsuleCreated{}, err
	}
	err = s.core.Write(func(tx *store.Tx) error {
		for _, ns := range inboxes {
			_, ts := s.core.Now()
			e, err := tx.Edit(ns.String(), schema.CapsuleMetaID)
			if err != nil {
				return err
			}
			for _, f := range []struct {
				name string
				v    []byte
			}{{schema.FieldKind, []byte(schema.KindCapsule)}, {schema.FieldCapsule, enc}, {schema.FieldAuthor, []byte(creator.String())},
				{schema.FieldCreatedAt, schema.EncodeTime(now)}} {
				if err := e.Set(ts, f.name, f.v); err != nil {
					return err
				}
			}
			if err := schema.Touch(e, ts, now); err != nil {
				return err
			}
			tx.Commit(ns.String(), schema.CapsuleMetaID, e)
			for _, src := range sources {
				if err := s.itemTx(tx, c, id, ns, src); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return memapi.CapsuleCreated{}, err
	}
	return memapi.CapsuleCreated{CapsuleID: id, ExpiresAt: body.ExpiresAt, Audience: body.Audience, ItemCount: len(sources)}, nil
}

// itemTx writes the snapshot of src into the capsule inbox ns.
func (s *Capsules) itemTx(tx *store.Tx, c memapi.Caller, capID string, ns namespace.Address, src memapi.Memory) error {
	tags := slices.Clone(src.Tags)
	if !slices.Contains(tags, schema.TagCapsule) {
		tags = append(tags, schema.TagCapsule)
	}
	req := memapi.SaveRequest{Type: src.Type, Title: src.Title, Content: src.Content, Summary: src.Summary, Tags: tags,
		Importance: &src.Importance, Confidence: &src.Confidence, LinkedFiles: src.LinkedFiles, Scope: src.Scope,
		SubjectType: src.SubjectType, SubjectID: src.SubjectID, Project: src.Project, SessionID: src.SessionID,
		Channel: src.Channel}
	o := memory.SaveOptions{ID: memory.DerivedID(s.core.Wall(), "capsule", ns.String(), src.ID), Lineage: src.ID, NoUpsert: true}
	prov := append(slices.Clone(src.Provenance), "source:"+src.ID, "author:"+c.Principal.String(), "capsule:"+capID)
	if src.Author != "" {
		prov = append(prov, "author:"+src.Author)
	}
	slices.Sort(prov)
	o.Provenance = slices.Compact(prov)
	res, err := s.core.SaveTx(tx, c, ns, req, o)
	if err != nil {
		return fmt.Errorf("capsule item %s: %w", src.ID, err)
	}
	return s.core.MarkCopyTx(tx, ns, &res.Memory, src.Namespace) // copies.go: edits of the source follow the item
}

// sourcesOf resolves the items of a create; every check happens here,
// before anything is written.
func (s *Capsules) sourcesOf(ctx context.Context, c memapi.Caller, req memapi.CapsuleRequest) ([]memapi.Memory, error) {
	switch {
	case len(req.IDs) > 0 && req.Query != nil:
		return nil, invalid("give ids or query, not both")
	case len(req.IDs) == 0 && req.Query == nil:
		return nil, invalid("ids or query is required: the memories the capsule carries")
	case len(req.IDs) > memapi.MaxCapsuleItems:
		return nil, invalid("at most %d ids, got %d", memapi.MaxCapsuleItems, len(req.IDs))
	}
	var out []memapi.Memory
	if len(req.IDs) > 0 {
		seen := map[string]bool{}
		for _, id := range req.IDs {
			id = strings.TrimSpace(id)
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			ns, rec, err := s.core.Locate(c, id, false)
			if err != nil {
				return nil, err
			}
			if err := s.core.Check(c.Principal, ns, acl.Share); err != nil {
				return nil, err
			}
			m, fl := s.core.View(ns.String(), id, rec)
			if fl.Retracted {
				return nil, fmt.Errorf("%w: memory %q", memapi.ErrNotFound, id)
			}
			if fl.Quarantined {
				return nil, invalid("memory %s is quarantined; a capsule does not carry quarantined memories", id)
			}
			out = append(out, m)
		}
		if len(out) == 0 {
			return nil, invalid("ids holds no memory id")
		}
		return out, nil
	}
	q := *req.Query
	if q.Limit == 0 {
		q.Limit = memapi.DefaultSearchLimit
	}
	if q.Limit < 0 || q.Limit > memapi.MaxCapsuleItems {
		return nil, invalid("query.limit must be 1..%d, got %d", memapi.MaxCapsuleItems, q.Limit)
	}
	q.IncludeDeleted, q.IncludeQuarantined = false, false
	var found []memapi.Memory
	if strings.TrimSpace(q.Query) != "" {
		res, err := s.core.Service().Search(ctx, c, q)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Results {
			found = append(found, h.Memory)
		}
	} else {
		sf, err := s.core.IndexFilter(c, q.Filter)
		if err != nil {
			return nil, err
		}
		found = s.core.List(sf, true, q.Limit)
	}
	denied := 0
	for _, m := range found {
		ns, err := namespace.Parse(m.Namespace)
		if err != nil || s.core.Check(c.Principal, ns, acl.Share) != nil {
			denied++
			continue
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		if denied > 0 {
			return nil, fmt.Errorf("%w: %s lacks share on the namespaces of all %d memories the query matched", acl.ErrDenied, c.Principal, denied)
		}
		return nil, invalid("the query matched no memory")
	}
	return out, nil
}

// entries snapshots the capsule index.
func (s *Capsules) entries() []capsuleEntry {
	st := s
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := make([]capsuleEntry, 0, len(st.caps))
	for _, e := range st.caps {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b capsuleEntry) int { return strings.Compare(a.ns, b.ns) })
	return out
}

func (s *Capsules) itemIDs(ns string) []string {
	st := s
	st.mu.RLock()
	defer st.mu.RUnlock()
	ids := make([]string, 0, len(st.byNS[ns]))
	for id := range st.byNS[ns] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (e *capsuleEntry) view(now time.Time) memapi.Capsule {
	b := e.body
	return memapi.Capsule{ID: b.ID, Namespace: e.ns, SubjectType: b.SubjectType, SubjectID: b.SubjectID, Project: b.Project,
		Scope: b.Scope, Author: b.Author, Audience: slices.Clone(b.Audience), Risks: append([]string{}, b.Risks...),
		CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt, Status: e.status(now), ItemCount: len(b.Sources)}
}

// List lists the capsules available to the caller: those it is in
// the audience of (active only), and those it created (any status until
// collected), newest first, optionally for one subject.
func (s *Capsules) List(ctx context.Context, c memapi.Caller, q memapi.CapsuleQuery) (memapi.CapsuleList, error) {
	if c.Principal.IsZero() {
		return memapi.CapsuleList{}, invalid("no caller principal")
	}
	s.sweepLogged()
	now := s.core.Wall()
	res := memapi.CapsuleList{Capsules: []memapi.Capsule{}}
	created := map[string]bool{}
	for _, e := range s.entries() {
		if q.SubjectType != "" && e.body.SubjectType != q.SubjectType || q.SubjectID != "" && e.body.SubjectID != q.SubjectID {
			continue
		}
		ns, err := namespace.Parse(e.ns)
		if err != nil || s.core.Check(c.Principal, ns, acl.Read) != nil {
			continue
		}
		switch c.Principal {
		case e.target:
			if e.status(now) == memapi.CapsuleActive {
				res.Capsules = append(res.Capsules, e.view(now))
			}
		case e.writer:
			if !created[e.body.ID] {
				created[e.body.ID] = true
				res.Capsules = append(res.Capsules, e.view(now))
			}
		}
	}
	slices.SortFunc(res.Capsules, func(a, b memapi.Capsule) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return res, nil
}

// entryFor finds the caller's entry of capsule id: its own inbox if it
// is in the audience, else the first inbox if it created it.
func (s *Capsules) entryFor(c memapi.Caller, id string) (capsuleEntry, bool, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return capsuleEntry{}, false, invalid("capsule id is required")
	}
	var creatorEntry *capsuleEntry
	for _, e := range s.entries() {
		if e.body.ID != id {
			continue
		}
		ns, err := namespace.Parse(e.ns)
		if err != nil || s.core.Check(c.Principal, ns, acl.Read) != nil {
			continue
		}
		if e.target == c.Principal {
			return e, false, nil
		}
		if e.writer == c.Principal && creatorEntry == nil {
			creatorEntry = &e
		}
	}
	if creatorEntry != nil {
		return *creatorEntry, true, nil
	}
	// Outside the audience: do not reveal that the capsule exists.
	return capsuleEntry{}, false, fmt.Errorf("%w: capsule %q", memapi.ErrNotFound, id)
}

// Get returns one capsule with its items. An audience member sees
// it only while it is active; its creator also sees an expired or revoked
// one (without items) until it is collected.
func (s *Capsules) Get(ctx context.Context, c memapi.Caller, id string) (memapi.Capsule, error) {
	return s.get(c, id, "")
}

// On returns a capsule with the items c may read on channel (the
// context bundle's bundle.Source).
func (s *Capsules) On(ctx context.Context, c memapi.Caller, id, channel string) (memapi.Capsule, error) {
	return s.get(c, id, channel)
}

func (s *Capsules) get(c memapi.Caller, id, channel string) (memapi.Capsule, error) {
	e, asCreator, err := s.entryFor(c, id)
	if err != nil {
		return memapi.Capsule{}, err
	}
	now := s.core.Wall()
	v := e.view(now)
	if v.Status != memapi.CapsuleActive {
		if !asCreator {
			return memapi.Capsule{}, fmt.Errorf("%w: capsule %q is %s", memapi.ErrNotFound, v.ID, v.Status)
		}
		return v, nil
	}
	items, err := s.readItems(c, e, channel)
	if err != nil {
		return memapi.Capsule{}, err
	}
	v.Items = items
	return v, nil
}

// readItems reads a capsule's items through the ordinary read path
// (effective view, channel blocks, the capsule gate), in source order.
func (s *Capsules) readItems(c memapi.Caller, e capsuleEntry, channel string) ([]memapi.Memory, error) {
	sf, err := s.core.IndexFilter(c, memapi.Filter{Namespace: e.ns, Channel: channel})
	if err != nil {
		return nil, err
	}
	items := s.core.List(sf, false, 0)
	order := map[string]int{}
	for i, id := range e.body.Sources {
		order[id] = i
	}
	slices.SortStableFunc(items, func(a, b memapi.Memory) int { return cmp.Compare(order[a.Lineage], order[b.Lineage]) })
	return items, nil
}

// Revoke makes a capsule unreadable at once (creator only): every
// inbox's meta record is marked revoked and its items are retracted.
func (s *Capsules) Revoke(ctx context.Context, c memapi.Caller, id string) (memapi.Capsule, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return memapi.Capsule{}, invalid("capsule id is required")
	}
	var mine []capsuleEntry
	audience := false
	for _, e := range s.entries() {
		if e.body.ID != id {
			continue
		}
		switch c.Principal {
		case e.writer:
			mine = append(mine, e)
		case e.target:
			audience = true
		}
	}
	if len(mine) == 0 {
		if audience {
			return memapi.Capsule{}, fmt.Errorf("%w: only the creator revokes capsule %s", acl.ErrDenied, id)
		}
		return memapi.Capsule{}, fmt.Errorf("%w: capsule %q", memapi.ErrNotFound, id)
	}
	for _, e := range mine {
		ns, _ := namespace.Parse(e.ns)
		if err := s.core.Check(c.Principal, ns, acl.Write); err != nil {
			return memapi.Capsule{}, err
		}
	}
	err := s.core.Write(func(tx *store.Tx) error {
		for _, e := range mine {
			if !e.revoked {
				now, ts := s.core.Now()
				ed, err := tx.Edit(e.ns, schema.CapsuleMetaID)
				if err != nil {
					return err
				}
				if err := ed.Set(ts, schema.FieldRevokedAt, schema.EncodeTime(now)); err != nil {
					return err
				}
				if err := schema.Touch(ed, ts, now); err != nil {
					return err
				}
				tx.Commit(e.ns, schema.CapsuleMetaID, ed)
			}
			if err := retractAll(tx, e.ns, s.itemIDs(e.ns)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return memapi.Capsule{}, err
	}
	e := mine[0]
	e.revoked = true
	return e.view(s.core.Wall()), nil
}

func retractAll(tx *store.Tx, ns string, ids []string) error {
	for _, id := range ids {
		gone, err := tx.Retracted(ns, id)
		if err != nil {
			return err
		}
		if gone {
			continue
		}
		if err := tx.Retract(ns, id); err != nil {
			return err
		}
	}
	return nil
}

// Sweep collects the expired capsules this node wrote (their
// creator is one of its local principals): every record of each is
// retracted, and the retraction replicates to the audience. It returns
// how many capsule inboxes it collected. Expired capsules are unreadable
// before they are collected; the node may call this on a timer.
func (s *Capsules) Sweep() (int, error) {
	now := s.core.Wall()
	var dead []capsuleEntry
	for _, e := range s.entries() {
		if s.core.IsLocal(e.writer) && !now.Before(e.body.ExpiresAt) {
			dead = append(dead, e)
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	err := s.core.Write(func(tx *store.Tx) error {
		for _, e := range dead {
			if err := retractAll(tx, e.ns, append(s.itemIDs(e.ns), schema.CapsuleMetaID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(dead), nil
}

func (s *Capsules) sweepLogged() {
	if n, err := s.Sweep(); err != nil {
		s.core.Logger().Warn("capsule collection failed", "err", err)
	} else if n > 0 {
		s.core.Logger().Info("collected expired capsules", "inboxes", n)
	}
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{memapi.ErrInvalid}, a...)...)
}
