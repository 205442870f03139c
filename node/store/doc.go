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
// Every change, local or from a peer, is a crdt delta applied by Apply (or
// built by Update) in a KV transaction that is durable before Apply returns (badgerkv syncs it to
// disk), so an acknowledged write survives kill -9. Apply joins the delta
// record by record (crdt.JoinRecord against the stored entry) and never
// holds a namespace in memory: only the causal contexts (a few bytes per
// replica) stay resident.
//
// # Writes: group commit
//
// A delta's dots are allocated from the namespace context, so two edits
// must not be computed at once: writes run one at a time. But each used to
// wait for its own sync, so writers queued behind one fsync each. Now every
// write (Update's closure, Apply's deltas) is a request in one bounded
// queue (Options.MaxPending; a writer past it waits for a place), and the
// writer that takes the lead commits a group (group.go): it takes requests
// off the front, in order, and for each runs the closure against the
// group's one KV transaction — a Tx reads through it, and the contexts as
// the requests before it left them, so read-modify-write sees every earlier
// request of the group — seals what it built, and joins it into the
// transaction. One commit (one sync) then makes the whole group durable,
// and only then are the contexts in memory changed and each request
// released with its own Changes, so nothing is acknowledged, nor visible
// through Context, before it is on disk. Requests that arrive while a group
// is built join it; the ones that arrive during its sync form the next.
//
//   - A closure that fails (or panics) has written nothing into the
//     transaction (a Tx only builds deltas; they are joined after the
//     closure returns), so it is refused alone and the group goes on. A
//     panic is re-raised in its own submitter's goroutine, not the leader's.
//   - An error while joining a request's deltas (a corrupt stored record,
//     the transaction too big) leaves part of them in the transaction, so
//     the group is abandoned: nothing was committed, the requests before
//     it are put back at the front of the queue with the deltas they built
//     (re-applying them in order gives the same state; no closure runs
//     twice), and the failing request fails — or, if it was only too big
//     to share a transaction, is committed after them in a group of its
//     own, and fails only if it is too big alone.
//   - A commit that fails fails every request in the group with its error
//     and changes nothing in memory; requests put back whose deltas were
//     built over that group's state fail too. A commit refused as too big
//     is retried in halves.
//   - A group stops taking requests at Options.GroupMax requests or
//     Options.GroupBytes written (a soft bound, well under Badger's limit of
//     15% of its memtable per transaction), so splits are rare.
//
// Badger's own write batching was considered instead (commit outside the
// mutex, let its write goroutine batch concurrent commits): in v4.9.6 it
// does not share the sync — writeRequests calls writeToLSM per request and
// writeToLSM ends with mt.SyncWAL() when SyncWrites is on (db.go) — and a
// transaction's read timestamp waits for every earlier commit to finish
// (oracle.readTs, txnMark), so the next writer would wait for the sync
// anyway.
//
// A closure should read through its Tx: Store.Record and Store.Context see
// only what is committed, not the requests before it in its group. The
// node's derived state (the search index, fed by the returned Changes)
// is updated by each writer after its request returns, as before.
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
