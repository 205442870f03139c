package search

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
)

// BM25 parameters and field boosts.
const (
	k1 = 1.2
	b  = 0.75

	// Weighted term frequencies and lengths are kept in half units so the
	// boosts 3, 1 and 1.5 stay integers: title 6, content 2, tags 3.
	titleHalf   = 6
	contentHalf = 2
	tagsHalf    = 3
)

// Doc is what the node hands over for one memory. Title, Content and Tags
// are indexed but not retained as text; Tags are also kept as exact values
// for filtering.
type Doc struct {
	ID                                                                                    string
	Namespace, Type, Project, Scope, SubjectType, SubjectID, SessionID, Channel, TopicKey string
	Title, Content                                                                        string
	Tags                                                                                  []string
	CreatedAt, UpdatedAt                                                                  int64 // unix nanoseconds
	Deleted                                                                               bool  // soft-deleted: excluded unless Filter.IncludeDeleted
	Hidden                                                                                bool  // hidden from default retrieval (quarantine): excluded unless Filter.IncludeHidden
	// Blocked lists channels the document is hidden from: a Filter whose
	// Channel is one of them does not match it.
	Blocked []string
}

// Meta is the catalog entry of one document: everything in Doc except the
// indexed text.
type Meta struct {
	ID, Namespace, Type, Project, Scope, SubjectType, SubjectID, SessionID, Channel, TopicKey string
	Tags                                                                                      []string
	CreatedAt, UpdatedAt                                                                      int64
	Deleted, Hidden                                                                           bool
	Blocked                                                                                   []string
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float64
}

// Stats describes the index's internal occupancy.
type Stats struct {
	Docs         int // live documents, soft-deleted included
	Slots        int // document slots, dead ones included
	DeadSlots    int // slots of replaced or deleted documents awaiting compaction
	Terms        int // distinct terms
	Postings     int // postings, dead ones included
	PostingBytes int // bytes of packed postings
}

const (
	flagDeleted uint8 = 1 << iota
	flagHidden
)

// slot is the catalog entry of one document version. String fields are
// interned per field; 0 is the empty string.
type slot struct {
	// What the filter reads comes first, so it usually costs one cache
	// line.
	created          int64
	ns, typ, project uint32
	scope, subjType  uint32
	subjID, session  uint32
	channel          uint32
	flags            uint8
	tags             listRef // tag ids (tag interner) in Index.lists
	blocked          listRef // channel ids (channel interner) the doc is hidden from, in Index.lists
	id               idRef   // in Index.ids
	updated          int64
	topic            uint32
	text             uint64 // hash of the indexed text (title, content, tags)
}

// fields holds one interner per catalog field.
type fields struct {
	ns, typ, project, scope, subjType, subjID, session, channel, topic, tag interner
}

func newFields() fields {
	return fields{
		ns: newInterner(), typ: newInterner(), project: newInterner(), scope: newInterner(),
		subjType: newInterner(), subjID: newInterner(), session: newInterner(),
		channel: newInterner(), topic: newInterner(), tag: newInterner(),
	}
}

