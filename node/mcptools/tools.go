package mcptools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/memapi"
)

type saveArgs struct {
	Title       string   `json:"title,omitempty" jsonschema:"Short searchable title, e.g. 'Switched auth to JWT'. Derived from the content when omitted."`
	Content     string   `json:"content" jsonschema:"The memory itself. Say what was done or found, why, where (files, paths) and what was learned."`
	Type        string   `json:"type,omitempty" jsonschema:"Kind of memory: decision, observation, bugfix, pattern, preference, correction, discovery, config, architecture, learning, … (default observation)."`
	SessionID   string   `json:"session_id,omitempty" jsonschema:"Session id to associate with (see mem_session_start)."`
	Project     string   `json:"project,omitempty" jsonschema:"Project name, e.g. the repository name."`
	Scope       string   `json:"scope,omitempty" jsonschema:"Scope: project (default), session, user, policy or global. 'personal' is read as user."`
	TopicKey    string   `json:"topic_key,omitempty" jsonschema:"Stable key for an evolving topic, e.g. architecture/auth-model. If a live memory in the same namespace has it, that memory is updated in place instead of adding a new one."`
	Tags        []string `json:"tags,omitempty" jsonschema:"Free-form labels for filtering, e.g. [\"auth\",\"security\"]."`
	Importance  *float64 `json:"importance,omitempty" jsonschema:"How much this matters, 0 to 1 (default 0.5)."`
	Confidence  *float64 `json:"confidence,omitempty" jsonschema:"How sure you are, 0 to 1 (default 0.8)."`
	LinkedFiles []string `json:"linked_files,omitempty" jsonschema:"Files this memory is about, as paths."`
	SubjectType string   `json:"subject_type,omitempty" jsonschema:"What the memory is about, e.g. file, function, user, service (fixed once set)."`
	SubjectID   string   `json:"subject_id,omitempty" jsonschema:"Identifier of the subject, e.g. a path or a name (fixed once set)."`
	Channel     string   `json:"channel,omitempty" jsonschema:"Visibility label: private, public, team or agent."`
	Namespace   string   `json:"namespace,omitempty" jsonschema:"Namespace to use. Omit for your own. A relative path like 'subagent/task-123' scopes a sub-agent under yours; a full address (agent://x/path, team://t, project://p) names a namespace you were granted."`
}

type updateArgs struct {
	ID          string    `json:"id" jsonschema:"Id of the memory to change."`
	Title       *string   `json:"title,omitempty" jsonschema:"New title."`
	Content     *string   `json:"content,omitempty" jsonschema:"New content (replaces the old)."`
	Type        *string   `json:"type,omitempty" jsonschema:"New type."`
	Project     *string   `json:"project,omitempty" jsonschema:"New project."`
	Scope       *string   `json:"scope,omitempty" jsonschema:"New scope: project, session, user, policy or global."`
	TopicKey    *string   `json:"topic_key,omitempty" jsonschema:"New topic key."`
	Tags        *[]string `json:"tags,omitempty" jsonschema:"New tags (replace the old set)."`
	Importance  *float64  `json:"importance,omitempty" jsonschema:"New importance, 0 to 1."`
	Confidence  *float64  `json:"confidence,omitempty" jsonschema:"New confidence, 0 to 1."`
	LinkedFiles *[]string `json:"linked_files,omitempty" jsonschema:"New linked files (replace the old list)."`
	SubjectType *string   `json:"subject_type,omitempty" jsonschema:"Subject type; only if not set yet."`
	SubjectID   *string   `json:"subject_id,omitempty" jsonschema:"Subject id; only if not set yet."`
	SessionID   *string   `json:"session_id,omitempty" jsonschema:"New session id."`
	Channel     *string   `json:"channel,omitempty" jsonschema:"New channel: private, public, team or agent."`
}

type deleteArgs struct {
	ID         string `json:"id" jsonschema:"Id of the memory to delete."`
	HardDelete bool   `json:"hard_delete,omitempty" jsonschema:"false (default): archive it; it leaves searches but can still be read by id. true: retract it everywhere, content purged, final."`
}

