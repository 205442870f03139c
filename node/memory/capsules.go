package memory

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
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Capsules: a curated, expiring bundle of memories about one subject,
// delivered to an audience of agents.
//
// Storage. A capsule is written by its creator C (an agent root) into one
// inbox per audience member A: agent://A/.inbox/C/capsule-<id> (see
// inbox.go). Each inbox holds a meta record (id "capsule", kind "capsule":
// subject, risks, audience, author, created_at, expires_at, and a revoked
// timestamp) and one memory per item: a snapshot of the source memory's
// effective view at creation (content, title, type, tags, scope, subject,
// …), lineage = the source id, copied_from = its namespace (the source's
// retract, block and quarantine follow the item: copies.go), provenance =
// the source's plus "source:<id>", "author:<source author>", "author:<C>",
// "capsule:<id>", tagged "capsule". The inbox rule makes C the only writer
// and A and C the only readers; inbox namespaces replicate to A's node, so
// only the audience's nodes receive a capsule.
//
// Creation needs read and share on every source memory's namespace, as
// Share does: an id the caller cannot read is "not found" (404, the id's
// existence is not revealed), one it can read but not share is denied
// (403); either way nothing is written. Memories in inboxes (capsule items
// included) cannot be shared, so a capsule cannot re-deliver another one.
//
// Expiry and revocation are enforced at read time on every node with the
// Service's clock: the items of a capsule that has expired, was revoked,
// or whose meta record has not arrived (yet) are invisible to every read
// path — search, list, context, timeline, export (readScope's Accept) and
// get/update/delete by id (locate). Collection: SweepCapsules retracts,
// on the creator's node (the writer, so the retraction replicates), every
// record of each expired capsule; it runs at Open, on each capsule list
// and create, and may be called on a timer. Revoke (creator only) sets the
// revoked flag and retracts the items at once; the meta record stays,
// showing "revoked", until the capsule would have expired.
//
// Forwarding (the spec's optional "B forwards to C with an audit trail")
// is not implemented: an audience member cannot share capsule items (the
// inbox rule grants nobody share), and would create a new capsule from its
// own memories instead.

// Capsule limits; the exported limits and statuses are memapi's (api.go),
// the record names schema's.
const (
	maxCapsuleRiskBytes = 1000

	TagCapsule = schema.TagCapsule // tag on every capsule item
)

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
		return CapsuleRevoked
	case !now.Before(e.body.ExpiresAt):
		return CapsuleExpired
	}
	return CapsuleActive
}

// capsuleState is the in-memory index of capsules, derived from the store.
type capsuleState struct {
	mu    sync.RWMutex
	caps  map[string]*capsuleEntry   // by inbox namespace
	items map[string]string          // item id → capsule namespace
	byNS  map[string]map[string]bool // capsule namespace → item ids
}

// isCapsuleNS reports whether ns is a capsule inbox.
func isCapsuleNS(ns string) bool { return schema.IsCapsuleInbox(ns) }

