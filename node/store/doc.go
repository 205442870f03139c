// Package store keeps a node's replicated state: for every namespace its
// causal context, its record entries (one key each, encoded with
// crdt.EncodeRecord) and its retracted ids.
//
// All of the store's logic runs over a narrow ordered key-value seam (KV,
// kv.go), handed to Open: Badger implements it on a node (package
// node/store/badgerkv, which this package does not import, so the memory
// core and the simulator link no Badger), MemKV in memory for the
// simulator and for tests (memkv.go). MemKV can crash — PowerCut loses an
// Update that has not committed, and a commit no Sync has covered yet;
// Restart returns what a restarted process finds — so a node reopened
// over it runs its real reopen path.
// badgerkv's TestBackendsAgree runs one seeded history through both and
// compares every read.
//
// Every change, local or from a peer, is a crdt delta applied by Apply (or
// built by Update) in a KV transaction that is durable before Apply
// returns (a sync begun after its commit has ended), so an acknowledged
// write survives kill -9 and a power cut. Apply joins the delta
// record by record (crdt.JoinRecord against the stored entry) and never
// holds a namespace in memory: only the causal contexts (a few bytes per
// replica) stay resident.
//
// # Writes: group commit, pipelined
//
// A delta's dots are allocated from the namespace context, so two edits
// must not be computed at once: writes are built one at a time. But each
// used to wait for its own sync under the one write mutex, so writers
// queued one fsync each. Now a write (Update's closure, Apply's deltas)
// goes through four stages (group.go):
//
//  1. Build, one write at a time (Store.build): the closure runs against
//     the committed state — a long-lived snapshot of the KV and the
//     contexts in memory — overlaid with what the writes built before it
//     left pending (pending.go), so read-modify-write sees every earlier
//     write, durable or not; what it built becomes pending in turn, and it
//     joins the commit queue in build order. At most Options.MaxPending
//     writes are in flight; one more waits for a place.
//  2. Seal, in the writer's own goroutine, outside any lock (an ed25519
//     signature per record: the largest CPU cost of a save).
//  3. Commit: the writer that takes the lead joins the sealed writes at
//     the front of the queue, in order, into one KV transaction (up to
//     Options.GroupMax writes or Options.GroupBytes written) and commits it
//     without a sync (Syncer.UpdateNoSync); the contexts writers build on
//     move on and the lead is free for the next group.
//  4. Sync: the leader then waits for a sync begun after its commit
//     (syncAfter). Syncs run one at a time; each covers every group
//     committed before it began, so the groups committed while one sync
//     runs share the next. Once it ends those groups are acknowledged: the
//     contexts readers see (Context) and CommittedSeq move on, then each
//     write is released with its own Changes. The pending entries they
//     left go, and the build stage's snapshot is renewed, when build is
//     next free (fold).
//
// So the next writes are built and sealed, and the next group committed,
// while a group syncs: the rate is no longer one group per commit plus
// sync. A KV without Syncer commits each group with a synced Update.
//
// # What readers see
//
// A committed write that is not yet synced can still be lost, and what a
// node passes on it must never lose: a record sent to a peer (a digest
// sync's answer, a state sync) and then lost by a crash would leave the
// peer holding dots the restarted origin allocates again for other
// writes. So nothing outside the write path is given an unsynced write:
// Context and Namespaces show the contexts as durable (a second map, moved
// by the sync), and every read of the replicated state (Record,
// RecordView, EachRecordView, Retracted, Scan, State, Fingerprint,
// RetractedIDs, Missing) reads the KV and then waits, if a commit it may
// have seen is not yet synced, until it is (view: it waits for the seq
// set before each commit, visible, to be durable; at most the sync in
// flight and the next). A callback of such a read runs before that wait:
// it must not send what it is given before the read returns (Missing's
// caller collects, then sends). Only the build stage reads unsynced
// commits (its snapshot), as it must: dots are allocated over them. An
// Update that built nothing, or whose closure failed (its error may rest
// on what it read: "already exists", "conflict"), answers once what it
// read is durable, or with what failed it if that is lost. Badger
// itself did the same before (with SyncWrites a read transaction waited in
// oracle.readTs for the commit in flight, its sync included), so readers
// wait no longer than they did. Side data and metadata are written with
// synced Updates and read without the wait. If a sync fails nothing is
// known of what is on disk: its writes fail with ErrSync, and so does
// every write after it until the store is reopened.
//
// A peer's delta (Apply) is joined when it is built, so that the writes
// after it see it, and its commit would join it again over the same state.
// Where no uncommitted write touched the namespace, the commit takes the
// build's join instead (pendDeltas, joined): the state it was made over is
// exactly what the group's transaction holds when the delta's turn comes
// (the writes before it are committed or earlier in the group, in build
// order). Where one did, the commit joins again: the pending records an
// Update built are unsealed, the committed ones are not.
//
// The joins a commit makes are made earlier where they can be (prejoin,
// group.go): an Update's writer, once it has sealed, joins each record it
// wrote with the entry stored before it, encodes the result and records
// its writes to the dot index, in its own goroutine, when the Tx read
// every entry it wrote from the committed state and found those it edited
// not retracted. The group's transaction holds that same state when the
// write's turn comes (the writes between touched none of them: they would
// have been pending), so the leader only writes the bytes, without reading
// the entries or their retraction keys back. Where an entry was pending
// the leader joins as before: the pending record is the unsealed one. A
// peer's delta joined when built (above) is encoded by its writer too.
// The leader's time per write in a group of 32 saves (BenchmarkGroupCommit,
// over MemKV) went from 12.4-14.2 to 8.2-8.5 µs, and to 4.8-5.2 µs once
// the dot index's writes were recorded too.
//
// Failures.
//   - A closure that fails (or panics, in its own goroutine) has made
//     nothing pending: it is refused alone and the others go on.
//   - An Update that built nothing returns at once, unless what it read
//     was pending: then it waits for the group that makes it durable. One
//     whose closure failed waits for the last write queued before it.
//   - An error while joining a write into the transaction leaves part of it
//     there, so the group is abandoned; if the write was only too big to
//     share a transaction, the writes before it are committed again from
//     the deltas they built (joining them again in order gives the same
//     state; no closure runs twice) and it follows in a group of its own. A
//     commit refused as too big is retried in halves.
//   - Any other failure — a commit that fails, a write too big on its own,
//     a corrupt stored record — fails the group, and every write queued
//     behind it with ErrAborted (they were built over its state; nothing
//     tracks which ones read it), and resets the pending state to what is
//     committed: memory and disk stay as they were for all of them.
//
// Badger's own write batching was considered instead (commit outside the
// mutex, let its write goroutine batch concurrent commits): in v4.9.6 it
// does not share the sync — writeRequests calls writeToLSM per request and
// writeToLSM ends with mt.SyncWAL() when SyncWrites is on (db.go). And
// any new Badger transaction, read or write, waits in oracle.readTs for
// every commit already given a timestamp to be written and synced
// (txnMark), which is why the build stage reads a snapshot taken right
// after each commit (KV's optional Snapshotter) rather than View.
//
// A closure should read through its Tx: Store.Record and Store.Context see
// only what is committed. The node's derived state (the search index, fed
// by the returned Changes) is updated by each writer after its write
// returns, as before. Writers so reach the index in any order; a Change
// whose Seq a later commit passed may be stale, and WrittenAfter
// (recent.go) says whether a later write touched that entry: the store
// remembers the entries of its last 4096 committed writes, so the index
// reads an entry back (Record) only when it was written again or when
// that many writes came between. Reading each one back, as before, cost a
// Badger read per save under the index's lock, and that read waits for the
// commit in flight: under 32 writers every indexing writer queued behind
// a sync.
//
// What each stage costs (issue 14; mnemo bench saves --clients 32
// --cpuprofile, per save of ~300 µs of CPU in all): sealing ~40 µs (one
// ed25519 signature ~30 µs of it: one a record, never weakened), building
// ~30 µs, joining into the group's transaction ~18 µs (~5 µs once
// prejoined, above). Building is serial
// by nature (dots come from the namespace context in build order) and the
// join runs under the one leader, so both keep only what needs them: the
// response's view of a saved memory is made after the write
// (memory.Service.Save), and a group writes each namespace's context once,
// after its members, instead of once per member (writeContexts).
//
// Badger's durability seam (badgerkv/sync.go): Badger is opened without
// SyncWrites and the KV's Sync fdatasyncs the memtable logs itself, every
// one rotated out since the last Sync too, because DB.Sync syncs only the
// current one and a rotation syncs nothing.
//
// Where writers wait (issue 14, third round; mnemo bench saves --clients
// 32 --blockprofile/--mutexprofile, and the stages timed in a build not
// kept): in submit, for their group, while the leader is in the KV's
// commit, which on this shared machine took 2-6 ms a group of 11-15
// writes (the sync, and Badger's write goroutines waiting for a core);
// the build stage and the leader's joins were each under 5% of a save's
// time. GroupMax and GroupBytes do not bind there (a group of 15 saves
// writes ~30 KB), so they stay.

// Reads that only show a record decode it as a view (crdt.DecodeRecordView:
// the same checks, seals checked and not kept, values not copied):
// RecordView (a get, the index's re-read of a memory written again). A
// search's hits go further (EachRecordView): one record is
// decoded into again and again, from the value the KV lends for the call
// (ValueLender: Badger's Item.Value, without ValueCopy's copy), valid
// only during the callback, where the memory is made (its conversion
// copies every value). Record, and every read a write, digest sync or a
// feature makes, decode in full: a view cannot be joined or encoded
// (crdt panics), so a read that passes a record on cannot lose its seals
// by mistake. In mnemo bench search at 100k this took the garbage of a
// search from ~94 to ~64 KB (the rest is mostly Badger's own three copies
// of each value), which under the node's soft memory limit is what sets
// how often the heap is collected.
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
//	v/<space>\x00<key>                   side data: derived, local, never replicated (side.go)
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
