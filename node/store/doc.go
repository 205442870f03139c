// Package store keeps a node's replicated state: for every namespace its
// causal context, its record entries (one key each, encoded with
// crdt.EncodeRecord) and its retracted ids.
//
// All of the store's logic runs over a narrow ordered key-value seam (KV,
// kv.go), handed to Open: Badger implements it on a node (package
// node/store/badgerkv, which this package does not import, so the memory
// core and the simulator link no Badger), MemKV in memory for the
// simulator and for tests (memkv.go). MemKV can crash — PowerCut loses an
// Update that has not committed, Restart returns what a restarted process
// finds — so a node reopened over it runs its real reopen path.
// badgerkv's TestBackendsAgree runs one seeded history through both and
// compares every read.
//
// Every change, local or from a peer, is a crdt delta applied by Apply in one
// KV transaction that is durable before Apply returns (badgerkv syncs it to
// disk), so an acknowledged write survives kill -9. Apply joins the delta
// record by record (crdt.JoinRecord against the stored entry) and never
// holds a namespace in memory: only the causal contexts (a few bytes per
// replica) stay resident.
//
// Writes are serialised by one mutex: a delta's dots are allocated from the
// namespace context, so two edits must not be computed at once. Update runs
// a read-modify-write closure under that mutex and applies what it built.
//
// Answering a digest sync (Missing) does not read the namespace: a dot
// index, kept in the KV and written in the same transaction as the
// entries, maps every run of consecutive dots an entry holds to that
// entry, so the records a requester lacks are found from the ranges of
// the context it has not seen and only those are read (dotindex.go).
//
// Key layout (the namespace address never contains a NUL byte):
//
//	n/<ns>                              causal context of the namespace
//	r/<ns>\x00<id>                      record entry
//	x/<ns>\x00<id>                      retracted id (empty value)
//	d/<ns>\x00<replica><first><n><id>   dots first..first+n of replica, held by entry id (empty value)
//	o/<ns>\x00<id>                      entry holding a dot outside the context (empty value)
//	s/format                            version of this layout (decimal; 1)
//	m/<name>                            node metadata (clock, identity)
//
// Migration. A store written before the dot index has no s/format key:
// Open builds the index from the entries (a one-time pass over the store,
// in transactions of bounded size, before Open returns) and then writes
// s/format, so an interrupted migration starts over on the next Open. A
// store whose format is newer than this binary's is refused. A binary
// from before the index that writes to a migrated store leaves the index
// behind; after such a downgrade delete s/format (or the data directory's
// state) so that the next Open rebuilds it.
package store