// Index is an in-memory BM25 full-text index with a metadata catalog.
// It is safe for concurrent use: reads share a lock, writes are exclusive.
type Index struct {
	mu sync.RWMutex

	slots []slot
	// dls holds each slot's weighted length in half units, apart from
	// slots: scoring reads it for every document it visits, and 400 KB at
	// 100k documents stays in cache where the slots (12 MB) do not.
	dls  []uint32
	dead []uint64 // bitmap over slots: replaced or deleted
	// flagged is a bitmap over slots: soft-deleted or hidden (slot.flags
	// not 0), so a search without a filter asks the catalog only about
	// those (Index.matches).
	flagged []uint64
	// emptyNS: a slot has had the empty namespace since the last
	// compaction (filters naming every other namespace still exclude it).
	emptyNS bool
	ndead   int
	// deaths counts slots ever marked dead: a live document frequency
	// counted at the current count is still right (postings.liveDF).
	deaths uint64
	byID   map[uint64]uint32 // by a hash of the id: slotOf, setSlot, dropSlot (arena.go)
	clash  map[string]uint32 // ids whose hash another id holds in byID; nil: none
	// ids and lists hold what slots refer to (arena.go); listWaste counts
	// entries of lists no slot refers to any more.
	ids       idArena
	lists     []uint32
	listWaste int

	// order holds the live slots sorted by (created, id).
	order []uint32

	f      fields
	dict   map[string]uint32 // term -> index in terms
	terms  []postings
	topics map[uint64][]uint32 // ns<<32|topic -> live slots

	live     int    // live docs
	totalLen uint64 // sum of dl over live docs
	// exactTotal is how many matches Search counts before it may stop
	// admitting documents no longer able to rank (searchPruned). Tests
	// lower it to exercise pruning on small corpora.
	exactTotal int

	// Writer scratch, guarded by mu held for writing.
	wtf  map[uint32]uint32
	wbuf []byte
	seed maphash.Seed // for slot.text

	scratch scratchPool // for Search (query.go)
}

// New returns an empty index.
func New() *Index {
	return &Index{
		byID:   make(map[uint64]uint32),
		f:      newFields(),
		dict:   make(map[string]uint32),
		topics: make(map[uint64][]uint32),
		wtf:    make(map[uint32]uint32),
		seed:   maphash.MakeSeed(),

		exactTotal: ExactTotal,
	}
}

// Len returns the number of live documents, soft-deleted ones included.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Stats returns occupancy figures.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := Stats{Docs: ix.live, Slots: len(ix.slots), DeadSlots: ix.ndead, Terms: len(ix.terms)}
	for i := range ix.terms {
		st.Postings += int(ix.terms[i].n)
		st.PostingBytes += len(ix.terms[i].buf)
	}
	return st
}

// Put inserts d, or replaces the document with the same ID. A replacement
// whose indexed text (title, content, tags) and CreatedAt are unchanged —
// a soft delete, a move, a metadata edit — updates the catalog entry in
// place: no tokenizing, no new slot, no dead postings.
func (ix *Index) Put(d Doc) {
	ix.PutPrepared(&Prepared{doc: d, text: ix.textHash(&d)})
}

// Prepared is a document whose text Prepare tokenized, outside the
// index's lock, for PutPrepared.
type Prepared struct {
	doc       Doc
	text      uint64   // textHash
	tokenized bool     // toks and halves hold the text's tokens
	toks      []byte   // each token after its length (one byte: tokens are at most maxTokenBytes)
	halves    []uint32 // each token's weight in half units
}

// Prepare does what Put does before it needs the index: hashes d's text
// and, unless the index already holds the same text for d.ID (a metadata
// change, which Put updates in place), tokenizes and stems it. Writers call
// it before they take the locks that order their puts, so that the lock
// is held only to insert (PutPrepared). Safe for concurrent use.
func (ix *Index) Prepare(d Doc) *Prepared {
	p := &Prepared{doc: d, text: ix.textHash(&d)}
	ix.mu.RLock()
	old, ok := ix.slotOf(d.ID)
	same := ok && ix.slots[old].text == p.text && ix.slots[old].created == d.CreatedAt
	ix.mu.RUnlock()
	if same {
		return p
	}
	p.tokenized = true
	n := len(d.Title) + len(d.Content)
	for _, tag := range d.Tags {
		n += len(tag)
	}
	// Capacity hints: tokens and their length bytes take about the text's
	// size (a token has two bytes at least, and a separator); a word
	// averages over six bytes with its separator.
	p.toks, p.halves = make([]byte, 0, n), make([]uint32, 0, n/6+4)
	buf := make([]byte, 0, maxTokenBytes)
	add := func(text string, half uint32) {
		buf = tokenize(text, buf, func(tok []byte) {
			p.toks = append(append(p.toks, byte(len(tok))), tok...)
			p.halves = append(p.halves, half)
		})
	}
	p.eachText(add)
	return p
}

