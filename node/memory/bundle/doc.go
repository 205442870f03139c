// Package bundle builds the context bundle (build_context): for a session
// and channel, and optionally a subject and project, the active decisions
// by precedence, the capsules available to the caller, the most relevant
// recent memories and what other agents delivered to the caller's inbox,
// fitted to max_tokens. It reads through a Source (node/memory's Service)
// and stores nothing.
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
package bundle
