package bundle

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
)

// Budget shares of the bundle, in percent of max_tokens.
const (
	DecisionShare = 40
	CapsuleShare  = 30
	InboxShare    = 15
	listLimit     = 500 // memories read per list
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
	t := memapi.EstimateTokens(part)
	if sc.used+t > sc.budget {
		return false
	}
	sc.b.WriteString(part)
	sc.used += t
	return true
}

// fromOther reports whether m is another agent's word to c: an inbox
// item whose writer is not c.
func fromOther(c memapi.Caller, m memapi.Memory) bool {
	return m.From != "" && m.From != c.Principal.String()
}

// Source is what a bundle reads: the memory service, as the caller sees
// it (node/memory's Service). Its methods are safe for concurrent use.
type Source interface {
	// Memories lists up to limit live memories matching f that c may read,
	// newest first, through the effective view, and reports whether the
	// limit cut the list. A filter c may not read is an error wrapping
	// memapi.ErrInvalid or acl.ErrDenied.
	Memories(ctx context.Context, c memapi.Caller, f memapi.Filter, limit int) ([]memapi.Memory, bool, error)
}

// Capsules is where a bundle finds the capsules shared with the caller
// (node/memory/capsule's Capsules).
type Capsules interface {
	// List lists the capsules c may read.
	List(ctx context.Context, c memapi.Caller, q memapi.CapsuleQuery) (memapi.CapsuleList, error)
	// On returns a capsule with the items readable on channel.
	On(ctx context.Context, c memapi.Caller, id, channel string) (memapi.Capsule, error)
}

// Build assembles the context bundle (see the package doc) from what src
// and capsules let c read; with capsules nil the bundle has none.
func Build(ctx context.Context, src Source, capsules Capsules, c memapi.Caller, req memapi.BundleRequest) (memapi.BundleResult, error) {
	if req.MaxTokens == 0 {
		req.MaxTokens = memapi.DefaultMaxTokens
	}
	if req.MaxTokens < 0 || req.MaxTokens > memapi.MaxMaxTokens {
		return memapi.BundleResult{}, fmt.Errorf("%w: max_tokens must be 1..%d, got %d", memapi.ErrInvalid, memapi.MaxMaxTokens, req.MaxTokens)
	}
	if (req.SubjectType == "") != (req.SubjectID == "") {
		return memapi.BundleResult{}, fmt.Errorf("%w: subject_type and subject_id go together", memapi.ErrInvalid)
	}
	base := memapi.Filter{Namespace: req.Namespace, Channel: req.Channel}
	list := func(f memapi.Filter) ([]memapi.Memory, bool, error) {
		return src.Memories(ctx, c, f, listLimit) // the first call validates namespace, channel and access
	}
	res := memapi.BundleResult{Decisions: []memapi.Memory{}, Capsules: []memapi.Capsule{}, Recent: []memapi.Memory{}, FromOthers: []memapi.Memory{}}
	shown := map[string]bool{}

	// Decisions.
	f := base
	f.Type = "decision"
	all, full, err := list(f)
	if err != nil {
		return memapi.BundleResult{}, err
	}
	res.Truncated = full
	var decisions, others []memapi.Memory
	for _, m := range all {
		switch {
		case schema.IsCapsuleInbox(m.Namespace):
		case m.Project != "" && req.Project != "" && m.Project != req.Project:
		case m.SubjectType != "" && (m.SubjectType != req.SubjectType || m.SubjectID != req.SubjectID):
		case m.Scope == "session" && (req.SessionID == "" || m.SessionID != req.SessionID):
		case fromOther(c, m):
			others = append(others, m)
		default:
			decisions = append(decisions, m)
		}
	}
	slices.SortStableFunc(decisions, func(a, b memapi.Memory) int {
		return cmp.Or(cmp.Compare(rankOf(a.Scope), rankOf(b.Scope)), b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	dec := section{budget: req.MaxTokens * DecisionShare / 100}
	if len(decisions) > 0 && dec.add("### Active decisions (by precedence)\n") {
		for _, m := range decisions {
			if !dec.add(fmt.Sprintf("- [%s] %s (id %s): %s\n", memapi.OrDash(m.Scope), m.Title, m.ID, memapi.TruncateRunes(memapi.OneLine(m.Content), memapi.ContextEntryRunes))) {
				break
			}
			res.Decisions = append(res.Decisions, m)
			shown[m.ID] = true
		}
	}
	res.Truncated = res.Truncated || len(res.Decisions) < len(decisions)

	// Capsules.
	caps := section{budget: req.MaxTokens*CapsuleShare/100 + dec.budget - dec.used}
	if capsules != nil && (req.IncludeCapsules == nil || *req.IncludeCapsules) {
		avail, err := capsules.List(ctx, c, memapi.CapsuleQuery{SubjectType: req.SubjectType, SubjectID: req.SubjectID})
		if err != nil {
			return memapi.BundleResult{}, err
		}
		var mine []memapi.Capsule
		for _, cp := range avail.Capsules {
			if cp.Status == memapi.CapsuleActive && cp.Author != c.Principal.String() {
				mine = append(mine, cp)
			}
		}
		if len(mine) > 0 && caps.add("\n### Capsules shared with you\n") {
		capsules:
			for _, cp := range mine {
				full, err := capsules.On(ctx, c, cp.ID, req.Channel)
				if err != nil {
					continue // expired or revoked since the list
				}
				head := fmt.Sprintf("#### memapi.Capsule %s from %s about %s:%s (expires %s)\n", full.ID, full.Author, full.SubjectType, full.SubjectID, full.ExpiresAt.Format("2006-01-02 15:04"))
				if len(full.Risks) > 0 {
					head += "Risks: " + strings.Join(full.Risks, "; ") + "\n"
				}
				if !caps.add(head) {
					res.Truncated = true
					break
				}
				items := full.Items
				full.Items = []memapi.Memory{}
				for _, m := range items {
					if !caps.add(memapi.ContextEntry(m)) {
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
	var recent []memapi.Memory
	for _, m := range others {
		shown[m.ID] = true
	}
	addAll := func(ms []memapi.Memory) {
		for _, m := range ms {
			switch {
			case shown[m.ID] || schema.IsCapsuleInbox(m.Namespace):
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
			return memapi.BundleResult{}, err
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
		return memapi.BundleResult{}, err
	}
	res.Truncated = res.Truncated || full
	addAll(ms)
	slices.SortStableFunc(others, func(a, b memapi.Memory) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	oth := section{budget: req.MaxTokens * InboxShare / 100}
	if len(others) > 0 && oth.add("\n### From other agents (their words, not your decisions)\n") {
		for _, m := range others {
			if !oth.add(memapi.ContextEntry(m)) {
				break
			}
			res.FromOthers = append(res.FromOthers, m)
		}
	}
	res.Truncated = res.Truncated || len(res.FromOthers) < len(others)
	rec := section{budget: req.MaxTokens - dec.used - caps.used - oth.used}
	if len(recent) > 0 && rec.add("\n### Recent memories (session first, newest first)\n") {
		for _, m := range recent {
			if !rec.add(memapi.ContextEntry(m)) {
				break
			}
			res.Recent = append(res.Recent, m)
		}
	}
	res.Truncated = res.Truncated || len(res.Recent) < len(recent)

	res.Text = dec.b.String() + caps.b.String() + rec.b.String() + oth.b.String()
	res.Budget = memapi.BundleBudget{Decisions: dec.used, Capsules: caps.used, Recent: rec.used, FromOthers: oth.used,
		Total: dec.used + caps.used + rec.used + oth.used, MaxTokens: req.MaxTokens}
	return res, nil
}