// eachText calls add with each part of the document's text and its weight.
func (p *Prepared) eachText(add func(text string, half uint32)) {
	add(p.doc.Title, titleHalf)
	add(p.doc.Content, contentHalf)
	for _, tag := range p.doc.Tags {
		add(tag, tagsHalf)
	}
}

// PutPrepared is Put of a prepared document. The index may have changed
// since Prepare: the result is Put's all the same (a document prepared as
// unchanged whose text changed since is tokenized here).
func (ix *Index) PutPrepared(p *Prepared) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	d, text := p.doc, p.text
	if old, ok := ix.slotOf(d.ID); ok {
		if sl := &ix.slots[old]; sl.text == text && sl.created == d.CreatedAt {
			ix.setMeta(old, &d)
			ix.maybeCompact() // the lists setMeta left behind
			return
		}
		ix.kill(old)
	}
	s := uint32(len(ix.slots))
	clear(ix.wtf)
	var dl uint32
	add := func(tok []byte, half uint32) {
		t, ok := ix.dict[string(tok)]
		if !ok {
			t = uint32(len(ix.terms))
			ix.dict[string(tok)] = t
			ix.terms = append(ix.terms, newPostings())
		}
		ix.wtf[t] += half
		dl += half
	}
	if p.tokenized {
		for i, k := 0, 0; i < len(p.toks); k++ {
			n := int(p.toks[i])
			add(p.toks[i+1:i+1+n], p.halves[k])
			i += 1 + n
		}
	} else {
		p.eachText(func(text string, half uint32) {
			ix.wbuf = tokenize(text, ix.wbuf, func(tok []byte) { add(tok, half) })
		})
	}
	for t, tf2 := range ix.wtf {
		ix.terms[t].add(s, tf2, dl)
	}

	// The id is copied: callers often pass a substring of a larger string
	// (a store key holding the namespace too) that it would keep alive.
	sl := slot{id: ix.ids.add(d.ID), created: d.CreatedAt, text: text}
	d.ID = ix.ids.str(sl.id)
	ix.catalog(&sl, &d)
	ix.slots = append(ix.slots, sl)
	ix.dls = append(ix.dls, dl)
	if int(s)/64 >= len(ix.dead) {
		ix.dead = append(ix.dead, 0)
		ix.flagged = append(ix.flagged, 0)
	}
	ix.setFlagged(s)
	ix.setSlot(d.ID, s)
	ix.live++
	ix.totalLen += uint64(dl)
	ix.insertOrder(s)
	if sl.topic != 0 {
		k := topicMapKey(sl.ns, sl.topic)
		ix.topics[k] = append(ix.topics[k], s)
	}
	ix.maybeCompact()
}

// catalog fills sl's catalog fields (everything but id, created and text)
// from d.
func (ix *Index) catalog(sl *slot, d *Doc) {
	sl.updated = d.UpdatedAt
	sl.ns, sl.typ = ix.f.ns.intern(d.Namespace), ix.f.typ.intern(d.Type)
	ix.emptyNS = ix.emptyNS || sl.ns == 0
	sl.project, sl.scope = ix.f.project.intern(d.Project), ix.f.scope.intern(d.Scope)
	sl.subjType, sl.subjID = ix.f.subjType.intern(d.SubjectType), ix.f.subjID.intern(d.SubjectID)
	sl.session, sl.channel = ix.f.session.intern(d.SessionID), ix.f.channel.intern(d.Channel)
	sl.topic = ix.f.topic.intern(d.TopicKey)
	sl.tags = ix.setList(sl.tags, &ix.f.tag, d.Tags)
	sl.blocked = ix.setList(sl.blocked, &ix.f.channel, d.Blocked)
	sl.flags = 0
	if d.Deleted {
		sl.flags |= flagDeleted
	}
	if d.Hidden {
		sl.flags |= flagHidden
	}
}