// indexCapsuleItem remembers a memory stored in a capsule inbox: a
// capsule item, hidden once its capsule expires or is revoked.
func (s *Service) indexCapsuleItem(ns, id string) {
	if !isCapsuleNS(ns) {
		return
	}
	st := &s.caps
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

func (s *Service) admitCapsule(ns, id string, rec *crdt.Record) {
	if id != schema.CapsuleMetaID || !isCapsuleNS(ns) {
		s.log.Warn("capsule record outside a capsule inbox ignored", "namespace", ns, "id", id)
		return
	}
	var b capsuleBody
	if err := json.Unmarshal([]byte(schema.Str(rec, schema.FieldCapsule)), &b); err != nil || b.ID == "" || b.ExpiresAt.IsZero() {
		s.log.Warn("unreadable capsule record ignored", "namespace", ns, "err", err)
		return
	}
	a, _ := namespace.Parse(ns)
	target, writer, _ := InboxParties(a)
	if b.Author != writer.String() {
		s.log.Warn("capsule record with a foreign author ignored", "namespace", ns, "author", b.Author)
		return
	}
	e := &capsuleEntry{ns: ns, target: target, writer: writer, body: b, revoked: !schema.Time(rec, schema.FieldRevokedAt).IsZero()}
	st := &s.caps
	st.mu.Lock()
	if st.caps == nil {
		st.caps = map[string]*capsuleEntry{}
	}
	st.caps[ns] = e
	st.mu.Unlock()
}

// forgetCapsule drops a retracted record from the capsule index.
func (s *Service) forgetCapsule(ns, id string) {
	st := &s.caps
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

// capsuleItemVisible reports whether id may be read at now: true unless
// it is an item of a capsule that expired, was revoked, or whose meta
// record is missing (fail closed).
func (s *Service) capsuleItemVisible(id string, now time.Time) bool {
	st := &s.caps
	st.mu.RLock()
	defer st.mu.RUnlock()
	ns, ok := st.items[id]
	if !ok {
		return true
	}
	e := st.caps[ns]
	return e != nil && e.status(now) == CapsuleActive
}

// CreateCapsule writes a capsule into each audience member's inbox.
func (s *Service) CreateCapsule(ctx context.Context, c Caller, req CapsuleRequest) (CapsuleCreated, error) {
	creator := c.Principal
	if creator.IsZero() {
		return CapsuleCreated{}, invalid("no caller principal")
	}
	if creator.Kind != namespace.KindAgent || creator.Path != "" {
		return CapsuleCreated{}, invalid("capsules are created by agent principals (agent://NAME), not %s", creator)
	}
	req.SubjectType, req.SubjectID = strings.TrimSpace(req.SubjectType), strings.TrimSpace(req.SubjectID)
	if req.SubjectType == "" || req.SubjectID == "" {
		return CapsuleCreated{}, invalid("subject_type and subject_id are required")
	}
	if req.Scope != "" {
		if err := oneOf("scope", req.Scope, scopes); err != nil {
			return CapsuleCreated{}, err
		}
	}
	switch {
	case req.TTLDays == 0:
		req.TTLDays = DefaultCapsuleTTLDays
	case req.TTLDays < 0 || req.TTLDays > MaxCapsuleTTLDays:
		return CapsuleCreated{}, invalid("ttl_days must be 1..%d, got %d", MaxCapsuleTTLDays, req.TTLDays)
	}
	if len(req.Risks) > MaxCapsuleRisks {
		return CapsuleCreated{}, invalid("at most %d risks, got %d", MaxCapsuleRisks, len(req.Risks))
	}
	risks := []string{}
	for _, r := range req.Risks {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if len(r) > maxCapsuleRiskBytes {
			return CapsuleCreated{}, invalid("a risk is %d bytes (max %d)", len(r), maxCapsuleRiskBytes)
		}
		risks = append(risks, r)
	}
	if len(req.Audience) == 0 {
		return CapsuleCreated{}, invalid("audience is required: the agents who may read the capsule")
	}
	if len(req.Audience) > MaxCapsuleAudience {
		return CapsuleCreated{}, invalid("at most %d audience members, got %d", MaxCapsuleAudience, len(req.Audience))
	}
	var audience []namespace.Address
	for _, a := range req.Audience {
		p, err := namespace.ParsePrincipal(strings.TrimSpace(a))
		if err != nil {
			return CapsuleCreated{}, invalid("audience %q: %v", a, err)
		}
		if p.Kind != namespace.KindAgent || p.Path != "" {
			return CapsuleCreated{}, invalid("audience %q: want an agent principal (agent://NAME)", a)
		}
		if p == creator {
			return CapsuleCreated{}, invalid("the creator (%s) always reads its capsules; leave it out of the audience", p)
		}
		if !slices.Contains(audience, p) {
			audience = append(audience, p)
		}
	}
	sources, err := s.capsuleSources(ctx, c, req)
	if err != nil {
		return CapsuleCreated{}, err
	}
	s.sweepCapsulesLogged()
	now, _ := s.now()
	rawID, err := s.newID(now)
	if err != nil {
		return CapsuleCreated{}, err
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
		ns, err := InboxNamespace(a, creator, schema.CapsuleNamePrefix+id)
		if err != nil {
			return CapsuleCreated{}, err
		}
		if err := s.auth.CheckWrite(creator, ns); err != nil {
			return CapsuleCreated{}, err
		}
		inboxes = append(inboxes, ns)
	}
	enc, err := json.Marshal(body)
	if err != nil {
		return CapsuleCreated{}, err
	}
	err = s.write(func(tx *store.Tx) error {
		for _, ns := range inboxes {
			_, ts := s.now()
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
				if err := s.capsuleItemTx(tx, c, id, ns, src); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return CapsuleCreated{}, err
	}
	return CapsuleCreated{CapsuleID: id, ExpiresAt: body.ExpiresAt, Audience: body.Audience, ItemCount: len(sources)}, nil
}

// capsuleItemTx writes the snapshot of src into the capsule inbox ns.
func (s *Service) capsuleItemTx(tx *store.Tx, c Caller, capID string, ns namespace.Address, src Memory) error {
	tags := slices.Clone(src.Tags)
	if !slices.Contains(tags, TagCapsule) {
		tags = append(tags, TagCapsule)
	}
	req := SaveRequest{Type: src.Type, Title: src.Title, Content: src.Content, Summary: src.Summary, Tags: tags,
		Importance: &src.Importance, Confidence: &src.Confidence, LinkedFiles: src.LinkedFiles, Scope: src.Scope,
		SubjectType: src.SubjectType, SubjectID: src.SubjectID, Project: src.Project, SessionID: src.SessionID,
		Channel: src.Channel}
	p, err := normaliseSave(&req)
	if err != nil {
		return fmt.Errorf("capsule item %s: %w", src.ID, err)
	}
	p.id = derivedID(s.cfg.Now(), "capsule", ns.String(), src.ID)
	p.lineage, p.noUpsert = src.ID, true
	prov := append(slices.Clone(src.Provenance), "source:"+src.ID, "author:"+c.Principal.String(), "capsule:"+capID)
	if src.Author != "" {
		prov = append(prov, "author:"+src.Author)
	}
	slices.Sort(prov)
	p.provenance = slices.Compact(prov)
	res, err := s.saveTx(tx, c, ns, req, p)
	if err != nil {
		return err
	}
	return s.markCopyTx(tx, ns, &res.Memory, src.Namespace) // copies.go: edits of the source follow the item
}

// capsuleSources resolves the items of a create; every check happens here,
// before anything is written.
func (s *Service) capsuleSources(ctx context.Context, c Caller, req CapsuleRequest) ([]Memory, error) {
	switch {
	case len(req.IDs) > 0 && req.Query != nil:
		return nil, invalid("give ids or query, not both")
	case len(req.IDs) == 0 && req.Query == nil:
		return nil, invalid("ids or query is required: the memories the capsule carries")
	case len(req.IDs) > MaxCapsuleItems:
		return nil, invalid("at most %d ids, got %d", MaxCapsuleItems, len(req.IDs))
	}
	var out []Memory
	if len(req.IDs) > 0 {
		seen := map[string]bool{}
		for _, id := range req.IDs {
			id = strings.TrimSpace(id)
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			ns, rec, err := s.locate(c, id, false)
			if err != nil {
				return nil, err
			}
			if err := s.check(c.Principal, ns, acl.Share); err != nil {
				return nil, err
			}
			m, fl := s.view(ns.String(), id, rec)
			if fl.Retracted {
				return nil, fmt.Errorf("%w: memory %q", ErrNotFound, id)
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
		q.Limit = DefaultSearchLimit
	}
	if q.Limit < 0 || q.Limit > MaxCapsuleItems {
		return nil, invalid("query.limit must be 1..%d, got %d", MaxCapsuleItems, q.Limit)
	}
	q.IncludeDeleted, q.IncludeQuarantined = false, false
	var found []Memory
	if strings.TrimSpace(q.Query) != "" {
		res, err := s.Search(ctx, c, q)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Results {
			found = append(found, h.Memory)
		}
	} else {
		sf, err := s.indexFilter(c, q.Filter)
		if err != nil {
			return nil, err
		}
		found = s.load(metaIDs(s.ix.List(sf, true, q.Limit)))
	}
	denied := 0
	for _, m := range found {
		ns, err := namespace.Parse(m.Namespace)
		if err != nil || s.check(c.Principal, ns, acl.Share) != nil {
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
func (s *Service) capsuleEntries() []capsuleEntry {
	st := &s.caps
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := make([]capsuleEntry, 0, len(st.caps))
	for _, e := range st.caps {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b capsuleEntry) int { return strings.Compare(a.ns, b.ns) })
	return out
}

func (s *Service) capsuleItemIDs(ns string) []string {
	st := &s.caps
	st.mu.RLock()
	defer st.mu.RUnlock()
	ids := make([]string, 0, len(st.byNS[ns]))
	for id := range st.byNS[ns] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (e *capsuleEntry) view(now time.Time) Capsule {
	b := e.body
	return Capsule{ID: b.ID, Namespace: e.ns, SubjectType: b.SubjectType, SubjectID: b.SubjectID, Project: b.Project,
		Scope: b.Scope, Author: b.Author, Audience: slices.Clone(b.Audience), Risks: append([]string{}, b.Risks...),
		CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt, Status: e.status(now), ItemCount: len(b.Sources)}
}

// ListCapsules lists the capsules available to the caller: those it is in
// the audience of (active only), and those it created (any status until
// collected), newest first, optionally for one subject.
func (s *Service) ListCapsules(ctx context.Context, c Caller, q CapsuleQuery) (CapsuleList, error) {
	if c.Principal.IsZero() {
		return CapsuleList{}, invalid("no caller principal")
	}
	s.sweepCapsulesLogged()
	now := s.cfg.Now()
	res := CapsuleList{Capsules: []Capsule{}}
	created := map[string]bool{}
	for _, e := range s.capsuleEntries() {
		if q.SubjectType != "" && e.body.SubjectType != q.SubjectType || q.SubjectID != "" && e.body.SubjectID != q.SubjectID {
			continue
		}
		ns, err := namespace.Parse(e.ns)
		if err != nil || s.auth.CheckRead(c.Principal, ns) != nil {
			continue
		}
		switch c.Principal {
		case e.target:
			if e.status(now) == CapsuleActive {
				res.Capsules = append(res.Capsules, e.view(now))
			}
		case e.writer:
			if !created[e.body.ID] {
				created[e.body.ID] = true
				res.Capsules = append(res.Capsules, e.view(now))
			}
		}
	}
	slices.SortFunc(res.Capsules, func(a, b Capsule) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return res, nil
}

// capsuleFor finds the caller's entry of capsule id: its own inbox if it
// is in the audience, else the first inbox if it created it.
func (s *Service) capsuleFor(c Caller, id string) (capsuleEntry, bool, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return capsuleEntry{}, false, invalid("capsule id is required")
	}
	var creatorEntry *capsuleEntry
	for _, e := range s.capsuleEntries() {
		if e.body.ID != id {
			continue
		}
		ns, err := namespace.Parse(e.ns)
		if err != nil || s.auth.CheckRead(c.Principal, ns) != nil {
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
	return capsuleEntry{}, false, fmt.Errorf("%w: capsule %q", ErrNotFound, id)
}

// GetCapsule returns one capsule with its items. An audience member sees
// it only while it is active; its creator also sees an expired or revoked
// one (without items) until it is collected.
func (s *Service) GetCapsule(ctx context.Context, c Caller, id string) (Capsule, error) {
	return s.getCapsule(c, id, "")
}

// CapsuleOn returns a capsule with the items c may read on channel (the
// context bundle's bundle.Source).
func (s *Service) CapsuleOn(ctx context.Context, c Caller, id, channel string) (Capsule, error) {
	return s.getCapsule(c, id, channel)
}

func (s *Service) getCapsule(c Caller, id, channel string) (Capsule, error) {
	e, asCreator, err := s.capsuleFor(c, id)
	if err != nil {
		return Capsule{}, err
	}
	now := s.cfg.Now()
	v := e.view(now)
	if v.Status != CapsuleActive {
		if !asCreator {
			return Capsule{}, fmt.Errorf("%w: capsule %q is %s", ErrNotFound, v.ID, v.Status)
		}
		return v, nil
	}
	items, err := s.capsuleItems(c, e, channel)
	if err != nil {
		return Capsule{}, err
	}
	v.Items = items
	return v, nil
}

// capsuleItems reads a capsule's items through the ordinary read path
// (effective view, channel blocks, the capsule gate), in source order.
func (s *Service) capsuleItems(c Caller, e capsuleEntry, channel string) ([]Memory, error) {
	sf, err := s.indexFilter(c, Filter{Namespace: e.ns, Channel: channel})
	if err != nil {
		return nil, err
	}
	items := s.load(metaIDs(s.ix.List(sf, false, 0)))
	order := map[string]int{}
	for i, id := range e.body.Sources {
		order[id] = i
	}
	slices.SortStableFunc(items, func(a, b Memory) int { return cmp.Compare(order[a.Lineage], order[b.Lineage]) })
	return items, nil
}

// RevokeCapsule makes a capsule unreadable at once (creator only): every
// inbox's meta record is marked revoked and its items are retracted.
func (s *Service) RevokeCapsule(ctx context.Context, c Caller, id string) (Capsule, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return Capsule{}, invalid("capsule id is required")
	}
	var mine []capsuleEntry
	audience := false
	for _, e := range s.capsuleEntries() {
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
			return Capsule{}, fmt.Errorf("%w: only the creator revokes capsule %s", acl.ErrDenied, id)
		}
		return Capsule{}, fmt.Errorf("%w: capsule %q", ErrNotFound, id)
	}
	for _, e := range mine {
		ns, _ := namespace.Parse(e.ns)
		if err := s.auth.CheckWrite(c.Principal, ns); err != nil {
			return Capsule{}, err
		}
	}
	err := s.write(func(tx *store.Tx) error {
		for _, e := range mine {
			if !e.revoked {
				now, ts := s.now()
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
			if err := retractAll(tx, e.ns, s.capsuleItemIDs(e.ns)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Capsule{}, err
	}
	e := mine[0]
	e.revoked = true
	return e.view(s.cfg.Now()), nil
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

// SweepCapsules collects the expired capsules this node wrote (their
// creator is one of its local principals): every record of each is
// retracted, and the retraction replicates to the audience. It returns
// how many capsule inboxes it collected. Expired capsules are unreadable
// before they are collected; the node may call this on a timer.
func (s *Service) SweepCapsules() (int, error) {
	now := s.cfg.Now()
	var dead []capsuleEntry
	for _, e := range s.capsuleEntries() {
		if s.isLocal(e.writer) && !now.Before(e.body.ExpiresAt) {
			dead = append(dead, e)
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	err := s.write(func(tx *store.Tx) error {
		for _, e := range dead {
			if err := retractAll(tx, e.ns, append(s.capsuleItemIDs(e.ns), schema.CapsuleMetaID)); err != nil {
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

func (s *Service) sweepCapsulesLogged() {
	if n, err := s.SweepCapsules(); err != nil {
		s.log.Warn("capsule collection failed", "err", err)
	} else if n > 0 {
		s.log.Info("collected expired capsules", "inboxes", n)
	}
}
