// Package surgery is the memory-surgery feature of the memory service:
// governed edits of a memory that hold on every replica, their audit log,
// and the copies they follow. Attach New(approvals) to a Service
// (memory.Config.Features) and reach it with Of; the HTTP API, the MCP
// tools and hard deletes (memory.Retracter) do.
//
// Storage. An edit (retract, amend, quarantine, attenuate, block) is a
// record in the SAME namespace as the memory it targets: id "edit:" +
// its id, field k = "edit", field ed = the sealed edit (a canonical
// msgpack array signed by the proposing node's identity on the
// proposer's behalf). An approval or rejection is a record "appr:" + its
// id, k = "appr", field dc = the sealed decision. Both are written once and
// never modified or retracted: memory operations cannot reach those ids
// (they are never indexed, and saves refuse the prefixes), and
// ApplyRemote refuses a delta that would retract one, change one, or
// carry one whose signature does not verify. So the audit log — the set
// of these records — is grow-only by construction and replicates with the
// namespace.
//
// Status. An edit that does not need approval (the Approvals given to New) is
// approved when made. One that does is pending until a decision record
// counts: its signature verifies, its signer key is the one the approver
// principal is bound to, and the approver holds admin on the namespace
// under the current policy. Of the counting decisions the earliest by
// (clock, id) decides, so every replica holding the same records agrees.
// Targets with such edits are re-viewed whenever the policy changes. An
// edit's own authority (write on the namespace) is checked when it is
// made here and, for a peer's, by the replication gate on the delta's
// author; its signature is checked on load and on arrival.
//
// The effective view. Package effective applies the approved edits of one
// memory deterministically: by op precedence retract, block, quarantine,
// amend, attenuate, and within an op by (clock, edit id). So an attenuate
// always applies to the amended importance, and of two amends the later
// one's fields win. the core's effective view, which this feature takes part in (View), is
// the one place reads go through: index (the
// search doc gets the amended text, Hidden = quarantined, Blocked = the
// blocked channels; a retracted memory leaves the index), Get, load
// (search, timeline, context, export, compaction) and the results of
// save and update. An amend's text replaces the content, and the title
// too when the title was derived from the content (an explicit title
// stays). An amend shadows later plain updates of the same fields: a governance decision is not undone by an ordinary write; amend
// again to change it.
//
// Retract. A retract that is approved also performs the real CRDT
// retract of the target in the same transaction (final, content purged on
// every replica); the edit record stays as the audit entry. A replica
// that has the edit before the purge arrives already hides the memory.
// Copies and derived data (copies.go): an approved retract, block or
// quarantine follows the memory's copies as edits of their own; a memory
// derived from a retracted one is flagged (memapi.Memory.NeedsResummary).
package surgery
