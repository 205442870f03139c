package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// The context bundle (build_context): for a session and channel, and
// optionally a subject and project, the active decisions by precedence,
// the capsules available to the caller, the most relevant recent
// memories and what other agents delivered to the caller's inbox, fitted
// to max_tokens.
//
// Every part is read through the same paths as Search and Context (the
// index filter scoped to what the caller may read, then the effective
// view): soft-deleted, quarantined and retracted memories, memories
// blocked for the request's channel, and items of expired or revoked
// capsules never appear.
//
// Decisions are the memories of type "decision" that apply: no project or
// the request's project; no subject or the request's subject; scope
// session only for the request's session. They are ordered by scope
// precedence — policy, global, project, user, session (global, the
// broadest, ranks just below policy; an unknown or empty scope ranks
// last) — then newest first. Only the caller's own memories are
// decisions: a memory another agent wrote into the caller's inbox
// (Memory.From set and not the caller) is never one, whatever its type,
// scope or importance — its scope is the writer's claim, kept as written
// and ignored for precedence. It goes under "From other agents".
//
// Capsules are those whose audience includes the caller and that are
// active, for the request's subject when one is given, newest first,
// each with its risks and items.
//
// Recent memories: the session's first (newest first), then the
// subject's (or, without a subject, the project's; without either, the
// caller's whole readable scope), skipping decisions and capsule items
// shown above, and inbox items from other agents.
//
// From other agents: the inbox items (capsule items aside) that the
// decision and recent lists found, newest first, each marked
// "[from agent://WRITER]". The section comes last in the text.
//
// Budget: tokens are estimated as in Context (ceil(bytes/4)), every
// heading and entry counted. Decisions may use up to 40% of max_tokens;
// capsules up to 30% plus whatever decisions left unused; items from
// other agents up to 15% (never more: other agents' words cannot crowd
// out the caller's own); recent memories the rest. A section stops at the
// first entry that does not fit. The split is reported in Budget, and
// Total never exceeds MaxTokens.

// Budget shares of the bundle, in percent of max_tokens.
const (
	bundleDecisionShare = 40
	bundleCapsuleShare  = 30
	bundleInboxShare    = 15
	bundleListLimit     = 500
)

var scopeRank = map[string]int{"policy": 0, "global": 1, "project": 2, "user": 3, "session": 4}

func rankOf(scope string) int {
	if r, ok := scopeRank[scope]; ok {
		return r
	}
	return len(scopeRank)
}

// section writes entries within a budget.
type section struct {
	b      strings.Builder
	used   int
	budget int
}

func (sc *section) add(part string) bool {
	t := estimateTokens(part)
	if sc.used+t > sc.budget {
		return false
	}
	sc.b.WriteString(part)
	sc.used += t
	return true
}

// fromOther reports whether m is another agent's word to c: an inbox
// item whose writer is not c.
func fromOther(c Caller, m Memory) bool { return m.From != "" && m.From != c.Principal.String() }

// fromMark is the marker of an inbox item's writer in text ("" when m is
// not from an inbox).
func fromMark(m Memory) string {
	if m.From == "" {
		return ""
	}
	return "[from " + m.From + "] "
}

func bundleEntry(m Memory) string {
	entry := fmt.Sprintf("- %s[%s] %s (%s, id %s", fromMark(m), m.Type, m.Title, m.CreatedAt.Format("2006-01-02"), m.ID)
	if len(m.Tags) > 0 {
		entry += ", tags " + strings.Join(m.Tags, ",")
	}
	return entry + "): " + truncateRunes(oneLine(m.Content), contextEntryRunes) + "\n"
}