type deleteResult struct {
	ID        string `json:"id"`
	Deleted   bool   `json:"deleted"`
	Retracted bool   `json:"retracted"`
}

type searchArgs struct {
	Query          string   `json:"query" jsonschema:"What to look for: keywords or a short natural-language phrase."`
	Type           string   `json:"type,omitempty" jsonschema:"Only memories of this type, e.g. decision."`
	Project        string   `json:"project,omitempty" jsonschema:"Only memories of this project."`
	Scope          string   `json:"scope,omitempty" jsonschema:"Only memories of this scope: project, session, user, policy or global."`
	Tags           []string `json:"tags,omitempty" jsonschema:"Only memories carrying all of these tags."`
	SessionID      string   `json:"session_id,omitempty" jsonschema:"Only memories of this session."`
	SubjectType    string   `json:"subject_type,omitempty" jsonschema:"Only memories about this kind of subject."`
	SubjectID      string   `json:"subject_id,omitempty" jsonschema:"Only memories about this subject."`
	Channel        string   `json:"channel,omitempty" jsonschema:"Only memories of this channel."`
	Since          string   `json:"since,omitempty" jsonschema:"Only memories created on or after this date (YYYY-MM-DD or RFC 3339)."`
	Until          string   `json:"until,omitempty" jsonschema:"Only memories created before this date (YYYY-MM-DD, whole day included, or RFC 3339)."`
	Limit          int      `json:"limit,omitempty" jsonschema:"Maximum hits to return (default 10, max 100)."`
	IncludeDeleted bool     `json:"include_deleted,omitempty" jsonschema:"Also return archived (soft-deleted) memories."`
	Namespace      string   `json:"namespace,omitempty" jsonschema:"Search only this namespace and its sub-namespaces. Omit to search everything you may read."`
	// IncludeQuarantined admits memories quarantined by mem_edit.
	IncludeQuarantined bool `json:"include_quarantined,omitempty" jsonschema:"Also return memories quarantined by an edit (held back from automatic retrieval, e.g. unverified). Only when you need them explicitly."`
	Feedback           bool `json:"feedback,omitempty" jsonschema:"Rank with pseudo-relevance feedback: words shared by the best hits reorder the rest. Finds more when the question is worded unlike the memory; slower."`
}

type contextArgs struct {
	Project   string `json:"project,omitempty" jsonschema:"Only this project."`
	Scope     string `json:"scope,omitempty" jsonschema:"Only this scope: project, session, user, policy or global."`
	SessionID string `json:"session_id,omitempty" jsonschema:"Only this session."`
	MaxTokens int    `json:"max_tokens,omitempty" jsonschema:"Budget for the returned text, in tokens (default 2000, max 100000)."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Only this namespace and its sub-namespaces. Omit for everything you may read."`
	Channel   string `json:"channel,omitempty" jsonschema:"Only memories of this channel (private, public, team, agent); memories blocked for it are left out."`
}

type timelineArgs struct {
	ObservationID string `json:"observation_id" jsonschema:"Id of the memory to center on (from mem_search or mem_context)."`
	Before        int    `json:"before,omitempty" jsonschema:"How many earlier memories to show (default 5, max 50)."`
	After         int    `json:"after,omitempty" jsonschema:"How many later memories to show (default 5, max 50)."`
	Project       string `json:"project,omitempty" jsonschema:"Only neighbours of this project."`
	Scope         string `json:"scope,omitempty" jsonschema:"Only neighbours of this scope."`
	SessionID     string `json:"session_id,omitempty" jsonschema:"Only neighbours of this session."`
	Namespace     string `json:"namespace,omitempty" jsonschema:"Only neighbours in this namespace and its sub-namespaces."`
}

