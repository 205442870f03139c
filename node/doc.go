// Package node runs the mnemo sidecar: one agent's memory Service behind a
// local HTTP JSON API (package httpapi), with the files other processes use
// to find and talk to it.
//
// Use:
//
//	n, err := node.Open(node.Config{Dir: dir, Agent: "alice"})
//	if err != nil { … }           // e.g. the directory is held by another process
//	fmt.Println(n.Addr())         // http://127.0.0.1:7070
//	err = n.Serve(ctx)            // blocks until ctx is done, then shuts down
//
// The data directory holds
//
//	token      the owner's bearer token: 32 random bytes, base64url, mode 0600,
//	           written on first start and never rotated by the node
//	node.json  {"pid","http","agent"} of the running node, mode 0600, written
//	           once the listener is bound and removed on clean shutdown; a
//	           crash leaves it behind, so readers must treat it as a hint
//	           (the next start overwrites it)
//
//	node.key     the node's ed25519 private key (acl.Identity.EncodePrivate),
//	             mode 0600, made on first start; the node id and the CRDT
//	             replica id derive from its public key. A corrupt file stops
//	             the node (replacing it would make it another node, whose
//	             earlier grants no longer count).
//	config.json  optional settings (see SettingsFile): principal_rules
//	             mapping X-Mnemo-Session keys to principals, auto_promote.
//	             Missing: no rules; invalid: the node refuses to start.
//	tokens.json  principal-bound tokens issued by POST /v1/tokens: the
//	             SHA-256 of each token and its principal, mode 0600.
//
// plus what node/store/badgerkv keeps there (Badger and its lock file).
// Only the owner may reach any of it: Open removes group and other access
// from the directory and everything under it (0700 / 0600), warning for
// each path it changed, and tightens files the store creates later quietly
// (perms.go). A cluster key file is not the node's to change:
// ReadClusterKey refuses one group or others may read, naming the chmod.
//
// Principals: the owner token may act for any local principal; the node's
// local principals are the owner agent, every principal a static rule
// names, every principal a token is bound to, and every principal a
// session key has resolved to (Node.Principals). They are bound to the
// node's key, so acl records the node signs on their behalf count, and a
// project namespace is readable by them. With replication, the node claims
// each of them with a signed binding (node/cluster); a principal another
// node already hosts is not claimed (logged and counted), and POST
// /v1/tokens refuses a token for it with 409: a node cannot make itself
// the host of someone else's agent by issuing a token.
//
// Decisions:
//
//   - Open takes the memory Service first, so its directory lock is held
//     before the node touches token or node.json: a second process on the
//     same directory fails with memory's error (naming the holder's pid) and
//     changes nothing.
//   - The listener is bound in Open, not Serve, so Addr is known (port 0
//     picks a free port) before anything is printed or written. Connections
//     that arrive before Serve wait in the kernel's backlog.
//   - HTTPAddr defaults to 127.0.0.1:7070. Any address that is not loopback
//     is allowed but logged as a warning: the token is then the only guard.
//     With FallbackPort (the in-process MCP mode), a busy port falls back to
//     a free port on the same host rather than failing.
//   - Serve shuts down with http.Server.Shutdown (bounded by
//     ShutdownTimeout; requests still running after it are cancelled), then
//     removes node.json, leaves the cluster, then closes the Service, which
//     releases the lock.
//   - Replication (replication.go) starts only with a cluster key
//     (Config.ClusterKey, `mnemo node --cluster-key FILE`); the node then
//     runs a node/cluster loop and answers /v1/members, /v1/status,
//     /v1/sync and the replication part of /metrics. Without a key it is a
//     complete single-node service.
//   - Metrics: each Node makes its own node/metrics registry in Open and
//     wires it to the memory service (save and search latency), the HTTP
//     API (request durations, MCP tool calls, GET /metrics) and the cluster
//     loop (replication lag, syncs, frames); no process-wide registry, so
//     nodes in one process (tests) keep their figures apart.
//   - Housekeeping (housekeeping.go) runs at start (the hand-back only)
//     and every SweepInterval: expired capsules this node created are
//     collected, and Badger's mapped file pages and the executable's
//     read-only pages are handed back to the kernel (its page cache keeps
//     them); between two, Badger's whenever searches have added
//     FilePagesBudget of them (pages.go).
package node
