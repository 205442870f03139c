// Package mcptools offers a node's memory to agents as MCP tools.
//
// NewServer registers the tools on an *mcp.Server over a Backend, the
// narrow view of memory.Service the tools need with the caller bound in:
// node/mcpservice.New for a Service in this process, ClientBackend for a
// node reached over its HTTP API; the package itself links no storage.
// Serve it on stdio (`mnemo mcp`) with server.Run, or over streamable HTTP
// with NewHTTPHandler, mounted by the node at /mcp behind its token check.
//
// # Tools
//
// 27 tools, the same on every transport and backend:
//
//   - memory (tools.go): mem_save, mem_update, mem_delete, mem_search,
//     mem_context, mem_timeline, mem_get_observation, mem_suggest_topic_key,
//     mem_save_prompt, mem_session_start, mem_session_end,
//     mem_session_summary, mem_stats, mem_compact, mem_progress;
//   - sharing (sharing.go): mem_share, mem_promote;
//   - governed edits (surgery.go): mem_edit, mem_approve, mem_audit;
//   - capsules, bundles, duplicates (capsules.go): mem_capsule_create,
//     mem_capsules, mem_capsule_get, mem_capsule_revoke, mem_build_context,
//     mem_duplicates, mem_merge_duplicates.
//
// NewServer is the one definition of the set: it registers every tool,
// whatever the backend. Backend is a single interface holding every
// tool's method rather than a core plus optional capabilities found by
// type assertion: with optional interfaces, `mnemo mcp`'s reconnecting
// wrapper once implemented only the core and sharing, and stdio agents
// silently got 17 tools where /mcp offered 27. Now such a wrapper does not
// compile. A node lacking a feature (a bare Service in a test) still lists
// the tool and answers it with a not-found tool error naming the feature.
//
// Input schemas are generated from the
// argument structs in tools.go; descriptions are written for the model.
// Every result carries a short text for the model and the same data as
// structured content (the memory package's JSON types). Arguments holding a
// string that is not text (bytes that are not UTF-8, an unpaired
// surrogate, a NUL) are refused before the SDK decodes them, naming the
// argument (memapi.CheckJSONText). Bad arguments,
// unknown ids and refused permissions come back as tool errors (IsError)
// whose text says what to change; they never end the session.
//
// # Differences from engram's tools
//
// Tool and argument names follow engram where the meaning is the same, so
// prompts and skills written for engram keep working. Where they differ:
//
//   - Ids are strings (ULIDs), not numbers.
//   - Arguments are checked against the schema: an argument the tool does not
//     know is an error naming it, not silently ignored.
//   - mem_save requires content only: the title is derived from the content
//     when omitted, and type defaults to "observation" (engram: "manual").
//   - scope takes session, user, project, policy or global; engram's
//     "personal" is accepted and read as user.
//   - mem_context budgets in max_tokens (estimated as bytes/4), not
//     max_bytes; engram's compact flag is not offered.
//   - mem_search has no all_projects, match_mode or response_format; it
//     adds tags, subject, channel, session_id, include_deleted and namespace.
//     since and until take YYYY-MM-DD or RFC 3339; a bare until date
//     includes that whole day.
//   - mem_stats counts per namespace rather than per project.
//   - mem_delete's hard_delete is a retract: final on every node.
//   - mem_compact's compact_ids is an array of id strings, or a string
//     holding one (engram's form); an empty list is an error, not a no-op.
//     Identify mode rejects a summary, since nothing would be written.
//   - Not offered: mem_capture_passive, mem_merge_projects, mem_judge,
//     mem_compare, mem_pin and other engram-only tools.
//
// # Namespaces
//
// Tools that read or write a place take namespace: omitted means the
// caller's own agent namespace for writes and everything readable for
// reads; a relative path ("subagent/task-1") is resolved under the caller's
// agent by the service; a full address names another namespace. Tools that
// address one memory or session by id (mem_get_observation, mem_update,
// mem_delete, mem_session_end) take no namespace: ids are global, and the
// service checks the caller may read or write that memory's namespace.
// mem_suggest_topic_key touches no data and takes none either.
//
// # Who a tool acts as
//
// Every tool acts as one principal, fixed when the server is built, and
// needs only that principal's permissions on the namespaces it touches —
// never the owner token as such. The owner-only parts of the HTTP API
// (issuing tokens, cluster status and sync, handover, metrics, importing
// with the file's authors) have no tool. So:
//
//   - `mnemo mcp` running the node in process acts as the node's owner
//     agent (mcpservice.New with the owner as caller).
//   - `mnemo mcp` attached to the node holding the directory authenticates
//     with DIR/token, the owner token, and so acts as the owner too: the
//     same tools, the same answers as in process. With --node URL and
//     MNEMO_TOKEN set to a token issued for a principal (POST /v1/tokens),
//     it acts as that principal, exactly as a /mcp session opened with that
//     token does.
//   - /mcp acts as the principal of the token that opened the session.
//
// Permissions, not the transport, decide what succeeds: mem_approve needs
// admin on the memory's namespace (the owner has it on its own agent
// namespace, a team's creator on the team); mem_share, mem_promote and
// mem_merge_duplicates need write on the target namespace, which no tool
// creates (`mnemo ns create` and grants do); mem_capsule_create needs
// share on each memory's namespace.
//
// # HTTP
//
// NewHTTPHandler builds one MCP session per client (stateful streamable
// HTTP); the backend is chosen from the request that initializes the
// session, so each session acts as the principal that opened it. Sessions
// are bounded (sessions.go): idle ones close after SessionIdleTimeout (30
// minutes), and past MaxSessionsPerPrincipal (16) for one principal or
// MaxSessions (256) in all, opening one closes the least recently used —
// its client gets 404 and initializes again. So a flood of initialize
// calls holds at most MaxSessions servers in memory, however long it runs.
package mcptools
