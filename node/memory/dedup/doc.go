// Package dedup is the duplicate-detection feature of the memory service:
// it finds near-duplicate memories across the namespaces a caller can read
// and merges them within a shared namespace. Build it with New (which
// checks its Config and builds the embeddings client once), attach it to
// one Service (memory.Config.Features), and reach it with Of; the HTTP API
// and the MCP tools do. Find and Merge read the effective views through
// the core when asked and keep only caches keyed by content; merging on
// save (below) hooks the core's writes.
//
// Detection. The same knowledge often lands in two namespaces a principal
// can read: a share or promotion copies it, or two agents learn it on
// their own. Find compares every live memory the caller can read (capsule
// items and promotion references excluded) with every other in a
// different namespace, by MinHash of the title and content (package
// node/similarity: word 3-shingles, 128 hash functions, the Jaccard
// estimate); candidate pairs come from its LSH bands and a pair is
// reported at an estimate >= DefaultThreshold (0.8) unless the query or
// the Config sets another threshold. With an embeddings endpoint
// configured (Config.Embeddings, off by default; OpenAI-compatible POST
// {base}/embeddings) or an Embedder given, pairs whose cosine similarity
// is >= its threshold (default 0.9) are reported too, with method
// "embeddings"; an endpoint failure is reported as a warning and the
// MinHash pairs still answer.
//
// Merge. Merge merges ids within one shared namespace the caller may
// write. The survivor is the first id that lives in that namespace; the
// other ids in it are soft-deleted with lineage = the survivor; ids
// elsewhere (e.g. in an agent's own namespace) are left untouched and only
// contribute provenance. The survivor's provenance gains every
// contributor's provenance, "author:<author>" of each, and "source:<id>"
// of each other id. When the contributors are independent agents — two of
// them have different authors and neither derives from the other (their
// ids, lineages and "source:" provenance do not meet) — the survivor's
// confidence rises by ConsensusBoost (0.2), capped at 1.
//
// Merging on save (onsave.go; Config.OnSave, on unless Disabled). In a
// shared namespace (team:// or project://; never agent://, so never an
// inbox), a memory that near-duplicates a live memory of another author
// in the same namespace is merged with it, as seed 002 asks: the same
// knowledge learnt by two agents becomes one memory with both as
// provenance. Detection is MinHash at Config.Threshold against the
// namespace's live memories, found through a band table (below), and,
// when hybrid search is on (node/memory/semantic), by vector: the memories
// of the namespace whose vectors are nearest to the saved one's (up to
// maxVectorDups) with a cosine of at least Embeddings.Threshold (default
// 0.9), so a paraphrase whose words differ is merged too
// (TestSaveMergesAParaphraseByItsVector). Vectors are computed after the
// save, off its path; the semantic feature tells this one which memories
// got a new vector (Semantic.OnStored) and they are checked again. Each
// node compares its own vectors, so a node without hybrid search or with
// another model may not find a pair another node merges; the merge then
// reaches it as any write does, and its rules (below) keep the result
// the same whoever merged. Find's embeddings pass (Config.Embeddings, its
// own endpoint) is not used on save. The decisions:
//
//   - Asynchronous. The core tells the feature what each local write or
//     peer delta changed after it went to replication (SentObserver); the
//     feature only queues the shared-namespace memories changed, so the
//     save is acknowledged without waiting. The queue is bounded
//     (OnSave.QueueSize, default 1024) and drained by one goroutine that
//     Opened starts; a change that finds it full is not checked and is
//     counted (SaveStats.Dropped), the save never blocks. A memory
//     already queued is queued once. Close (the core's Closer, before the
//     store closes) refuses new work, checks what is queued, and waits for
//     the goroutine. The queue is not persisted: a check lost to a full
//     queue or a crash is left to the other replicas (below) or to a
//     manual merge; nothing scans for missed duplicates at start.
//   - On every replica, idempotently. Every node that holds both
//     memories, whichever arrived last and whoever saved it, checks and
//     merges, so a merge does not depend on the saving node staying up
//     (its queue is in memory; it may crash or go offline right after the
//     save, or not hold the other memory yet when it saves: the author's
//     node alone would then never see the pair). For merges made by
//     several nodes to agree: the survivor is the oldest of the group by
//     (created_at, id), the same on every node whatever the arrival
//     order, so two nodes never delete each other's survivor; the writes
//     are sets and registers whose values any node would choose alike:
//     provenance gains "author:" of both sides and "source:" of the loser
//     (add-wins set: union), the loser gets deleted_at and lineage = the
//     survivor (LWW: concurrent merges differ only in the deleted_at time,
//     and the join keeps one). The consensus boost is counted once per
//     survivor: a merge that boosts adds ConsensusMark to the provenance,
//     and a survivor that carries it is not boosted again, so a third
//     author's duplicate, or a second node merging after the first's
//     merge arrived, adds provenance only, and concurrent merges write
//     the same confidence. A loser already soft-deleted is not a
//     candidate, so a repeated check writes nothing. The convergence of
//     the replicas themselves is the CRDT's; these rules make the state
//     they converge to the same whoever merged.
//   - Who may write. A node's write to a shared namespace is accepted by
//     its peers only if a principal it hosts holds write there
//     (node/cluster's ReplicaMayWrite), so a node merges only when the
//     owner agent or the author of one side is local and holds write
//     there (acl check at merge time); a node whose principals only read
//     the namespace leaves the merge to the others (SaveStats.NoWrite).
//   - Scope. Only different authors (a memory's author is the principal
//     that saved it); same-author near-duplicates stay, as do capsule
//     references and empty texts. Whether the two sides are independent
//     (for the boost) is Merge's rule above.
//
// Band tables (bands.go). The worker keeps, per shared namespace, each
// eligible memory's 32 LSH band hashes cut to 32 bits (128 bytes, not the
// 1 KiB signature, nor its text): a check compares its own band keys with
// the table's in memory and loads only the memories that share a band,
// then compares their full signatures. At the default threshold nothing
// is missed: two signatures at a similarity above 0.75 differ in fewer
// slots than there are bands, so some band is equal in both
// (TestBandsFindEveryPairAboveTheBound); at a threshold of 0.75 or below
// a check compares with the namespace's newest maxCandidates memories one
// by one, as it did before the tables. The tables are built from the
// store when the worker starts, then follow every change the worker
// sees: deletes, retractions and edits (approved surgery edits too) are
// queued like saves, and a change that found the queue full makes the
// worker rebuild the tables once the queue has drained, so a memory
// whose own check was dropped is still found by a later duplicate
// (TestDroppedMemoryIsStillFoundLater). An entry is only a hint: a
// candidate is reloaded and compared in full before any merge, so a
// stale entry costs one load, never a wrong merge.
//
// Cost. Before the band tables a check loaded up to maxCandidates
// memories of the namespace: a save plus its check took 3.9 ms beside 300
// memories and 28–62 ms beside 3,000 (1.9 MB and 14.9 MB allocated per
// check), and in the 5-node soak (`mnemo soak`, one team namespace) the
// checks made 87% of all the nodes' allocation, raising their resident
// memory with the namespace. With them (`go test -run XXX -bench
// SaveWithCheck -benchtime 200x -benchmem ./node/memory/dedup/`, one run
// each, old and new test binaries alternately on a loaded 2-core
// machine): 0.61 ms beside 300, 0.71–2.1 ms beside 3,000 and 1.4 ms
// beside 30,000, 180 KB allocated per check whatever the size (a save
// alone: 0.08–0.12 ms). The table costs ~270 bytes per memory (keys, id
// and map entry; heap after GC with 30,000 entries of 26-byte ids, 266
// bytes each): 8 MB for 30,000 shared memories. The save does not pay
// for the check; the worker does, one check at a time, and a burst
// beyond the queue is dropped.
//
// The simulator turns merging on save off (its stepped nodes run no
// goroutine of their own); tests observe merges with Flush.
package dedup
