// Package projview is the projection-view feature of the memory service: a
// filtered, compressed, read-only view of a source namespace delivered to a
// target agent. Package projection decides what goes in; this package keeps
// the view. Attach New() to a Service (memory.Config.Features) and reach it
// with Of; the HTTP API does.
//
// Where things live. A projection is created on the publisher's node (the
// one holding the source) by a local principal holding share on the
// source. Its view is the inbox namespace
// agent://TARGET/.inbox/CREATOR/proj-ID (see node/memory's inbox.go: only
// the creator writes it, target and creator read it, it replicates to the
// target's node, and the target's searches of its own namespace include
// it). The spec itself is the record "spec" of that namespace (kind
// projection-spec, the projection.EncodeSpec bytes), so it travels with
// the view and the subscriber can list it; a deleted projection keeps its
// spec record with deleted_at set and its view records retracted.
//
// View records. One per source memory in the view, with an id derived from
// (projection, source namespace, source id): the query index keys memories
// by id across namespaces, so a view record cannot reuse the source's id on
// a node holding both. It holds the memory projected to the spec's level
// (projection.Project), with namespace = the view, projected_from = the
// source memory's namespace, lineage = the source id, provenance
// "source:<id>" and "projection:<spec id>", author = the creator (who
// wrote it), content_hash of the projected content, and the source's
// created_at and updated_at.
//
// Maintenance. After every change the store applies (local writes and
// remote deltas alike: the feature is a memory.ChangeObserver, and
// Core.Touched names the memories a change re-views), each live projection
// created on this node by a local principal, not deleted, whose source
// contains the changed memory's namespace, brings that memory's view
// record to what the spec says now, in one transaction that reads the
// source and the view together: the effective source memory (approved
// edits applied, node/memory's surgery.go) matches → upsert (written only
// when a projected field differs; a removed record comes back); it does
// not match (soft-deleted and quarantined memories never do) and the view
// shows it → remove (the view record is soft-deleted: it leaves the
// subscriber's searches); the source retracted it (or an approved edit
// did) and the view has it, even soft-deleted → retract, final. syncViewTx
// reads what the view holds and asks projection.DecideView, so the
// decision is idempotent and a crash between a source write and its view
// write is repaired at the next Open (the feature is a memory.Opener:
// every live projection is reconciled with its source then). A snapshot
// (live false) is filled at creation and never touched again until
// deleted. Inbox namespaces are never a source: what was delivered is not
// delivered again.
//
// Delivery figures. ProjectionInfo.Memories counts what the view shows on
// this node (the index answers it); LastDelivery is the newest write its
// view records hold here, the creator's node's clock when it wrote them.
// The feature is a memory.MemoryObserver: every memory record passes
// through ObserveMemory at Open's scan and after each write or peer delta,
// so it keeps one time per view namespace and no list call scans a view.
// A retraction carries no time and does not move it. There is no lag
// figure: on the creator's node the view is written in the same change
// hook as its source, so a source change not yet in the view exists only
// when that write failed (logged, repaired at the next Open); the lag that
// remains is the view namespace's replication to the target's node, which
// the replication engine's agreement (the console's cluster page) and the
// replication lag histogram show.
package projview