// setList interns vals into in and stores their distinct ids in lists:
// in place of old when they fit there, else appended (old's entries then
// count as waste, which compaction reclaims).
func (ix *Index) setList(old listRef, in *interner, vals []string) listRef {
	start := len(ix.lists)
	for _, v := range vals {
		id := in.intern(v)
		if !slices.Contains(ix.lists[start:], id) {
			ix.lists = append(ix.lists, id)
		}
	}
	n := len(ix.lists) - start
	if n <= int(old.n) {
		copy(ix.lists[old.at:], ix.lists[start:])
		ix.lists = ix.lists[:start]
		ix.listWaste += int(old.n) - n
		return listRef{at: old.at, n: uint16(n)}
	}
	ix.listWaste += int(old.n)
	return listRef{at: uint32(start), n: uint16(n)}
}

// setMeta replaces the catalog entry of live slot s, whose indexed text and
// CreatedAt d keeps: its postings, length and place in order stay valid.
func (ix *Index) setMeta(s uint32, d *Doc) {
	sl := &ix.slots[s]
	oldKey := topicMapKey(sl.ns, sl.topic)
	hadTopic := sl.topic != 0
	ix.catalog(sl, d)
	ix.setFlagged(s)
	if newKey := topicMapKey(sl.ns, sl.topic); hadTopic && sl.topic != 0 && newKey == oldKey {
		return
	}
	if hadTopic {
		ix.dropTopic(oldKey, s)
	}
	if sl.topic != 0 {
		k := topicMapKey(sl.ns, sl.topic)
		ix.topics[k] = append(ix.topics[k], s)
	}
}

func (ix *Index) dropTopic(k uint64, s uint32) {
	l := slices.DeleteFunc(ix.topics[k], func(x uint32) bool { return x == s })
	if len(l) == 0 {
		delete(ix.topics, k)
	} else {
		ix.topics[k] = l
	}
}

// textHash hashes what Put tokenizes, each part length-prefixed.
func (ix *Index) textHash(d *Doc) uint64 {
	var h maphash.Hash
	h.SetSeed(ix.seed)
	part := func(s string) {
		var n [8]byte
		for i, l := 0, uint64(len(s)); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.WriteString(s)
	}
	part(d.Title)
	part(d.Content)
	for _, t := range d.Tags {
		part(t)
	}
	return h.Sum64()
}

// Delete removes the document entirely. Unknown ids are ignored.
func (ix *Index) Delete(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if s, ok := ix.slotOf(id); ok {
		ix.dropSlot(id)
		ix.kill(s)
		ix.maybeCompact()
	}
}

// kill retires slot s: its postings stay until compaction but are skipped.
func (ix *Index) kill(s uint32) {
	sl := &ix.slots[s]
	ix.dead[s/64] |= 1 << (s % 64)
	ix.ndead++
	ix.deaths++
	ix.live--
	ix.totalLen -= uint64(ix.dls[s])
	pos, found := ix.orderPos(sl.created, ix.ids.str(sl.id))
	if found {
		ix.order = slices.Delete(ix.order, pos, pos+1)
	}
	if sl.topic != 0 {
		ix.dropTopic(topicMapKey(sl.ns, sl.topic), s)
	}
	ix.listWaste += int(sl.tags.n) + int(sl.blocked.n)
	sl.tags, sl.blocked = listRef{}, listRef{}
}

// setFlagged sets slot s's bit in flagged from its catalog entry.
func (ix *Index) setFlagged(s uint32) {
	if ix.slots[s].flags != 0 {
		ix.flagged[s/64] |= 1 << (s % 64)
	} else {
		ix.flagged[s/64] &^= 1 << (s % 64)
	}
}

func (ix *Index) isDead(s uint32) bool { return ix.dead[s/64]&(1<<(s%64)) != 0 }

func topicMapKey(ns, topic uint32) uint64 { return uint64(ns)<<32 | uint64(topic) }

