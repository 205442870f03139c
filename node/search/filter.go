package search

import (
	"slices"
	"strings"
)

// Filter restricts Search, List and Around. The zero Filter matches every
// document that is neither soft-deleted nor hidden.
type Filter struct {
	// Namespaces matches any of these namespaces; empty matches all. With
	// Subtree, "agent://bob" also matches "agent://bob/x/y".
	Namespaces []string
	Subtree    bool
	// Types matches any of these types; empty matches all.
	Types []string
	// Tags: a document must carry all of these tags (exact values).
	Tags []string
	// Exact matches when non-empty. A document blocked for Channel (see
	// Doc.Blocked) does not match.
	Project, Scope, SubjectType, SubjectID, SessionID, Channel string
	// Since and Until bound CreatedAt, inclusive; 0 is unbounded.
	Since, Until int64
	// IncludeDeleted and IncludeHidden admit soft-deleted and hidden docs.
	IncludeDeleted, IncludeHidden bool
	// Accept, when set, is asked last about each otherwise matching doc.
	// It runs under the index's read lock and must not call the Index.
	Accept func(id string) bool
}

// anyID marks an exact field that is not constrained.
const anyID = ^uint32(0)

// matcher is a Filter translated into interned ids.
type matcher struct {
	ns, typ          []bool // indexed by id; nil = any
	tags             []uint32
	project, scope   uint32
	subjType, subjID uint32
	session, channel uint32
	since, until     int64
	exclude          uint8
	accept           func(string) bool
	lists            []uint32 // Index.lists and ids at compile time (the read lock is held)
	ids              *idArena
	// plain: nothing is asked of a document but its flags (exclude), so a
	// document without flags matches (Index.matches).
	plain bool
}

// compile translates f. It reports false when f can match no document,
// e.g. because it names a value no document carries.
func (ix *Index) compile(f *Filter) (matcher, bool) {
	m := matcher{since: f.Since, until: f.Until, accept: f.Accept, lists: ix.lists, ids: &ix.ids}
	if !f.IncludeDeleted {
		m.exclude |= flagDeleted
	}
	if !f.IncludeHidden {
		m.exclude |= flagHidden
	}
	if m.since != 0 && m.until != 0 && m.since > m.until {
		return m, false
	}
	ok := true
	if len(f.Namespaces) > 0 {
		m.ns, ok = setOf(&ix.f.ns, f.Namespaces, f.Subtree)
		if !ok {
			return m, false
		}
	}
	if len(f.Types) > 0 {
		if m.typ, ok = setOf(&ix.f.typ, f.Types, false); !ok {
			return m, false
		}
	}
	for _, t := range f.Tags {
		id, ok := ix.f.tag.lookup(t)
		if !ok {
			return m, false
		}
		m.tags = append(m.tags, id)
	}
	for _, e := range []struct {
		dst *uint32
		in  *interner
		v   string
	}{
		{&m.project, &ix.f.project, f.Project},
		{&m.scope, &ix.f.scope, f.Scope},
		{&m.subjType, &ix.f.subjType, f.SubjectType},
		{&m.subjID, &ix.f.subjID, f.SubjectID},
		{&m.session, &ix.f.session, f.SessionID},
		{&m.channel, &ix.f.channel, f.Channel},
	} {
		*e.dst = anyID
		if e.v == "" {
			continue
		}
		id, ok := e.in.lookup(e.v)
		if !ok {
			return m, false
		}
		*e.dst = id
	}
	// A set holding every namespace documents have asks nothing (the
	// node's owner reads every namespace: its searches are then plain).
	// Id 0, the empty namespace, is interned whether used or not.
	if m.ns != nil && !slices.Contains(m.ns[1:], false) && (m.ns[0] || !ix.emptyNS) {
		m.ns = nil
	}
	m.plain = m.ns == nil && m.typ == nil && len(m.tags) == 0 && m.since == 0 && m.until == 0 &&
		m.project == anyID && m.scope == anyID && m.subjType == anyID && m.subjID == anyID &&
		m.session == anyID && m.channel == anyID && m.accept == nil
	return m, true
}

// matches is m.match of slot s, without reading the slot's catalog entry
// when m is plain and s has no flags: a search without a filter asks about
// every match it counts (a thousand and more at 100k memories), and each
// entry read was a cache miss (matcher.match was 4.5% of a CPU profile of
// mnemo bench search).
func (ix *Index) matches(m *matcher, s uint32) bool {
	if m.plain && ix.flagged[s/64]&(1<<(s%64)) == 0 {
		return true
	}
	return m.match(&ix.slots[s])
}

// setOf returns a membership table over in's ids for want. With subtree,
// every interned value under a wanted prefix is included.
func setOf(in *interner, want []string, subtree bool) ([]bool, bool) {
	set := make([]bool, len(in.strs))
	any := false
	for _, w := range want {
		if id, ok := in.lookup(w); ok {
			set[id] = true
			any = true
		}
		if !subtree {
			continue
		}
		prefix := w
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		for id, s := range in.strs {
			if strings.HasPrefix(s, prefix) {
				set[id] = true
				any = true
			}
		}
	}
	return set, any
}

// match reports whether sl passes m. Accept is applied last.
func (m *matcher) match(sl *slot) bool {
	if sl.flags&m.exclude != 0 ||
		(m.ns != nil && !m.ns[sl.ns]) ||
		(m.typ != nil && !m.typ[sl.typ]) ||
		(m.since != 0 && sl.created < m.since) ||
		(m.until != 0 && sl.created > m.until) ||
		(m.project != anyID && sl.project != m.project) ||
		(m.scope != anyID && sl.scope != m.scope) ||
		(m.subjType != anyID && sl.subjType != m.subjType) ||
		(m.subjID != anyID && sl.subjID != m.subjID) ||
		(m.session != anyID && sl.session != m.session) ||
		(m.channel != anyID && (sl.channel != m.channel || slices.Contains(sl.blocked.of(m.lists), m.channel))) {
		return false
	}
	for _, t := range m.tags {
		found := false
		for _, have := range sl.tags.of(m.lists) {
			if have == t {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return m.accept == nil || m.accept(m.ids.str(sl.id))
}
