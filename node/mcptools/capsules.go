package mcptools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Capsuler is the part of Backend behind the capsule, context bundle and
// duplicates tools. Methods follow Backend's blocking and concurrency
// contract.
type Capsuler interface {
	CreateCapsule(ctx context.Context, req memapi.CapsuleRequest) (memapi.CapsuleCreated, error)
	Capsules(ctx context.Context, q memapi.CapsuleQuery) (memapi.CapsuleList, error)
	Capsule(ctx context.Context, id string) (memapi.Capsule, error)
	RevokeCapsule(ctx context.Context, id string) (memapi.Capsule, error)
	BuildContext(ctx context.Context, req memapi.BundleRequest) (memapi.BundleResult, error)
	Duplicates(ctx context.Context, q memapi.DuplicateQuery) (memapi.DuplicatesResult, error)
	MergeDuplicates(ctx context.Context, req memapi.MergeRequest) (memapi.MergeResult, error)
}

type capsuleCreateArgs struct {
	SubjectType string   `json:"subject_type" jsonschema:"What the capsule is about: user, project, customer, ..."`
	SubjectID   string   `json:"subject_id" jsonschema:"Which one, e.g. the user's id."`
	Project     string   `json:"project,omitempty" jsonschema:"Optional project."`
	Audience    []string `json:"audience" jsonschema:"Agents who may read it, e.g. [\"agent://bob\"]."`
	IDs         []string `json:"ids,omitempty" jsonschema:"Memory ids to include (or give query)."`
	Query       string   `json:"query,omitempty" jsonschema:"Search text choosing the memories (instead of ids)."`
	Limit       int      `json:"limit,omitempty" jsonschema:"With query: at most this many memories (default 10, max 100)."`
	TTLDays     int      `json:"ttl_days,omitempty" jsonschema:"Days until it expires (default 7, max 90)."`
	Risks       []string `json:"risks,omitempty" jsonschema:"Warnings the reader must know, e.g. an open complaint."`
}

type capsuleListArgs struct {
	SubjectType string `json:"subject_type,omitempty" jsonschema:"Only capsules about this subject type."`
	SubjectID   string `json:"subject_id,omitempty" jsonschema:"Only capsules about this subject id."`
}

type capsuleIDArgs struct {
	ID string `json:"capsule_id" jsonschema:"The capsule's id."`
}

type bundleArgs struct {
	SessionID       string `json:"session_id,omitempty" jsonschema:"Your current session id: its memories come first."`
	Channel         string `json:"channel,omitempty" jsonschema:"private, public, team or agent: memories blocked for it are left out."`
	SubjectType     string `json:"subject_type,omitempty" jsonschema:"Subject type of the conversation, e.g. user."`
	SubjectID       string `json:"subject_id,omitempty" jsonschema:"Subject id, e.g. the user's id."`
	Project         string `json:"project,omitempty" jsonschema:"Project name."`
	MaxTokens       int    `json:"max_tokens,omitempty" jsonschema:"Token budget (default 2000)."`
	IncludeCapsules *bool  `json:"include_capsules,omitempty" jsonschema:"Include capsules shared with you (default true)."`
}

type duplicatesArgs struct {
	Namespace string  `json:"namespace,omitempty" jsonschema:"Only pairs with a side in this namespace."`
	Threshold float64 `json:"threshold,omitempty" jsonschema:"MinHash similarity threshold, default 0.8."`
}

type mergeArgs struct {
	IDs       []string `json:"ids" jsonschema:"The duplicate memory ids; the first one in namespace survives."`
	Namespace string   `json:"namespace" jsonschema:"The shared namespace to merge in (you need write there)."`
}

func capsuleText(c memapi.Capsule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Capsule %s (%s) from %s about %s:%s, expires %s, %d item(s)\n", c.ID, c.Status, c.Author, c.SubjectType, c.SubjectID, day(c.ExpiresAt), c.ItemCount)
	for _, r := range c.Risks {
		fmt.Fprintf(&b, "  risk: %s\n", r)
	}
	for _, m := range c.Items {
		fmt.Fprintf(&b, "  - [%s] %s (id %s): %s\n", m.Type, m.Title, m.ID, snippet(m.Content))
	}
	return b.String()
}

