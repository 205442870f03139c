package mcptools

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Options configures NewServer. The zero value is ready to use.
type Options struct {
	// Version is reported to clients at initialize; default "dev".
	Version string
	// Logger receives the SDK's protocol-level diagnostics; default discards.
	Logger *slog.Logger
	// SchemaCache, when set, is shared by servers built for many sessions so
	// the tool schemas are reflected once; default nil (reflect per server).
	SchemaCache *mcp.SchemaCache
	// OnToolCall, when set, is told of every tools/call the server
	// answered: the tool's name (UnknownTool for a name it does not offer,
	// so that a client's made-up names stay out of whatever counts them),
	// how long the call took, and whether it failed (a tool error, bad
	// arguments, or no such tool). Called on the request's goroutine after
	// the call; it must not block. Default nil.
	OnToolCall func(tool string, took time.Duration, failed bool)
}

// UnknownTool is the name OnToolCall is given for a call naming no tool.
const UnknownTool = "unknown"

// Instructions is what the server tells a client at initialize: the
// workflow the tools are built for.
const Instructions = `mnemo is your persistent memory. It survives restarts and context compaction, and can be shared on purpose with other agents.

Workflow:
- At the start of a task call mem_context (recent memories and sessions) and mem_search with keywords of the task: do not redo work or re-decide what is already settled.
- Save as you go with mem_save, right after each decision, bug fix, discovery, convention or user preference; do not wait to be asked. Short searchable title; content saying what, why, where (files) and what you learned.
- For a topic that evolves (an architecture choice, a config), reuse one topic_key (mem_suggest_topic_key proposes one): saving again with it updates that memory in place.
- Search results are snippets: call mem_get_observation with an id for the full content, mem_timeline for what happened around it.
- Correct with mem_update; remove with mem_delete.
- Track a long task with mem_progress (one progress note per project and namespace, replaced on each call). Before you finish, save a mem_session_summary.

Sub-agents: every read and write takes an optional namespace. Omit it to use your own (agent://you). A relative path such as "subagent/task-123" scopes a sub-agent under your namespace; a full address (agent://x/..., team://t, project://p) names another namespace you were granted. Reads of a namespace include its sub-namespaces, so the parent sees what its sub-agents saved.

Compaction, in two phases: (1) mem_compact with older_than_days (and optionally project, scope, namespace) lists stale candidates and changes nothing; (2) read them, write a summary of what is still worth knowing, then call mem_compact with compact_ids (the ids to retire) plus summary_title and summary_content. Phase 2 is all or nothing: the ids are soft-deleted and the summary is saved together.

Ids are strings. Errors say what to change; fix the arguments and call again.`

// NewServer returns an MCP server offering every mnemo tool on b.
// Connect it to a transport with Run (stdio) or serve it with NewHTTPHandler.
func NewServer(b Backend, opts Options) *mcp.Server {
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mnemo", Title: "mnemo memory", Version: version}, &mcp.ServerOptions{
		Instructions: Instructions,
		Logger:       opts.Logger,
		SchemaCache:  opts.SchemaCache,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	// The timing goes first: each middleware added wraps those before it,
	// so it sees only the calls refuseNonText let through, and knows a
	// name the server does not offer by the protocol error it gets.
	if opts.OnToolCall != nil {
		s.AddReceivingMiddleware(timeToolCalls(opts.OnToolCall))
	}
	s.AddReceivingMiddleware(refuseNonText)
	registerTools(s, b)
	registerSharingTools(s, b)
	registerCapsuleTools(s, b) // capsules.go
	registerSurgeryTools(s, b)
	return s
}

// timeToolCalls reports every tools/call to report (Options.OnToolCall).
func timeToolCalls(report func(tool string, took time.Duration, failed bool)) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok || method != "tools/call" {
				return next(ctx, method, req)
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			name, failed := p.Name, err != nil
			if err != nil {
				// The server refuses a name it does not offer with a
				// protocol error; a tool it offers answers with a result.
				name = UnknownTool
			} else if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
				failed = true
			}
			report(name, time.Since(start), failed)
			return res, err
		}
	}
}

// refuseNonText answers a tools/call whose arguments hold a string that is
// not text (memapi.CheckJSONText: bytes that are not UTF-8, an unpaired
// surrogate, a NUL) with a tool error naming the argument. It must see the
// raw arguments: the SDK's decoder would turn invalid UTF-8 into U+FFFD
// without a word, and the memory would be stored altered.
func refuseNonText(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
			if err := memapi.CheckJSONText(p.Arguments); err != nil {
				res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: toolError(p.Name, err).Error()}}}
				res.IsError = true
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}
