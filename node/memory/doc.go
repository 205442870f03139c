// Package memory is the node's memory service: every operation an agent or
// operator performs (save, get, update, delete, search, timeline, context,
// compaction, sessions, progress; namespaces, grants, share, promote) and
// the one place where permissions are enforced. The HTTP API, the MCP
// tools, the CLI (through the API) and replication all call a Service, or
// a feature package attached to it (surgery, capsule, projview, dedup,
// transfer, bundle); none of them checks access on its own.
//
// # Storage
//
// A memory is a crdt.Record in its namespace's crdt.Map, kept by node/store
// over the KV the Service is given (Badger on a node, node/store/badgerkv;
// a store.MemKV in the simulator and by default): fields are LWW registers under short names (node/schema), tags,
// linked files and provenance are add-wins sets. Every write is an Edit
// against the stored record, applied as a delta in a synced transaction
// (shared with the writes made at the same time: node/store's group commit) —
// the same path a peer's delta takes (ApplyRemote) — so replication adds
// transport, not a second write path, and an acknowledged write survives a
// crash. Every edit also writes updated_at, so each change adds a dot to its
// record (digest sync finds records by their dots).
//
// Besides memories, a namespace's map holds special records, each with a
// kind field and never offered to memory operations: sessions ("s:" ids),
// signed acl records ("acl:", access.go), and the records of feature
// packages: signed surgery edits and approvals ("edit:", "appr:",
// node/memory/surgery), projection specs ("spec", node/memory/projview)
// and capsule metadata ("capsule", node/memory/capsule). The signed ones
// are written once and refused as changes from peers, so those logs only
// grow.
//
// # Record kinds and features
//
// The core (service.go, write.go, indexing.go, kinds.go, core.go) owns the store, the index, the
// effective view, the Authorizer, local writes and ApplyRemote, and knows no
// feature: features plug in through the Kind interface and optional ones
// the core finds by type assertion — Forgetter, RemoteChecker,
// MemoryObserver, ChangeObserver, SentObserver, Viewer, Affecter,
// ReadGate, PolicyObserver, Retracter, Loader, Opener, Closer (each
// documented in kinds.go). A feature package (node/memory/X)
// implements Feature: Open calls its Attach with the Core, a privileged
// handle (write, view, locate, check) through which it registers and
// works; the node lists the packages it attaches (node/node.go, features),
// and the HTTP API and the MCP tools reach one with X.Of(svc). Surgery
// (with the copies its edits follow), capsule, projview (projection views),
// dedup (duplicates) and transfer (export and import) are such packages;
// the context bundle (bundle) reads through interfaces only. Only acl
// records and sessions, which the Authorizer and the core's own reads
// need, are registered from inside this package (registerFeatures,
// features.go). A record whose kind no attached feature owns is ignored:
// neither a feature's nor a memory.
//
// Adding a record kind:
//
//  1. Name it in node/schema: its kind value, id prefix and field names
//     (names.go), an Is* predicate (record.go), and its prefix in
//     schema.IsReserved if a save must not take such ids.
//  2. Write the feature package node/memory/X: a type with Attach (keep the
//     Core, Register itself), Owns and Admit, plus the optional interfaces
//     it needs (CheckRemote to refuse peers' deltas, Forget for retracts,
//     View or Visible to change what reads see, Changed or Opened for
//     derived state), its API methods, and Of (memory.FeatureOf).
//  3. Attach it in node's features(); serve its API from node/httpapi and
//     node/mcpservice through X.Of.
//
// Nothing in the core changes: Open's scan, index, reindex, ApplyRemote
// and every read dispatch through the registry.
//
// # The audit log grows only
//
// DESIGN.md calls the audit log a grow-only set. Here it is the edit:,
// appr: and acl: records of each namespace's OR-Map, and grow-only holds
// by rule rather than by the crdt type: each is sealed by its author and
// written once under an id derived from its signed bytes, no local path
// retracts or rewrites one (a capsule's revoke or sweep retracts its
// memories, not the audit records stored beside them), and ApplyRemote
// refuses a peer's delta that would (surgery's CheckRemote, checkRemoteACL).
// surgery's TestAuditCannotShrink and capsule's
// TestRevokedCapsuleKeepsItsAudit prove it.
//
// # Reads
//
// The search index (node/search) is derived: rebuilt from the store at Open
// and updated after every write. Writers reindex after their commit,
// concurrently, so two writes of one memory may reach the index in the
// other order; a put whose write is no longer the last committed reads the
// record again (putMemory), so the index ends on the last write. The puts
// are ordered under one lock, and each writer makes its memory's view and
// tokenizes it (search.Index.Prepare) before taking it; under it the work
// is made again only if the record was written again or a feature re-viewed
// memories (Core.Reindex) meanwhile. Every read goes through one effective view
// (view: the surgery feature's Viewer applies approved edits; the capsule
// feature's ReadGate hides dead capsule items), and through readScope, which
// limits a query to the namespaces the caller may read: with no namespace,
// every namespace the node holds that the caller may read, merged into one
// ranked list. Token budgets (Context, bundles) estimate one token per four
// bytes, rounded up.
//
// # Copies
//
// A copy (share, promote, capsule item) names its source: lineage (the
// id) and copied_from (the namespace). An approved retract, block or
// quarantine of a memory follows its copies as edits of their own, signed
// and audited in each copy's namespace and naming the original edit
// (Edit.Follows), so a copy is hidden or purged on every node that holds
// it, even one that never held the original. The node that decided the
// edit follows every copy it holds; a node that receives the edit follows
// the copies its own principals made. Only edits stored in the
// namespace copied_from names are followed, so nobody reaches a copy
// without authority over its source. See node/memory/surgery (copies.go).
//
// # Permissions
//
// The default Authorizer is the acl Policy built from the verified signed
// records the store holds (access.go), plus the inbox rule (inbox.go):
// agent://TARGET/.inbox/WRITER/... is written only by WRITER and read by
// TARGET and WRITER; projections and capsules are delivered that way. An id
// the caller cannot read is reported as not found, so ids do not leak.
// Replication asks MayReadAddress and MayWriteAddress (MayRead and
// MayWrite of a namespace it parsed once) and gets the default
// Authorizer's answer without the error a refusal would build.
//
// # Other agents' words
//
// An inbox (agent://TARGET/.inbox/WRITER/...) holds what WRITER put there:
// TARGET's default reads include it, so every read marks it with
// Memory.From = WRITER — search, timeline, get, context, export, bundles,
// and the text the MCP tools render ("[from agent://WRITER]"). The context
// bundle shows such memories under "From other agents", capped at 15% of
// its budget, and never among "Active decisions", whatever their type,
// scope or importance.
//
// Scope. An inbox writer may set any scope; the scope is stored as written
// and ignored for precedence, not refused. A refusal at Save would guard
// only this node's API: a cluster member's delta never passes through
// Save, so the reader must not trust the field whatever path it came by.
// And capsules and projections legitimately carry their source's scope
// ("policy" in the writer's namespace), which the reader should see as
// what it is — the writer's policy, not its own. So trust is decided at
// read time, by the namespace's writer, where no peer can forge it.
//
// # Errors
//
// Methods return errors wrapping ErrInvalid (400), ErrNotFound (404),
// ErrConflict (409), ErrTooLarge (413) or acl.ErrDenied (403), with a
// message that says what was wrong; a rejected request changes nothing.
//
// # The API's types
//
// The request and response types, the limits and the sentinels are
// node/memapi's, re-exported here under the same names (api.go), so the
// HTTP client, the MCP tools and the CLI use them without linking Badger.
package memory
