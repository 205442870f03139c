package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// The defaults and bounds of the read operations are memapi's (api.go).
const (
	snippetRunes = 100
)

// indexFilter turns a Filter into the index's filter, scoped to what the
// caller may read.
func (s *Service) indexFilter(c Caller, f Filter) (search.Filter, error) {
	sf, err := s.readScope(c, f.Namespace)
	if err != nil {
		return sf, err
	}
	if f.Type != "" {
		sf.Types = []string{f.Type}
	}
	if f.Scope != "" {
		if err := oneOf("scope", f.Scope, scopes); err != nil {
			return sf, err
		}
	}
	if f.Channel != "" {
		if err := oneOf("channel", f.Channel, channels); err != nil {
			return sf, err
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return sf, invalid("until (%s) is before since (%s)", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	sf.Tags = f.Tags
	sf.Project, sf.Scope, sf.SubjectType, sf.SubjectID = f.Project, f.Scope, f.SubjectType, f.SubjectID
	sf.SessionID, sf.Channel = f.SessionID, f.Channel
	sf.IncludeHidden = f.IncludeQuarantined
	if !f.Since.IsZero() {
		sf.Since = f.Since.UnixNano()
	}
	if !f.Until.IsZero() {
		sf.Until = f.Until.UnixNano()
	}
	return sf, nil
}

// Memories lists up to limit live memories matching f that c may read,
// newest first, through the effective view, and reports whether the limit
// cut the list (the context bundle's bundle.Source).
func (s *Service) Memories(ctx context.Context, c Caller, f Filter, limit int) ([]Memory, bool, error) {
	sf, err := s.indexFilter(c, f)
	if err != nil {
		return nil, false, err
	}
	metas := s.ix.List(sf, true, limit)
	return s.load(metaIDs(metas)), limit > 0 && len(metas) == limit, nil
}

// load reads memories for index metas or hits, skipping any that vanished
// between the index read and the store read.
func (s *Service) load(ids []string) []Memory {
	out := make([]Memory, 0, len(ids))
	s.loadEach(ids, func(_ int, m Memory) { out = append(out, m) })
	return out
}

// loadEach calls fn, in order, with each memory of ids that is still there
// and not retracted and its index in ids. The records are read in one
// store transaction.
func (s *Service) loadEach(ids []string, fn func(i int, m Memory)) {
	keys := make([]store.RecordKey, 0, len(ids))
	at := make([]int, 0, len(ids)) // at[j]: the index in ids of keys[j]
	for i, id := range ids {
		if ns, ok := s.ix.Namespace(id); ok {
			keys = append(keys, store.RecordKey{Namespace: ns, ID: id})
			at = append(at, i)
		}
	}
	// A record that cannot be read is skipped. rec is lent for the call:
	// the view copies what the memory keeps.
	_ = s.st.EachRecordView(keys, func(j int, rec *crdt.Record) {
		if rec == nil || rec.Empty() {
			return
		}
		m, fl := s.view(keys[j].Namespace, keys[j].ID, rec)
		if !fl.Retracted {
			fn(at[j], m)
		}
	})
}

// lexicalSearch is the BM25 ranking of q, with pseudo-relevance feedback
// (search/feedback.go) when q asks for it: the best first hits refine the
// ranking of the same matches. The first hit stays first: feedback takes
// it as relevant, and moving it lost hit@1 on LoCoMo.
func (s *Service) lexicalSearch(q SearchQuery, sf search.Filter) ([]search.Hit, int) {
	limit := q.Limit
	if q.Feedback {
		limit = max(limit, search.FeedbackDocs)
	}
	hits, total := s.ix.Search(q.Query, sf, limit)
	if q.Feedback && len(hits) > 1 {
		fb := make([]search.FeedbackDoc, 0, search.FeedbackDocs)
		for _, h := range hits[:min(len(hits), search.FeedbackDocs)] {
			if ms := s.load([]string{h.ID}); len(ms) == 1 {
				fb = append(fb, search.FeedbackDoc{Score: h.Score, Text: ms[0].Title + "\n" + ms[0].Content + "\n" + strings.Join(ms[0].Tags, "\n")})
			}
		}
		if exp := search.Expand(fb); exp != nil {
			first := hits[0]
			hits, _ = s.ix.SearchExpanded(q.Query, exp, sf, q.Limit+1)
			hits = slices.DeleteFunc(hits, func(h search.Hit) bool { return h.ID == first.ID })
			hits = append([]search.Hit{first}, hits...)
		}
	}
	return hits[:min(len(hits), q.Limit)], total
}

// Search ranks memories by BM25 over title, content and tags, fused with
// a second ranking when a feature offers one (Ranker: hybrid search), in
// which case scores are the fused ones and Total counts at least the
// results; otherwise refined on request by pseudo-relevance feedback from
// the best few (feedback is not applied to a fused ranking).
func (s *Service) Search(ctx context.Context, c Caller, q SearchQuery) (_ SearchResult, err error) {
	if s.cfg.Timed != nil {
		defer s.timed(OpSearch, time.Now(), &err)
	}
	if strings.TrimSpace(q.Query) == "" {
		return SearchResult{}, invalid("q (the search text) is required")
	}
	if len(q.Query) > 1024 {
		return SearchResult{}, invalid("q is %d bytes (max 1024)", len(q.Query))
	}
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Limit < 0 || q.Limit > MaxSearchLimit {
		return SearchResult{}, invalid("limit must be 1..%d, got %d", MaxSearchLimit, q.Limit)
	}
	sf, err := s.indexFilter(c, q.Filter)
	if err != nil {
		return SearchResult{}, err
	}
	sf.IncludeDeleted = q.IncludeDeleted
	hits, total, fused := s.hybridSearch(ctx, q.Query, sf, q.Limit) // fusion.go
	if !fused {
		hits, total = s.lexicalSearch(q, sf)
	}
	res := SearchResult{Results: make([]SearchHit, 0, len(hits)), Total: total}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	s.loadEach(ids, func(i int, m Memory) {
		res.Results = append(res.Results, SearchHit{Memory: m, Score: hits[i].Score})
	})
	return res, nil
}

func metaIDs(ms []search.Meta) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// Timeline returns the memories just before and after one memory, oldest first.
func (s *Service) Timeline(ctx context.Context, c Caller, q TimelineQuery) (Timeline, error) {
	if q.ID == "" {
		return Timeline{}, invalid("id is required")
	}
	for _, v := range []struct {
		name string
		n    *int
	}{{"before", &q.Before}, {"after", &q.After}} {
		if *v.n == 0 {
			*v.n = DefaultAround
		}
		if *v.n < 0 || *v.n > MaxAround {
			return Timeline{}, invalid("%s must be 0..%d, got %d", v.name, MaxAround, *v.n)
		}
	}
	center, err := s.Get(ctx, c, q.ID, false)
	if err != nil {
		return Timeline{}, err
	}
	sf, err := s.indexFilter(c, q.Filter)
	if err != nil {
		return Timeline{}, err
	}
	_, older, newer, ok := s.ix.Around(q.ID, sf, q.Before, q.After)
	if !ok {
		return Timeline{}, fmt.Errorf("%w: memory %q", ErrNotFound, q.ID)
	}
	return Timeline{Center: center, Before: s.load(metaIDs(older)), After: s.load(metaIDs(newer))}, nil
}

// Context formats recent memories and sessions for an agent's prompt, newest
// first, within MaxTokens. A memory another agent wrote into the caller's
// inbox is marked "[from agent://WRITER]" (see bundle.go).
func (s *Service) Context(ctx context.Context, c Caller, q ContextQuery) (ContextResult, error) {
	if q.MaxTokens == 0 {
		q.MaxTokens = DefaultMaxTokens
	}
	if q.MaxTokens < 0 || q.MaxTokens > MaxMaxTokens {
		return ContextResult{}, invalid("max_tokens must be 1..%d, got %d", MaxMaxTokens, q.MaxTokens)
	}
	sf, err := s.indexFilter(c, q.Filter)
	if err != nil {
		return ContextResult{}, err
	}
	res := ContextResult{MaxTokens: q.MaxTokens, Memories: []Memory{}, Sessions: []Session{}}
	var b strings.Builder
	used := 0
	// add writes part if it fits in the budget. Every part, headings
	// included, is checked: a small max_tokens must never be exceeded.
	add := func(part string) bool {
		if used+memapi.EstimateTokens(part) > q.MaxTokens {
			return false
		}
		b.WriteString(part)
		used += memapi.EstimateTokens(part)
		return true
	}
	sessions := s.readableSessions(sf)
	if len(sessions) > 5 {
		sessions = sessions[:5]
	}
	metas := s.ix.List(sf, true, 500)
	memories := s.load(metaIDs(metas))
	if add("## Memory context\n") && len(sessions) > 0 && add("\n### Recent sessions\n") {
		for _, ss := range sessions {
			line := fmt.Sprintf("- %s (%s, started %s)", ss.ID, memapi.OrDash(ss.Project), ss.StartedAt.Format("2006-01-02 15:04"))
			if ss.Summary != "" {
				line += ": " + memapi.TruncateRunes(memapi.OneLine(ss.Summary), 200)
			}
			if !add(line + "\n") {
				break
			}
			res.Sessions = append(res.Sessions, ss)
		}
	}
	if used > 0 && add("\n### Memories (newest first)\n") {
		for _, m := range memories {
			if !add(memapi.ContextEntry(m)) {
				break
			}
			res.Memories = append(res.Memories, m)
		}
	}
	// Truncated reports eligible content left out, not a heading that did
	// not fit when there was nothing to put under it.
	res.Truncated = len(res.Sessions) < len(sessions) || len(res.Memories) < len(memories) || len(metas) == 500
	res.Text = b.String()
	res.TokensUsed = used
	return res, nil
}

// Compact identifies stale memories, or soft-deletes chosen ones and writes
// their summary, all or nothing.
func (s *Service) Compact(ctx context.Context, c Caller, req CompactRequest) (CompactResult, error) {
	if req.CompactIDs == nil {
		return s.compactIdentify(c, req)
	}
	return s.compactExecute(c, req)
}

func (s *Service) compactFilter(c Caller, req CompactRequest) (search.Filter, error) {
	if req.Scope != "" {
		if err := oneOf("scope", req.Scope, scopes); err != nil {
			return search.Filter{}, err
		}
	}
	return s.indexFilter(c, Filter{Namespace: req.Namespace, Project: req.Project, Scope: req.Scope})
}

var ageBuckets = []struct {
	label string
	days  int // upper bound, exclusive
}{{"<7d", 7}, {"7-30d", 30}, {"30-90d", 90}, {"90-365d", 365}, {">=365d", 1 << 30}}

func (s *Service) compactIdentify(c Caller, req CompactRequest) (CompactResult, error) {
	if req.OlderThanDays <= 0 {
		return CompactResult{}, invalid("older_than_days must be greater than 0 in identify mode, got %d", req.OlderThanDays)
	}
	if req.Limit == 0 {
		req.Limit = DefaultCompactLimit
	}
	if req.Limit < 0 || req.Limit > MaxCompactLimit {
		return CompactResult{}, invalid("limit must be 1..%d, got %d", MaxCompactLimit, req.Limit)
	}
	sf, err := s.compactFilter(c, req)
	if err != nil {
		return CompactResult{}, err
	}
	now := s.cfg.Now()
	total := s.ix.Count(sf)
	sf.Until = now.Add(-time.Duration(req.OlderThanDays) * 24 * time.Hour).UnixNano()
	stale := s.ix.List(sf, false, 0)
	res := CompactResult{Mode: "identify", Before: total, After: total, Candidates: []CompactCandidate{}}
	counts := make([]int, len(ageBuckets))
	for _, m := range stale {
		age := int(now.Sub(time.Unix(0, m.CreatedAt)).Hours() / 24)
		for i, b := range ageBuckets {
			if age < b.days {
				counts[i]++
				break
			}
		}
	}
	for i, b := range ageBuckets {
		if counts[i] > 0 {
			res.Histogram = append(res.Histogram, AgeBucket{Label: b.label, Count: counts[i]})
		}
	}
	if len(stale) > req.Limit {
		stale = stale[:req.Limit]
	}
	for _, m := range s.load(metaIDs(stale)) {
		res.Candidates = append(res.Candidates, CompactCandidate{
			ID: m.ID, Namespace: m.Namespace, Type: m.Type, Title: m.Title, Project: m.Project, Scope: m.Scope,
			CreatedAt: m.CreatedAt, AgeDays: int(now.Sub(m.CreatedAt).Hours() / 24),
			Snippet: memapi.TruncateRunes(memapi.OneLine(m.Content), snippetRunes),
		})
	}
	return res, nil
}

func (s *Service) compactExecute(c Caller, req CompactRequest) (CompactResult, error) {
	if len(req.CompactIDs) == 0 {
		return CompactResult{}, invalid("compact_ids is empty: pass the ids to compact, or omit it to identify candidates")
	}
	if len(req.CompactIDs) > MaxCompactLimit {
		return CompactResult{}, invalid("at most %d compact_ids, got %d", MaxCompactLimit, len(req.CompactIDs))
	}
	if strings.TrimSpace(req.SummaryContent) != "" && strings.TrimSpace(req.SummaryTitle) == "" {
		return CompactResult{}, invalid("summary_content needs a summary_title")
	}
	if strings.TrimSpace(req.SummaryTitle) != "" && strings.TrimSpace(req.SummaryContent) == "" {
		return CompactResult{}, invalid("summary_title needs a summary_content")
	}
	sf, err := s.compactFilter(c, req)
	if err != nil {
		return CompactResult{}, err
	}
	type target struct {
		ns    namespace.Address
		id    string
		scope string
	}
	var targets []target
	var unknown, deleted []string
	seen := map[string]bool{}
	for _, id := range req.CompactIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		ns, rec, err := s.locate(c, id, true)
		if err != nil {
			unknown = append(unknown, id)
			continue
		}
		if !schema.Time(rec, schema.FieldDeletedAt).IsZero() {
			deleted = append(deleted, id)
			continue
		}
		if err := s.auth.CheckWrite(c.Principal, ns); err != nil {
			return CompactResult{}, err
		}
		targets = append(targets, target{ns, id, schema.Str(rec, schema.FieldScope)})
	}
	if len(unknown) > 0 {
		return CompactResult{}, invalid("unknown compact_ids: %s", strings.Join(unknown, ", "))
	}
	if len(deleted) > 0 {
		return CompactResult{}, invalid("already deleted, cannot compact: %s", strings.Join(deleted, ", "))
	}
	before := s.ix.Count(sf)
	res := CompactResult{Mode: "execute", Before: before}
	err = s.write(func(tx *store.Tx) error {
		for _, t := range targets {
			if err := s.softDeleteTx(tx, t.ns, t.id); err != nil {
				return err
			}
		}
		if strings.TrimSpace(req.SummaryContent) == "" {
			return nil
		}
		scope, home := targets[0].scope, targets[0].ns
		var prov []string
		for _, t := range targets {
			if t.scope != scope {
				scope = DefaultScope
			}
			if t.ns != home {
				home = c.Principal
			}
			prov = append(prov, "source:"+t.id)
		}
		if scope == "" {
			scope = DefaultScope
		}
		if req.Namespace != "" {
			ns, err := s.resolveWrite(c, req.Namespace)
			if err != nil {
				return err
			}
			home = ns
		}
		if err := s.auth.CheckWrite(c.Principal, home); err != nil {
			return err
		}
		sessionID := req.SessionID
		if sessionID == "" {
			sessionID = "manual-save"
		}
		sum := SaveRequest{Type: "compaction_summary", Title: req.SummaryTitle, Content: req.SummaryContent,
			Scope: scope, Project: req.Project, SessionID: sessionID}
		p, err := normaliseSave(&sum)
		if err != nil {
			return err
		}
		p.provenance = append(prov, "author:"+c.Principal.String())
		slices.Sort(p.provenance)
		saved, err := s.saveTx(tx, c, home, sum, p)
		if err != nil {
			return err
		}
		res.SummaryID = saved.ID
		return nil
	})
	if err != nil {
		return CompactResult{}, err
	}
	res.Compacted = len(targets)
	res.After = s.ix.Count(sf)
	return res, nil
}

// Stats counts what the caller can read.
func (s *Service) Stats(ctx context.Context, c Caller, namespaceArg string) (Stats, error) {
	sf, err := s.readScope(c, namespaceArg)
	if err != nil {
		return Stats{}, err
	}
	sf.IncludeDeleted = true
	st := Stats{ByType: map[string]int{}, ByNamespace: map[string]int{}, Projects: []string{}}
	projects := map[string]bool{}
	for _, m := range s.ix.List(sf, false, 0) {
		if m.Deleted {
			st.Deleted++
			continue
		}
		st.Memories++
		st.ByType[m.Type]++
		st.ByNamespace[m.Namespace]++
		if m.Project != "" {
			projects[m.Project] = true
		}
		t := time.Unix(0, m.CreatedAt).UTC()
		if st.Oldest == nil {
			st.Oldest = &t
		}
		st.Newest = &t
	}
	for p := range projects {
		st.Projects = append(st.Projects, p)
	}
	slices.Sort(st.Projects)
	st.Sessions = len(s.readableSessions(sf))
	return st, nil
}

// GetFor is Get as the read API serves it: a memory quarantined (unless
// asked for) or blocked for the caller's channel is not found, with a
// message saying so. Service.Get itself shows quarantined memories
// (flagged): an id asked for by name is explicit retrieval.
func (s *Service) GetFor(ctx context.Context, c Caller, id string, o GetOptions) (Memory, error) {
	if o.Channel != "" {
		if err := oneOf("channel", o.Channel, channels); err != nil {
			return Memory{}, err
		}
	}
	m, err := s.Get(ctx, c, id, o.IncludeDeleted)
	if err != nil {
		return m, err
	}
	if m.Quarantined && !o.IncludeQuarantined {
		return Memory{}, fmt.Errorf("%w: memory %q is quarantined (include_quarantined=true shows it)", ErrNotFound, id)
	}
	if o.Channel != "" && slices.Contains(m.BlockedChannels, o.Channel) {
		return Memory{}, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	return m, nil
}

// locate finds a memory by id among the namespaces the caller may read.
func (s *Service) locate(c Caller, id string, includeDeleted bool) (namespace.Address, *crdt.Record, error) {
	return s.locateWith(c, id, includeDeleted, s.st.Record)
}

// locateView is locate for a read that only shows the memory: the record
// is a view (store.RecordView), without its seals.
func (s *Service) locateView(c Caller, id string, includeDeleted bool) (namespace.Address, *crdt.Record, error) {
	return s.locateWith(c, id, includeDeleted, s.st.RecordView)
}

func (s *Service) locateWith(c Caller, id string, includeDeleted bool, read func(ns, id string) (*crdt.Record, error)) (namespace.Address, *crdt.Record, error) {
	meta, ok := s.ix.Meta(id)
	if !ok {
		return namespace.Address{}, nil, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	ns, err := namespace.Parse(meta.Namespace)
	if err != nil {
		return ns, nil, err
	}
	if err := s.auth.CheckRead(c.Principal, ns); err != nil {
		// Do not reveal that the id exists elsewhere.
		return ns, nil, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	if !s.visible(id, s.cfg.Now()) {
		return ns, nil, fmt.Errorf("%w: memory %q (its capsule expired or was revoked)", ErrNotFound, id)
	}
	if meta.Deleted && !includeDeleted {
		return ns, nil, fmt.Errorf("%w: memory %q is deleted (include_deleted=true shows it)", ErrNotFound, id)
	}
	rec, err := read(ns.String(), id)
	if err != nil {
		return ns, nil, err
	}
	if rec.Empty() {
		return ns, nil, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	return ns, rec, nil
}
