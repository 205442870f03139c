// Package store keeps a node's replicated state in Badger: for every
// namespace its causal context, its record entries (one key each, encoded
// with crdt.EncodeRecord) and its retracted ids.
//
// All of the store's logic runs over a narrow ordered key-value seam (KV,
// kv.go): Badger implements it on a node (badger.go), MemKV in memory for
// the simulator and for tests (memkv.go). MemKV can crash — PowerCut
// loses an Update that has not committed, Restart returns what a restarted
// process finds — so a node reopened over it runs its real reopen path.
// TestBackendsAgree runs one seeded history through both and compares every
// read.
//
// Every change, local or from a peer, is a crdt delta applied by Apply in one
// Badger transaction that is synced to disk before Apply returns, so an
// acknowledged write survives kill -9. Apply joins the delta record by record
// (crdt.JoinRecord against the stored entry) and never holds a namespace in
// memory: only the causal contexts (a few bytes per replica) stay resident.
//
// Writes are serialised by one mutex: a delta's dots are allocated from the
// namespace context, so two edits must not be computed at once. Update runs
// a read-modify-write closure under that mutex and applies what it built.
//
// Key layout (the namespace address never contains a NUL byte):
//
//	n/<ns>            causal context of the namespace
//	r/<ns>\x00<id>    record entry
//	x/<ns>\x00<id>    retracted id (empty value)
//	m/<name>          node metadata (clock, identity)
//
// Badger is tuned for a sidecar (see Options): small memtables and caches,
// values over 1 KiB in the value log. A lock file (mnemo.lock, holding the
// pid) makes a second process fail with ErrLocked naming the holder before
// Badger is touched.
package store
