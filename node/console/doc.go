// Package console is the node's web console, served at /ui/ beside the
// HTTP API: people sign in with the owner token or a principal-bound token
// and see, in a browser, what that principal's agents remember and share —
// memories with their provenance, lineage and edits; pending edits, the
// audit log and capsules; namespaces with their grants; projections; the
// cluster's members, per-peer counters, agreement and digests — and do what
// that principal may do.
//
// Decisions:
//
//   - Same authorizer. Every page and action calls the memory service (and
//     its surgery, capsule and projection-view features) with the session's
//     principal as the Caller, exactly as the API's handlers do, so the
//     console can never show or do more than the API would. Permission
//     checks in this package only decide which forms to offer; the service
//     decides what happens. The replication status and digests are
//     owner-only, as GET /v1/status is.
//   - An owner-token session may view the console as any local principal
//     of the node (POST /ui/view-as), as the API's owner token may act as
//     one through the X-Mnemo-Session header; it stays an owner session,
//     so the owner-only status remains. A principal-token session cannot.
//   - Server-rendered html/template pages and one small vanilla script
//     (confirmations and live updates), embedded with embed: the console
//     works offline, fetches nothing at run time, and needs no build step.
//     No third-party front-end code is vendored.
//   - Sign-in is a form POST; the token is checked (constant time for the
//     owner token) and forgotten. The session id lives in a cookie that is
//     HttpOnly, SameSite=Strict and scoped to /ui/; no token or session id
//     ever appears in a URL. Sessions are bounded in number (the least
//     recently used is signed out) and expire when idle and at a fixed
//     lifetime; the clock is Config.Now.
//   - Every state-changing request passes net/http's CrossOriginProtection
//     (Sec-Fetch-Site, or Origin against Host) and must carry the session's
//     CSRF token in its form. Sign-in passes the origin check too.
//   - Every answer carries a strict Content-Security-Policy (scripts and
//     styles from this origin only, no inline code, no framing) and the
//     same DNS rebinding guard as the MCP endpoint: a request arriving on a
//     loopback address must name a loopback host.
//   - Live updates: memory.Service.OnChanged tells the console which
//     namespaces a local write or a peer's delta changed; each open event
//     stream (at most 4 per session) holds a bounded set of changed
//     namespaces and sends only those its principal may read. A page with
//     no unsent input reloads; otherwise it shows a banner.
//   - Delete is the API's soft delete (the memory is kept, marked
//     deleted); retraction, which is final, goes through a proposed edit.
//   - Agreement across peers is shown as causal contexts, not digests. A
//     namespace's digest hashes its whole state, a full scan, and a node
//     knows only its own; what peers do tell each other, in every digest
//     sync, is their causal context of each namespace (the writes seen).
//     The replication engine remembers the last one each peer told
//     (replica.Engine.Agreement), so the cluster page lists, per peer and
//     namespace, whether that context is equal to this node's now, behind,
//     ahead or concurrent, and how old it is. That comparison is the one
//     digest sync itself makes; equal contexts with unequal states (a
//     writer that equivocates) are not seen by it, which is why the page
//     keeps this node's digests beside it for comparing across nodes by
//     hand. The knowledge is as fresh as the pair's last sync: live deltas
//     move contexts without a word. Owner-only, as the digests.
//   - The projections page shows, per projection, the memories its view
//     shows on this node (delivered) and how long ago the newest change
//     this node holds of the view was written into it (projview keeps
//     that time per view as records pass, so the page scans nothing). It
//     shows no lag figure of its own: the creating node writes the view in
//     the same change hook as the source, so the only lag left is the
//     view namespace's replication to the target's node, which the
//     cluster page's agreement row for the view namespace shows the owner
//     (and the replication lag histogram, /metrics). A principal session
//     does not see it: it is read from the owner-only status.
package console
