// Package httpapi serves a node's memory Service as a local HTTP JSON API.
//
// New returns an http.Handler; the node mounts it on its loopback listener.
// Every route under /v1 needs "Authorization: Bearer <token>" (compared in
// constant time; 401 "unauthorized" otherwise). GET /healthz answers
// {"status":"ok"} without a token.
//
// Routes (JSON bodies and answers, snake_case field names):
//
//	POST   /v1/memories                 save; 201 created, 200 when a topic_key upserted ("upserted")
//	GET    /v1/memories/{id}            ?include_deleted=true &include_quarantined=true &channel= (blocked for it: 404)
//	PATCH  /v1/memories/{id}            change the given fields
//	DELETE /v1/memories/{id}            soft delete; ?hard=true retracts; 204
//	GET    /v1/search                   ?q= &limit= &include_deleted= &feedback= + filters → {"results":[{"memory","score"}],"total"}
//	                                    (total is exact below 1,000; from 1,000 on it may be a lower bound: memapi.SearchTotalExact)
//	GET    /v1/timeline                 ?id= &before= &after= + filters
//	GET    /v1/context                  ?max_tokens= + filters
//	POST   /v1/compact                  identify (older_than_days) or execute (compact_ids)
//	GET    /v1/stats                    ?namespace=
//	GET    /v1/export                   ?namespace=
//	POST   /v1/import                   ?namespace= &preserve_provenance=true (owner token only); body: a mnemo or engram export
//	POST   /v1/sessions                 start (idempotent by id); 201
//	POST   /v1/sessions/{id}/end        optional body {"summary"}
//	POST   /v1/sessions/{id}/summary    saves a summary memory
//	POST   /v1/prompts                  saves a prompt memory
//	POST   /v1/progress                 upserts the progress note of a project
//	GET    /v1/namespaces               {"namespaces":[{"namespace","kind","root","root_source","permissions"}]}
//	POST   /v1/namespaces               {"namespace":"team://x"}: create (caller = creator, admin); 201, 409 if it exists
//	GET    /v1/grants                   ?namespace= → effective grants, who signed them (rejected records: admins only)
//	POST   /v1/grants                   {"namespace","principal","permissions":[…]}: grant; 201
//	DELETE /v1/grants                   same body: revoke; 200
//	POST   /v1/share                    {"id","namespace"}: copy with lineage; 201, 200 if that copy existed
//	POST   /v1/promote                  {"id","namespace","mode":"copy"|"move"}; 201
//	POST   /v1/retract                  {"id"}: final removal; 200 {"retracted"}
//	POST   /v1/tokens                   {"principal"}: owner token only; 201 {"principal","token"}
//	POST   /v1/projections              {"source","target","filter":{…},"level":"L2","live":true}: share holders; 201 with the projection
//	GET    /v1/projections              those the caller created or receives → {"projections":[{"id",…,"view","memories","last_delivery"}]}
//	DELETE /v1/projections/{id}         the creator ends it, its view empties; 204
//	POST   /v1/edits                    {"target_id","op","reason","patch":{"text","importance","importance_delta","channel"}}: 201 {"edit_id","status"}
//	POST   /v1/edits/{id}/approve       admin of the memory's namespace; 200 the edit; 409 if decided or needing no approval
//	POST   /v1/edits/{id}/reject        same
//	GET    /v1/audit                    ?id=MEMORY &status=pending|approved|rejected &namespace= → {"edits":[…],"needs_resummary":[…]}
//	POST   /v1/capsules                 {"subject_type","subject_id","project","audience":[…],"ids":[…]|"query":{…},"ttl_days","risks"}: 201
//	GET    /v1/capsules                 ?subject_type= &subject_id= → those available to the caller, and those it created
//	GET    /v1/capsules/{id}            with its items (audience and creator; 404 once expired or revoked)
//	DELETE /v1/capsules/{id}            revoke (creator only)
//	POST   /v1/context/bundle           {"session_id","channel","subject_type","subject_id","project","max_tokens"}: decisions, capsules, recent; budget split reported
//	GET    /v1/duplicates               ?namespace= → near-duplicate pairs the caller can read
//	POST   /v1/duplicates/merge         {"ids":[…],"namespace"}: merge within a shared namespace
//	GET    /v1/members                  {"members":[{"node_id","key","agents","addr","state"}]} (the node alone without a cluster key); any token
//	GET    /v1/status                   owner token only: replication per peer; ?digests=true adds each namespace's state digest (a full scan) and "agreement": each peer's last told context against ours
//	POST   /v1/sync                     owner token only: {"peer"} ("" = every peer): digest sync now; 202, 409 without replication
//	POST   /v1/handover                 owner token only: {"principal","to"}: hand an agent this node hosts over to the node whose key (from /v1/members) is "to"; 409 if not hosted here, 501 without replication
//	GET    /metrics                     owner token only: Prometheus metrics (below)
//	GET    /debug/pprof/{profile}       owner token only: the Go runtime's profiles of the node process (heap, allocs, goroutine,
//	                                    mutex, block, threadcreate as runtime/pprof writes them, ?debug=1 for text; profile =
//	                                    CPU for ?seconds=, default 30; trace) for `go tool pprof`; other names 404
//	*      /mcp                         the MCP tools over streamable HTTP (token required; caller resolved as for /v1;
//	                                    Config.MCP bounds the sessions: 16 per principal, 256 in all, least recently used closed first)
//
// # Metrics
//
// GET /metrics serves a registry of the node's own (node/metrics) through
// client_golang's handler: the Prometheus text format unless the scraper
// asks for another (protobuf, gzip). Durations are in seconds, sizes in
// bytes; counters end in _total. Histograms (each with _bucket, _sum and
// _count series):
//
//	mnemo_http_request_duration_seconds{route,code}    every request to this handler, /metrics and /mcp included; route is the
//	                                                    ServeMux pattern that matched ("POST /v1/memories", "/mcp"; "/" for
//	                                                    any path no route claims; "unmatched" for the mux's redirects)
//	mnemo_mcp_tool_call_duration_seconds{tool,outcome} tools/call on /mcp, and on stdio when `mnemo mcp` runs the node itself;
//	                                                    tool "unknown" for a name the server does not offer; outcome
//	                                                    "error" for a tool error, bad arguments or no such tool
//	mnemo_memory_operation_duration_seconds{op,outcome} op "save" (until durable) or "search", from HTTP, MCP or any other caller
//	mnemo_replication_lag_seconds{path}                 per peer delta applied: now − its newest write's timestamp (the author's
//	                                                    clock, so skew included; never below 0); path "live" or "sync"
//	mnemo_sync_duration_seconds                         per namespace of a digest sync this node asked for: request → the answer's last message
//	mnemo_sync_received_bytes                           the namespace state that answer carried (delta payloads, before compression)
//
// Counters and gauges (read at each scrape unless said otherwise):
//
//	mnemo_memories, mnemo_memories_deleted                 gauges: memories the owner can read, live and soft-deleted
//	mnemo_mcp_sessions, mnemo_mcp_sessions_evicted_total   live MCP sessions; sessions closed to make room
//	mnemo_replication_frames_total{direction,kind}         recorded as they move: frames to a peer's sender ("sent") or
//	mnemo_replication_frame_bytes_total{direction,kind}    decoded from a peer ("received"), and their bytes on the wire;
//	                                                       kind deltas, ack, sync-request, sync-reply, bindings
//	mnemo_replication_applied_total, _rejected_total, _dropped_frames_total, _local_overflows_total,
//	mnemo_replication_binding_conflicts_total              the counters of GET /v1/status
//	mnemo_peer_queue_depth{peer}, mnemo_peer_queue_bytes{peer}, mnemo_peer_in_flight_batches{peer}   gauges
//	mnemo_peer_deltas_sent_total, _deltas_received_total, _rejected_total, _state_errors_total, _fallbacks_total,
//	_retransmits_total, _syncs_requested_total, _sent_bytes_total (each mnemo_peer_…{peer})  the per-peer counters of
//	                                                       GET /v1/status (queue_depth, deltas_sent, …, syncs_sent, bytes_sent)
//
// The replication figures appear only on a node that replicates, the
// per-peer ones only for peers it addresses. Besides these, the Go
// runtime's (go_goroutines, go_memstats_heap_inuse_bytes,
// go_gc_duration_seconds, …) and the process's (process_resident_memory_bytes,
// process_cpu_seconds_total, …) standard collectors. Labels take values
// from fixed sets only, so a client cannot add series (node/metrics doc.go).
// The names of the hand-written exposition this replaced are kept;
// mnemo_peer_in_flight_batches, _syncs_requested_total and _sent_bytes_total
// are new. node/metrics/grafana/mnemo.json is a Grafana dashboard of them.
//
// Filters (query parameters): namespace, type, tags (comma separated, all
// of), project, scope, subject_type, subject_id, session_id, channel, since,
// until (RFC 3339).
//
// Decisions a client should know:
//
//   - Errors are {"error":{"code","message"}} with codes invalid_request
//     (400), unauthorized (401), permission_denied (403), not_found (404),
//     method_not_allowed (405), conflict (409), too_large (413),
//     unavailable (503, the request was cancelled or timed out) and internal
//     (500; the cause is logged, the message is generic).
//   - Strict input: an unknown query parameter, a parameter given twice, a
//     value that does not parse (limit=abc, since=yesterday), malformed JSON,
//     an unknown JSON field or trailing data after the JSON value are all 400
//     and the message names the culprit. A typo should fail loudly rather than
//     be silently ignored as a filter.
//   - Strings must be text: a JSON string (body or import file) or query
//     value holding bytes that are not UTF-8, an unpaired surrogate escape
//     or a NUL is 400 naming the field ("tags[1]", "memories[3].title"),
//     never stored with U+FFFD in place of the bytes (memapi.CheckJSONText).
//   - Bodies are capped (Config.MaxBodyBytes, default 2 MiB; imports
//     Config.MaxImportBytes, default 64 MiB); more is 413.
//   - Who asks is decided in one place, callerFor. The owner token acts
//     for any local principal: the one Config.Sessions (the node's principal
//     rules) maps its X-Mnemo-Session header to, the owner agent without a
//     header or a matching rule. A principal-bound token (Config.Tokens,
//     POST /v1/tokens) acts only as its principal and ignores the header.
//     /mcp takes its caller the same way, fixed when the MCP session opens;
//     a later request on that session by another principal is refused (403).
//   - Node-wide routes are the operator's: POST /v1/tokens, GET /v1/status
//     (with or without digests), POST /v1/sync and GET /metrics need the
//     owner token; a principal-bound token gets 403 permission_denied.
//     Their answers count or scan every namespace the node holds, so even
//     the plain status (namespace names, per-peer traffic) would tell a
//     principal about namespaces it may not read. GET /v1/members stays
//     open to every token: it lists nodes and the agents they host, which a
//     principal needs to pick whom to grant or share with and which gossip
//     already tells every member; it names no team or project namespace.
//   - What the caller may do is decided by the memory Service (acl policy):
//     a denial is 403 permission_denied naming the missing permission; an
//     id the caller may not read is 404, as if it did not exist; an unknown
//     permission or a malformed address is 400 naming it.
//
// # Encoding search answers
//
// GET /v1/search is the hot route (README, "Search at 100k over HTTP"). Its
// answer, ten memories of about 1 KB each, is encoded by encoding/json into
// a kept buffer (at most four idle, of at most 64 KiB, in a channel: a
// sync.Pool is emptied by each collection, and under the node's memory
// limit the collector runs most of the time) and written once with its
// Content-Length, instead of streaming through the response writer's 4 KiB
// buffer in chunks; the bytes are the same (TestQueriesShapes compares
// them). An encoder without reflection, written for SearchResult and
// checked byte for byte against encoding/json on random results, encoded
// those ten memories in 12–13 µs instead of 25 (a benchmark of ten
// typical memories, 3 runs each): about 1% of a search's CPU, so it was
// not kept — a second encoding of Memory to keep in step with its fields
// costs more than that.
package httpapi