type getArgs struct {
	ID             string `json:"id" jsonschema:"Id of the memory (from mem_search, mem_context, mem_timeline or mem_save)."`
	IncludeDeleted bool   `json:"include_deleted,omitempty" jsonschema:"Also return it if it was archived (soft-deleted)."`
}

type suggestArgs struct {
	Type    string `json:"type,omitempty" jsonschema:"Kind of memory, e.g. architecture, decision, bugfix."`
	Title   string `json:"title,omitempty" jsonschema:"Title of the memory (preferred input for a stable key)."`
	Content string `json:"content,omitempty" jsonschema:"Content, used when there is no title."`
}

type suggestResult struct {
	TopicKey string `json:"topic_key"`
}

type promptArgs struct {
	Content   string `json:"content" jsonschema:"The user's prompt, verbatim."`
	SessionID string `json:"session_id,omitempty" jsonschema:"Session id to associate with."`
	Project   string `json:"project,omitempty" jsonschema:"Project name."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Namespace to save into. Omit for your own; a relative path scopes a sub-agent."`
}

type sessionStartArgs struct {
	ID        string `json:"id" jsonschema:"Session id you choose, unique per session (starting an existing id again is harmless)."`
	Project   string `json:"project,omitempty" jsonschema:"Project name."`
	Directory string `json:"directory,omitempty" jsonschema:"Working directory of the session."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Namespace the session belongs to. Omit for your own."`
}

type sessionEndArgs struct {
	ID      string `json:"id" jsonschema:"Id of the session to close."`
	Summary string `json:"summary,omitempty" jsonschema:"One-paragraph summary of what the session achieved."`
}

type sessionSummaryArgs struct {
	Content   string `json:"content" jsonschema:"Summary of the session: goal, what was done, what was learned, what is left, relevant files."`
	SessionID string `json:"session_id,omitempty" jsonschema:"Session id the summary belongs to."`
	Project   string `json:"project,omitempty" jsonschema:"Project name."`
	Title     string `json:"title,omitempty" jsonschema:"Title (default derived from the content)."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Namespace to save into. Omit for your own; a relative path scopes a sub-agent."`
}

type statsArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"Count only this namespace and its sub-namespaces. Omit for everything you may read."`
}

type compactArgs struct {
	OlderThanDays  int    `json:"older_than_days,omitempty" jsonschema:"Identify mode (no compact_ids): list live memories older than this many days. Required there and must be > 0."`
	Project        string `json:"project,omitempty" jsonschema:"Identify mode: only this project. Also given to the summary."`
	Scope          string `json:"scope,omitempty" jsonschema:"Identify mode: only this scope. Also given to the summary."`
	Limit          int    `json:"limit,omitempty" jsonschema:"Identify mode: maximum candidates (default 50, max 200)."`
	Namespace      string `json:"namespace,omitempty" jsonschema:"Only this namespace and its sub-namespaces; the summary is saved there."`
	CompactIDs     idList `json:"compact_ids,omitempty" jsonschema:"Execute mode: ids of the memories to retire (soft-delete), as an array of strings or a string holding a JSON array, e.g. [\"01J…\",\"01J…\"]. Omit for identify mode."`
	SummaryTitle   string `json:"summary_title,omitempty" jsonschema:"Execute mode: title of the replacement summary. Required when summary_content is given."`
	SummaryContent string `json:"summary_content,omitempty" jsonschema:"Execute mode: the summary that replaces the retired memories: everything in them still worth knowing."`
	SessionID      string `json:"session_id,omitempty" jsonschema:"Execute mode: session to associate the summary with."`
}

type progressArgs struct {
	Project   string `json:"project" jsonschema:"Project the progress note is about."`
	Content   string `json:"content" jsonschema:"Current state: done, in progress, next steps, blockers. Replaces the previous note."`
	Title     string `json:"title,omitempty" jsonschema:"Title (default derived)."`
	SessionID string `json:"session_id,omitempty" jsonschema:"Session id to associate with."`
	Namespace string `json:"namespace,omitempty" jsonschema:"Namespace whose progress this is; a sub-agent passes its relative path to keep its own note (topic key progress/<namespace>/<project>)."`
}

func boolp(b bool) *bool { return &b }

// text makes a result whose content is s; the SDK adds the structured output.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func registerTools(s *mcp.Server, b Backend) {
	write := &mcp.ToolAnnotations{DestructiveHint: boolp(false), OpenWorldHint: boolp(false)}
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolp(false)}

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_save",
		Annotations: withTitle(write, "Save memory"),
		Description: `Save something worth remembering across sessions. Call it proactively, right after a decision, a bug fix, a discovery, a convention or a user preference; do not wait to be asked.