// cmpKey orders documents by (created, id).
func cmpKey(ac int64, aid string, bc int64, bid string) int {
	if c := cmp.Compare(ac, bc); c != 0 {
		return c
	}
	return cmp.Compare(aid, bid)
}

// orderPos finds the position of (created, id) in order.
func (ix *Index) orderPos(created int64, id string) (int, bool) {
	return slices.BinarySearchFunc(ix.order, struct {
		c  int64
		id string
	}{created, id}, func(s uint32, k struct {
		c  int64
		id string
	}) int {
		sl := &ix.slots[s]
		return cmpKey(sl.created, ix.ids.str(sl.id), k.c, k.id)
	})
}

func (ix *Index) insertOrder(s uint32) {
	sl := &ix.slots[s]
	if n := len(ix.order); n == 0 {
		ix.order = append(ix.order, s)
		return
	} else if last := &ix.slots[ix.order[n-1]]; cmpKey(last.created, ix.ids.str(last.id), sl.created, ix.ids.str(sl.id)) < 0 {
		ix.order = append(ix.order, s) // the usual case: arrivals in time order
		return
	}
	pos, _ := ix.orderPos(sl.created, ix.ids.str(sl.id))
	ix.order = slices.Insert(ix.order, pos, s)
}

// Meta returns the catalog entry of id.
func (ix *Index) Meta(id string) (Meta, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s, ok := ix.slotOf(id)
	if !ok {
		return Meta{}, false
	}
	return ix.meta(s), true
}

// Namespace returns the namespace of the document id: Meta's, without
// the rest of the catalog entry.
func (ix *Index) Namespace(id string) (string, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s, ok := ix.slotOf(id)
	if !ok {
		return "", false
	}
	return ix.f.ns.str(ix.slots[s].ns), true
}

func (ix *Index) meta(s uint32) Meta {
	sl := &ix.slots[s]
	m := Meta{
		ID:          ix.ids.out(sl.id),
		Namespace:   ix.f.ns.str(sl.ns),
		Type:        ix.f.typ.str(sl.typ),
		Project:     ix.f.project.str(sl.project),
		Scope:       ix.f.scope.str(sl.scope),
		SubjectType: ix.f.subjType.str(sl.subjType),
		SubjectID:   ix.f.subjID.str(sl.subjID),
		SessionID:   ix.f.session.str(sl.session),
		Channel:     ix.f.channel.str(sl.channel),
		TopicKey:    ix.f.topic.str(sl.topic),
		CreatedAt:   sl.created,
		UpdatedAt:   sl.updated,
		Deleted:     sl.flags&flagDeleted != 0,
		Hidden:      sl.flags&flagHidden != 0,
	}
	for _, ch := range sl.blocked.of(ix.lists) {
		m.Blocked = append(m.Blocked, ix.f.channel.str(ch))
	}
	if sl.tags.n > 0 {
		m.Tags = make([]string, sl.tags.n)
		for i, t := range sl.tags.of(ix.lists) {
			m.Tags[i] = ix.f.tag.str(t)
		}
	}
	return m
}

// ByTopicKey returns the id of the live, not soft-deleted document with
// topicKey in namespace (hidden documents count). Should several exist, the
// newest by (CreatedAt, ID) wins. The cost is two map lookups.
func (ix *Index) ByTopicKey(namespace, topicKey string) (string, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ns, ok1 := ix.f.ns.lookup(namespace)
	tk, ok2 := ix.f.topic.lookup(topicKey)
	if !ok1 || !ok2 || tk == 0 {
		return "", false
	}
	var best *slot
	for _, s := range ix.topics[topicMapKey(ns, tk)] {
		sl := &ix.slots[s]
		if sl.flags&flagDeleted != 0 {
			continue
		}
		if best == nil || cmpKey(sl.created, ix.ids.str(sl.id), best.created, ix.ids.str(best.id)) > 0 {
			best = sl
		}
	}
	if best == nil {
		return "", false
	}
	return ix.ids.out(best.id), true
}
