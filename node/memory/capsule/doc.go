// Package capsule is the capsule feature of the memory service: a curated,
// expiring bundle of memories about one subject, delivered to an audience
// of agents. Attach New() to a Service (memory.Config.Features) and reach
// it with Of; the HTTP API, the MCP tools and the context bundle do.
//
// Storage. A capsule is written by its creator C (an agent root) into one
// inbox per audience member A: agent://A/.inbox/C/capsule-<id> (see
// node/memory's inbox.go). Each inbox holds a meta record (id "capsule", kind "capsule":
// subject, risks, audience, author, created_at, expires_at, and a revoked
// timestamp) and one memory per item: a snapshot of the source memory's
// effective view at creation (content, title, type, tags, scope, subject,
// …), lineage = the source id, copied_from = its namespace (the source's
// retract, block and quarantine follow the item: node/memory's copies.go), provenance =
// the source's plus "source:<id>", "author:<source author>", "author:<C>",
// "capsule:<id>", tagged "capsule". The inbox rule makes C the only writer
// and A and C the only readers; inbox namespaces replicate to A's node, so
// only the audience's nodes receive a capsule.
//
// Creation needs read and share on every source memory's namespace, as
// Share does: an id the caller cannot read is "not found" (404, the id's
// existence is not revealed), one it can read but not share is denied
// (403); either way nothing is written. Memories in inboxes (capsule items
// included) cannot be shared, so a capsule cannot re-deliver another one.
//
// Expiry and revocation are enforced at read time on every node with the
// Service's clock: the items of a capsule that has expired, was revoked,
// or whose meta record has not arrived (yet) are invisible to every read
// path — search, list, context, timeline, export (the core's ReadGate, which this feature is) and
// get/update/delete by id. Collection: Sweep retracts,
// on the creator's node (the writer, so the retraction replicates), every
// record of each expired capsule; it runs at Open, on each capsule list
// and create, and may be called on a timer (the node does). Revoke (creator only) sets the
// revoked flag and retracts the items at once; the meta record stays,
// showing "revoked", until the capsule would have expired.
//
// Forwarding (the spec's optional "B forwards to C with an audit trail")
// is not implemented: an audience member cannot share capsule items (the
// inbox rule grants nobody share), and would create a new capsule from its
// own memories instead.
package capsule