// registerCapsuleTools adds the capsule, bundle and duplicates tools.
func registerCapsuleTools(s *mcp.Server, cp Capsuler) {
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolp(false)}
	write := &mcp.ToolAnnotations{DestructiveHint: boolp(false), OpenWorldHint: boolp(false)}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_capsule_create",
		Annotations: withTitle(write, "Create capsule"),
		Description: `Hand a curated bundle of your memories about one subject (a user, a project, ...) to other agents, with risks they must know and an expiry (default 7 days). Choose the memories by ids or by a search query. Only the audience receives and reads it; it becomes unreadable when it expires or you revoke it. Needs share permission on every memory's namespace.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a capsuleCreateArgs) (*mcp.CallToolResult, memapi.CapsuleCreated, error) {
		req := memapi.CapsuleRequest{SubjectType: a.SubjectType, SubjectID: a.SubjectID, Project: a.Project, Audience: a.Audience,
			IDs: a.IDs, TTLDays: a.TTLDays, Risks: a.Risks}
		if a.Query != "" {
			req.Query = &memapi.SearchQuery{Query: a.Query, Limit: a.Limit}
		}
		res, err := cp.CreateCapsule(ctx, req)
		if err != nil {
			return nil, memapi.CapsuleCreated{}, toolError("mem_capsule_create", err)
		}
		return text(fmt.Sprintf("Created capsule %s with %d item(s) for %s; expires %s.", res.CapsuleID, res.ItemCount,
			strings.Join(res.Audience, ", "), day(res.ExpiresAt))), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_capsules",
		Annotations: withTitle(read, "List capsules"),
		Description: `List the capsules available to you: those other agents shared with you (active ones only) and those you created, optionally about one subject. Read one with mem_capsule_get.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a capsuleListArgs) (*mcp.CallToolResult, memapi.CapsuleList, error) {
		res, err := cp.Capsules(ctx, memapi.CapsuleQuery{SubjectType: a.SubjectType, SubjectID: a.SubjectID})
		if err != nil {
			return nil, memapi.CapsuleList{}, toolError("mem_capsules", err)
		}
		if len(res.Capsules) == 0 {
			return text("No capsules available."), res, nil
		}
		var b strings.Builder
		for _, c := range res.Capsules {
			b.WriteString(capsuleText(c))
		}
		return text(b.String()), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_capsule_get",
		Annotations: withTitle(read, "Read capsule"),
		Description: `Read one capsule shared with you (or created by you): its subject, risks and the memories it carries. Expired or revoked capsules cannot be read.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a capsuleIDArgs) (*mcp.CallToolResult, memapi.Capsule, error) {
		res, err := cp.Capsule(ctx, a.ID)
		if err != nil {
			return nil, memapi.Capsule{}, toolError("mem_capsule_get", err)
		}
		return text(capsuleText(res)), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_capsule_revoke",
		Annotations: withTitle(&mcp.ToolAnnotations{DestructiveHint: boolp(true), OpenWorldHint: boolp(false)}, "Revoke capsule"),
		Description: `Revoke a capsule you created: it becomes unreadable for its whole audience at once and its copied memories are removed. Only the creator can revoke.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a capsuleIDArgs) (*mcp.CallToolResult, memapi.Capsule, error) {
		res, err := cp.RevokeCapsule(ctx, a.ID)
		if err != nil {
			return nil, memapi.Capsule{}, toolError("mem_capsule_revoke", err)
		}
		return text("Revoked capsule " + res.ID + "."), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_build_context",
		Annotations: withTitle(read, "Build context bundle"),
		Description: `Build the context to start or continue work: the decisions in force (policy first, then project, user, session), capsules other agents shared with you about the subject, the most relevant recent memories (this session first), and, in a section of their own, what other agents wrote into your inbox (their words, never your decisions), fitted to max_tokens. The answer reports how the budget was split.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a bundleArgs) (*mcp.CallToolResult, memapi.BundleResult, error) {
		res, err := cp.BuildContext(ctx, memapi.BundleRequest{SessionID: a.SessionID, Channel: a.Channel, SubjectType: a.SubjectType,
			SubjectID: a.SubjectID, Project: a.Project, MaxTokens: a.MaxTokens, IncludeCapsules: a.IncludeCapsules})
		if err != nil {
			return nil, memapi.BundleResult{}, toolError("mem_build_context", err)
		}
		b := res.Budget
		out := res.Text
		if out == "" {
			out = "Nothing to include.\n"
		}
		out += fmt.Sprintf("\n(tokens: decisions %d, capsules %d, recent %d, from other agents %d, total %d of %d)", b.Decisions, b.Capsules, b.Recent, b.FromOthers, b.Total, b.MaxTokens)
		return text(out), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_duplicates",
		Annotations: withTitle(read, "Find duplicates"),
		Description: `Find near-duplicate memories across the namespaces you can read (the same knowledge shared, promoted, or learned by several agents). Each pair says whether independent agents wrote it. Merge pairs in a shared namespace with mem_merge_duplicates.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a duplicatesArgs) (*mcp.CallToolResult, memapi.DuplicatesResult, error) {
		res, err := cp.Duplicates(ctx, memapi.DuplicateQuery{Namespace: a.Namespace, Threshold: a.Threshold})
		if err != nil {
			return nil, memapi.DuplicatesResult{}, toolError("mem_duplicates", err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d pair(s) among %d memories.\n", len(res.Pairs), res.Compared)
		for _, p := range res.Pairs {
			fmt.Fprintf(&b, "- %.2f %s: %s (%s, %s) ~ %s (%s, %s), independent=%v\n", p.Similarity, p.Method, p.A.ID, p.A.Namespace, p.A.Title, p.B.ID, p.B.Namespace, p.B.Title, p.Independent)
		}
		if res.Warning != "" {
			b.WriteString("warning: " + res.Warning + "\n")
		}
		return text(b.String()), res, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_merge_duplicates",
		Annotations: withTitle(write, "Merge duplicates"),
		Description: `Merge duplicate memories within a shared namespace you can write: the first id in that namespace survives with everyone's provenance, the others there are archived pointing to it, and confidence rises by 0.2 (max 1) when independent agents agreed.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a mergeArgs) (*mcp.CallToolResult, memapi.MergeResult, error) {
		res, err := cp.MergeDuplicates(ctx, memapi.MergeRequest{IDs: a.IDs, Namespace: a.Namespace})
		if err != nil {
			return nil, memapi.MergeResult{}, toolError("mem_merge_duplicates", err)
		}
		return text(fmt.Sprintf("Merged into %s (archived %s); confidence %.2f -> %.2f.", res.Memory.ID,
			strings.Join(res.Merged, ", "), res.ConfidenceBefore, res.ConfidenceAfter)), res, nil
	})
}