Write a short searchable title and content saying what, why, where (files) and what was learned. For an evolving topic pass the same topic_key each time (see mem_suggest_topic_key) to update one memory instead of adding another. Use namespace to write into a sub-agent's space.
Returns the id of the saved memory (a string), its type and namespace, and whether an existing memory was updated.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a saveArgs) (*mcp.CallToolResult, memapi.SaveResult, error) {
		typ := a.Type
		if typ == "" {
			typ = "observation"
		}
		res, err := b.Save(ctx, memapi.SaveRequest{
			Namespace: a.Namespace, Type: typ, Title: a.Title, Content: a.Content, Tags: a.Tags,
			TopicKey: a.TopicKey, Importance: a.Importance, Confidence: a.Confidence,
			LinkedFiles: a.LinkedFiles, Scope: scope(a.Scope), SubjectType: a.SubjectType,
			SubjectID: a.SubjectID, Project: a.Project, SessionID: a.SessionID, Channel: a.Channel,
		})
		if err != nil {
			return nil, memapi.SaveResult{}, toolError("mem_save", err)
		}
		return text(savedText(res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_update",
		Annotations: withTitle(write, "Update memory"),
		Description: `Correct or extend an existing memory by id. Only the fields you pass change; the others stay. Use it when you know the exact id (from mem_search or mem_save); to replace a topic over time, mem_save with a topic_key is simpler.
Returns the memory as it is after the update.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a updateArgs) (*mcp.CallToolResult, memapi.Memory, error) {
		req := memapi.UpdateRequest{
			Type: a.Type, Title: a.Title, Content: a.Content, Tags: a.Tags, TopicKey: a.TopicKey,
			Importance: a.Importance, Confidence: a.Confidence, LinkedFiles: a.LinkedFiles,
			SubjectType: a.SubjectType, SubjectID: a.SubjectID, Project: a.Project,
			SessionID: a.SessionID, Channel: a.Channel,
		}
		if a.Scope != nil {
			sc := scope(*a.Scope)
			req.Scope = &sc
		}
		if req == (memapi.UpdateRequest{}) {
			return nil, memapi.Memory{}, fmt.Errorf("mem_update: nothing to change: pass at least one field besides id (title, content, type, tags, …)")
		}
		m, err := b.Update(ctx, a.ID, req)
		if err != nil {
			return nil, memapi.Memory{}, toolError("mem_update", err)
		}
		return text(fmt.Sprintf("Updated memory %s (%s) in %s: %s", m.ID, m.Type, m.Namespace, m.Title)), m, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_delete",
		Annotations: withTitle(&mcp.ToolAnnotations{DestructiveHint: boolp(true), OpenWorldHint: boolp(false)}, "Delete memory"),
		Description: `Delete a memory by id. By default it is archived: it leaves searches and context but can still be read by id. With hard_delete=true it is retracted on every node, content purged; this cannot be undone, so use it only for things that must not be kept (secrets, wrong personal data).
Returns what was done.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a deleteArgs) (*mcp.CallToolResult, deleteResult, error) {
		if err := b.Delete(ctx, a.ID, a.HardDelete); err != nil {
			return nil, deleteResult{}, toolError("mem_delete", err)
		}
		msg := "Archived memory " + a.ID + " (soft delete; still readable by id)."
		if a.HardDelete {
			msg = "Retracted memory " + a.ID + " (final; content purged)."
		}
		return text(msg), deleteResult{ID: a.ID, Deleted: true, Retracted: a.HardDelete}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_search",
		Annotations: withTitle(read, "Search memory"),
		Description: `Full-text search of your memories and those shared with you, best match first. Use it before starting work that may have been done or decided before, and when the user refers to past work.
Returns a numbered list of hits with id, type, title, score and a snippet; call mem_get_observation with an id for the full content.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, memapi.SearchResult, error) {
		since, err := parseDate("since", a.Since, false)
		if err != nil {
			return nil, memapi.SearchResult{}, err
		}
		until, err := parseDate("until", a.Until, true)
		if err != nil {
			return nil, memapi.SearchResult{}, err
		}
		res, err := b.Search(ctx, memapi.SearchQuery{
			Query: a.Query, Limit: a.Limit, IncludeDeleted: a.IncludeDeleted, Feedback: a.Feedback,
			Filter: memapi.Filter{
				Namespace: a.Namespace, Type: a.Type, Tags: a.Tags, Project: a.Project, Scope: scope(a.Scope),
				SubjectType: a.SubjectType, SubjectID: a.SubjectID, SessionID: a.SessionID,
				Channel: a.Channel, Since: since, Until: until, IncludeQuarantined: a.IncludeQuarantined,
			},
		})
		if err != nil {
			return nil, memapi.SearchResult{}, toolError("mem_search", err)
		}
		return text(searchText(a.Query, res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_context",
		Annotations: withTitle(read, "Recent context"),
		Description: `Recent memories and sessions, formatted to paste into your working context, newest first, within a token budget. Call it at the start of a session or after your context was compacted, to pick up where you (or your sub-agents) left off.
Returns prompt-ready text, and how many tokens it uses.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a contextArgs) (*mcp.CallToolResult, memapi.ContextResult, error) {
		res, err := b.Context(ctx, memapi.ContextQuery{
			MaxTokens: a.MaxTokens,
			Filter:    memapi.Filter{Namespace: a.Namespace, Project: a.Project, Scope: scope(a.Scope), SessionID: a.SessionID, Channel: a.Channel},
		})
		if err != nil {
			return nil, memapi.ContextResult{}, toolError("mem_context", err)
		}
		return text(contextText(res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_timeline",
		Annotations: withTitle(read, "Timeline around a memory"),
		Description: `Show what was remembered just before and after one memory, in time order: the story around a search hit.
Returns the earlier memories, the center (marked >>) and the later ones, each with id, time, type and title.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a timelineArgs) (*mcp.CallToolResult, memapi.Timeline, error) {
		res, err := b.Timeline(ctx, memapi.TimelineQuery{
			ID: a.ObservationID, Before: a.Before, After: a.After,
			Filter: memapi.Filter{Namespace: a.Namespace, Project: a.Project, Scope: scope(a.Scope), SessionID: a.SessionID},
		})
		if err != nil {
			return nil, memapi.Timeline{}, toolError("mem_timeline", err)
		}
		return text(timelineText(res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_get_observation",
		Annotations: withTitle(read, "Get memory"),
		Description: `Read one memory in full by id (search results and context only show snippets).
Returns every field: title, type, namespace, project, scope, tags, topic key, times and the full content.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a getArgs) (*mcp.CallToolResult, memapi.Memory, error) {
		m, err := b.Get(ctx, a.ID, a.IncludeDeleted)
		if err != nil {
			return nil, memapi.Memory{}, toolError("mem_get_observation", err)
		}
		return text(memoryText(m)), m, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_suggest_topic_key",
		Annotations: withTitle(read, "Suggest topic key"),
		Description: `Propose a stable topic_key (like "architecture/auth-model") from a type and a title (or content). Use it before mem_save when a topic will evolve, then pass the same key on every later save so one memory is kept up to date.
Returns the key; it changes nothing.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a suggestArgs) (*mcp.CallToolResult, suggestResult, error) {
		if strings.TrimSpace(a.Title) == "" && strings.TrimSpace(a.Content) == "" {
			return nil, suggestResult{}, fmt.Errorf("mem_suggest_topic_key: pass a title (preferred) or content to derive the key from")
		}
		key := memapi.SuggestTopicKey(a.Type, a.Title, a.Content)
		if key == "" {
			return nil, suggestResult{}, fmt.Errorf("mem_suggest_topic_key: no key could be derived from that text; use a title with a few plain words")
		}
		return text("Suggested topic_key: " + key), suggestResult{TopicKey: key}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_save_prompt",
		Annotations: withTitle(write, "Save user prompt"),
		Description: `Record what the user asked, verbatim, so later sessions know their goals and wording. Call it for significant requests, before the memories you derive from them.
Returns the id of the saved prompt memory.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a promptArgs) (*mcp.CallToolResult, memapi.SaveResult, error) {
		res, err := b.SavePrompt(ctx, memapi.PromptRequest{SessionID: a.SessionID, Namespace: a.Namespace, Project: a.Project, Content: a.Content})
		if err != nil {
			return nil, memapi.SaveResult{}, toolError("mem_save_prompt", err)
		}
		return text(savedText(res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_session_start",
		Annotations: withTitle(&mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: boolp(false), OpenWorldHint: boolp(false)}, "Start session"),
		Description: `Register the start of a work session, so memories can be grouped by session and mem_context can show what each session did. Starting the same id again is harmless.
Returns the session.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a sessionStartArgs) (*mcp.CallToolResult, memapi.Session, error) {
		se, err := b.StartSession(ctx, memapi.SessionStart{ID: a.ID, Namespace: a.Namespace, Project: a.Project, Directory: a.Directory})
		if err != nil {
			return nil, memapi.Session{}, toolError("mem_session_start", err)
		}
		return text(fmt.Sprintf("Session %s started in %s at %s.", se.ID, se.Namespace, se.StartedAt.UTC().Format(time.RFC3339))), se, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_session_end",
		Annotations: withTitle(write, "End session"),
		Description: `Mark a session as finished, optionally with a one-paragraph summary. For a searchable summary memory use mem_session_summary as well.
Returns the closed session.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a sessionEndArgs) (*mcp.CallToolResult, memapi.Session, error) {
		se, err := b.EndSession(ctx, memapi.SessionEnd{ID: a.ID, Summary: a.Summary})
		if err != nil {
			return nil, memapi.Session{}, toolError("mem_session_end", err)
		}
		return text(fmt.Sprintf("Session %s ended.", se.ID)), se, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_session_summary",
		Annotations: withTitle(write, "Save session summary"),
		Description: `Save an end-of-session summary as a searchable memory (type summary): the goal, what was done, what was learned, what is left and the files involved. Call it before you say you are done, so the next session can continue.
Returns the id of the saved summary.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a sessionSummaryArgs) (*mcp.CallToolResult, memapi.SaveResult, error) {
		res, err := b.SessionSummary(ctx, memapi.SessionSummaryRequest{SessionID: a.SessionID, Namespace: a.Namespace, Project: a.Project, Title: a.Title, Content: a.Content})
		if err != nil {
			return nil, memapi.SaveResult{}, toolError("mem_session_summary", err)
		}
		return text(savedText(res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_stats",
		Annotations: withTitle(read, "Memory statistics"),
		Description: `Count what you can read: live and archived memories, sessions, memories by type and by namespace, projects, oldest and newest. Useful before compaction or to see what sub-agents saved.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a statsArgs) (*mcp.CallToolResult, memapi.Stats, error) {
		st, err := b.Stats(ctx, a.Namespace)
		if err != nil {
			return nil, memapi.Stats{}, toolError("mem_stats", err)
		}
		if st.ByType == nil {
			st.ByType = map[string]int{}
		}
		if st.ByNamespace == nil {
			st.ByNamespace = map[string]int{}
		}
		return text(statsText(st)), st, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_compact",
		Annotations: withTitle(&mcp.ToolAnnotations{DestructiveHint: boolp(true), OpenWorldHint: boolp(false)}, "Compact memories"),
		InputSchema: compactInputSchema(),
		Description: `Retire stale memories and replace them with one summary, in two phases.
1. Identify: call with older_than_days (> 0) and optionally project, scope, namespace, limit. Nothing changes; you get the candidates (id, age, type, title, snippet) and an age histogram.
2. Execute: read the candidates (mem_get_observation for detail), write a summary of what is still worth knowing, then call with compact_ids (the ids to retire) plus summary_title and summary_content. The ids are archived and the summary (type compaction_summary) is saved together, all or nothing. Memories already deleted cannot be compacted.
Returns the candidates, or how many memories were compacted, the summary id and the live counts before and after.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a compactArgs) (*mcp.CallToolResult, memapi.CompactResult, error) {
		execute := a.CompactIDs != nil
		switch {
		case execute && len(a.CompactIDs) == 0:
			return nil, memapi.CompactResult{}, fmt.Errorf("mem_compact: compact_ids is empty: pass the ids to retire, or omit compact_ids (with older_than_days > 0) to list candidates first")
		case !execute && a.OlderThanDays <= 0:
			return nil, memapi.CompactResult{}, fmt.Errorf("mem_compact: older_than_days must be > 0 to identify candidates (e.g. 30); to compact known ids pass compact_ids instead")
		case a.SummaryContent != "" && strings.TrimSpace(a.SummaryTitle) == "":
			return nil, memapi.CompactResult{}, fmt.Errorf("mem_compact: summary_content needs a summary_title too")
		case !execute && (a.SummaryTitle != "" || a.SummaryContent != ""):
			return nil, memapi.CompactResult{}, fmt.Errorf("mem_compact: a summary is written only in execute mode: pass compact_ids with it")
		}
		res, err := b.Compact(ctx, memapi.CompactRequest{
			Namespace: a.Namespace, Project: a.Project, Scope: scope(a.Scope), OlderThanDays: a.OlderThanDays,
			Limit: a.Limit, CompactIDs: a.CompactIDs, SummaryTitle: a.SummaryTitle,
			SummaryContent: a.SummaryContent, SessionID: a.SessionID,
		})
		if err != nil {
			return nil, memapi.CompactResult{}, toolError("mem_compact", err)
		}
		return text(compactText(a.OlderThanDays, res)), res, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "mem_progress",
		Annotations: withTitle(write, "Record progress"),
		Description: `Keep one up-to-date progress note per project (and per namespace): what is done, in progress, next and blocked. Each call replaces the previous note, so call it whenever the state of a long task changes; a sub-agent passes its namespace to keep its own note.
Returns the id of the note and whether an earlier note was replaced.`,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a progressArgs) (*mcp.CallToolResult, memapi.SaveResult, error) {
		res, err := b.Progress(ctx, memapi.ProgressRequest{Namespace: a.Namespace, Project: a.Project, Title: a.Title, Content: a.Content, SessionID: a.SessionID})
		if err != nil {
			return nil, memapi.SaveResult{}, toolError("mem_progress", err)
		}
		return text(savedText(res)), res, nil
	})
}

func withTitle(a *mcp.ToolAnnotations, title string) *mcp.ToolAnnotations {
	c := *a
	c.Title = title
	return &c
}

// scope maps engram's "personal" onto our "user"; other values pass through
// for the service to validate.
func scope(s string) string {
	if strings.EqualFold(strings.TrimSpace(s), "personal") {
		return "user"
	}
	return s
}

// parseDate reads YYYY-MM-DD or RFC 3339. A bare date as an upper bound
// means the end of that day (exclusive: the next midnight UTC).
func parseDate(name, s string, upper bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is not a date: use YYYY-MM-DD or RFC 3339 (2025-01-31T15:04:05Z)", name, s)
	}
	if upper {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}