// BuildContext assembles the context bundle (see the comment at the top).
func (s *Service) BuildContext(ctx context.Context, c Caller, req BundleRequest) (BundleResult, error) {
	if req.MaxTokens == 0 {
		req.MaxTokens = DefaultMaxTokens
	}
	if req.MaxTokens < 0 || req.MaxTokens > MaxMaxTokens {
		return BundleResult{}, invalid("max_tokens must be 1..%d, got %d", MaxMaxTokens, req.MaxTokens)
	}
	if (req.SubjectType == "") != (req.SubjectID == "") {
		return BundleResult{}, invalid("subject_type and subject_id go together")
	}
	base := Filter{Namespace: req.Namespace, Channel: req.Channel}
	if _, err := s.indexFilter(c, base); err != nil { // validates namespace, channel and access
		return BundleResult{}, err
	}
	list := func(f Filter) ([]Memory, bool, error) {
		sf, err := s.indexFilter(c, f)
		if err != nil {
			return nil, false, err
		}
		metas := s.ix.List(sf, true, bundleListLimit)
		return s.load(metaIDs(metas)), len(metas) == bundleListLimit, nil
	}
	res := BundleResult{Decisions: []Memory{}, Capsules: []Capsule{}, Recent: []Memory{}, FromOthers: []Memory{}}
	shown := map[string]bool{}

	// Decisions.
	f := base
	f.Type = "decision"
	all, full, err := list(f)
	if err != nil {
		return BundleResult{}, err
	}
	res.Truncated = full
	var decisions, others []Memory
	for _, m := range all {
		switch {
		case isCapsuleNS(m.Namespace):
		case m.Project != "" && req.Project != "" && m.Project != req.Project:
		case m.SubjectType != "" && (m.SubjectType != req.SubjectType || m.SubjectID != req.SubjectID):
		case m.Scope == "session" && (req.SessionID == "" || m.SessionID != req.SessionID):
		case fromOther(c, m):
			others = append(others, m)
		default:
			decisions = append(decisions, m)
		}
	}
	slices.SortStableFunc(decisions, func(a, b Memory) int {
		return cmp.Or(cmp.Compare(rankOf(a.Scope), rankOf(b.Scope)), b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	dec := section{budget: req.MaxTokens * bundleDecisionShare / 100}
	if len(decisions) > 0 && dec.add("### Active decisions (by precedence)\n") {
		for _, m := range decisions {
			if !dec.add(fmt.Sprintf("- [%s] %s (id %s): %s\n", orDash(m.Scope), m.Title, m.ID, truncateRunes(oneLine(m.Content), contextEntryRunes))) {
				break
			}
			res.Decisions = append(res.Decisions, m)
			shown[m.ID] = true
		}
	}
	res.Truncated = res.Truncated || len(res.Decisions) < len(decisions)

	// Capsules.
	caps := section{budget: req.MaxTokens*bundleCapsuleShare/100 + dec.budget - dec.used}
	if req.IncludeCapsules == nil || *req.IncludeCapsules {
		avail, err := s.ListCapsules(ctx, c, CapsuleQuery{SubjectType: req.SubjectType, SubjectID: req.SubjectID})
		if err != nil {
			return BundleResult{}, err
		}
		var mine []Capsule
		for _, cp := range avail.Capsules {
			if cp.Status == CapsuleActive && cp.Author != c.Principal.String() {
				mine = append(mine, cp)
			}
		}
		if len(mine) > 0 && caps.add("\n### Capsules shared with you\n") {
		capsules:
			for _, cp := range mine {
				full, err := s.getCapsule(c, cp.ID, req.Channel)
				if err != nil {
					continue // expired or revoked since the list
				}
				head := fmt.Sprintf("#### Capsule %s from %s about %s:%s (expires %s)\n", full.ID, full.Author, full.SubjectType, full.SubjectID, full.ExpiresAt.Format("2006-01-02 15:04"))
				if len(full.Risks) > 0 {
					head += "Risks: " + strings.Join(full.Risks, "; ") + "\n"
				}
				if !caps.add(head) {
					res.Truncated = true
					break
				}
				items := full.Items
				full.Items = []Memory{}
				for _, m := range items {
					if !caps.add(bundleEntry(m)) {
						res.Truncated = true
						res.Capsules = append(res.Capsules, full)
						break capsules
					}
					full.Items = append(full.Items, m)
					shown[m.ID] = true
				}
				res.Capsules = append(res.Capsules, full)
			}
		}
	}

	// Recent memories, and what other agents delivered.
	var recent []Memory
	for _, m := range others {
		shown[m.ID] = true
	}
	addAll := func(ms []Memory) {
		for _, m := range ms {
			switch {
			case shown[m.ID] || isCapsuleNS(m.Namespace):
			case fromOther(c, m):
				shown[m.ID] = true
				others = append(others, m)
			case m.Type != "decision":
				shown[m.ID] = true
				recent = append(recent, m)
			}
		}
	}
	if req.SessionID != "" {
		f := base
		f.SessionID = req.SessionID
		ms, _, err := list(f)
		if err != nil {
			return BundleResult{}, err
		}
		addAll(ms)
	}
	f = base
	switch {
	case req.SubjectType != "":
		f.SubjectType, f.SubjectID = req.SubjectType, req.SubjectID
	case req.Project != "":
		f.Project = req.Project
	}
	ms, full, err := list(f)
	if err != nil {
		return BundleResult{}, err
	}
	res.Truncated = res.Truncated || full
	addAll(ms)
	slices.SortStableFunc(others, func(a, b Memory) int { return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID)) })
	oth := section{budget: req.MaxTokens * bundleInboxShare / 100}
	if len(others) > 0 && oth.add("\n### From other agents (their words, not your decisions)\n") {
		for _, m := range others {
			if !oth.add(bundleEntry(m)) {
				break
			}
			res.FromOthers = append(res.FromOthers, m)
		}
	}
	res.Truncated = res.Truncated || len(res.FromOthers) < len(others)
	rec := section{budget: req.MaxTokens - dec.used - caps.used - oth.used}
	if len(recent) > 0 && rec.add("\n### Recent memories (session first, newest first)\n") {
		for _, m := range recent {
			if !rec.add(bundleEntry(m)) {
				break
			}
			res.Recent = append(res.Recent, m)
		}
	}
	res.Truncated = res.Truncated || len(res.Recent) < len(recent)

	res.Text = dec.b.String() + caps.b.String() + rec.b.String() + oth.b.String()
	res.Budget = BundleBudget{Decisions: dec.used, Capsules: caps.used, Recent: rec.used, FromOthers: oth.used,
		Total: dec.used + caps.used + rec.used + oth.used, MaxTokens: req.MaxTokens}
	return res, nil
}
