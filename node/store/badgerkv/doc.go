// Package badgerkv is the store.KV of a node: Badger in the node's data
// directory, tuned for a sidecar (small memtables, no caches, values of
// 64 KiB or more in the value log, tables not compressed). Badger does not sync
// its commits: the KV does (Update, and Sync for the store's group
// commit, which syncs many commits at once; sync.go says why it syncs the
// logs itself rather than through DB.Sync), so an acknowledged write
// survives kill -9 and a power cut.
//
// It owns what belongs to the directory: Open creates it, takes its lock
// (mnemo.lock, holding the pid) so that a second process fails with
// store.ErrLocked naming the holder before Badger is touched, and Close
// releases it. ReleaseFilePages takes the pages of Badger's mapped files
// out of the process's resident set and leaves them in the kernel's page
// cache (store.Store.ReleaseFilePages finds it; pages_linux.go says why
// not evict them).
//
// It lives apart from node/store so that the memory core, its features and
// the cluster loop, which take a store.KV, link no Badger: the simulator runs
// them over store.MemKV. Only the node binary opens it:
//
//	kv, err := badgerkv.Open(dir, badgerkv.Options{Logger: log})
//	...
//	svc, err := memory.Open(memory.Config{KV: kv, ...})
//
// TestBackendsAgree checks it against store.MemKV on seeded histories.
//
// # Memory: what Badger holds, and what its options can and cannot bound
//
// Measured for issue 15 with mnemo bench search at 100k memories (113 MiB
// of snappy tables, 135 MiB uncompressed) on a shared 2-core machine; the
// figures are in the README.
//
// Mapped tables. Badger v4 reads its tables only through mmap (no option
// reads them with pread or into memory), and the kernel here (6.18, ext4
// with large folios) maps a whole page-cache folio per record read: from a
// hand-back, 10 searches map 10 MiB of tables and 100 map 50 MiB, so 2,000
// searches leave ~110 of the 113 MiB resident as RssFile. MADV_RANDOM does
// not change that once the folios are cached (the same +10/+50 MiB,
// measured); it only shrinks the folios read afterwards from disk, and
// evicting the cache to get there costs a disk read per record (an earlier
// trial doubled the CPU per search). So the node bounds RssFile by
// handing them back: every minute, and whenever searches have mapped
// another node.FilePagesBudget (16 MiB) since the last time; a hand-back
// (ReleaseFilePages) unmaps them and keeps them cached (MADV_DONTNEED, on
// tables it has pinned only: that advice would zero memory mapped afresh
// where Badger unmapped a table; pages_linux.go). A hand-back costs ~0.3 ms
// at 100k memories (37 tables), nearly all in the advice itself, whose
// page-table walk covers every table's whole mapping: caching the
// mappings instead of reading /proc/self/maps each time, and leaving each
// table's index mapped (Badger reads the block offsets and bloom filter
// in place, so every point read maps them again), were tried and not
// kept: the index stayed as 3.7 MiB more resident after each hand-back
// and the CPU per search moved within the noise (636 against 649 µs,
// medians of 3, load ~12).
//
// Table builders. Right after a bulk load Badger's compactions hold
// ~100-125 MiB of table-builder buffers (z.Calloc, plain Go memory without the
// jemalloc tag): each builder's allocator holds a table's blocks (twice
// when compressed: raw and compressed), a compaction runs up to 8 + splits builders at
// once, and a pool keeps up to 8 allocators, freeing one per idle 2 s. No
// option bounds the number; options change the size of each. Heap in use
// right after a fresh 100k load, one run each (noisy): as configured then
// (snappy) 176-196 MiB; BaseTableSize 512 KiB 150; MemTableSize 4 MiB 195;
// both 4 MiB and 1 MiB 151; 4 MiB, 512 KiB and TableSizeMultiplier 1 128;
// no compression 129 (since taken, for search's sake: badgerkv.go, Open).
// The smaller tables prolonged the compactions (more tables to merge: the
// searches during them cost no less CPU), and NumCompactors is already
// Badger's minimum of 2 (1 is refused). No size was changed: what made
// searches slow there was the collector running back to back under the
// node's soft memory limit, which cmd/mnemo now lets follow a live heap
// that outgrows it (cmd/mnemo/memlimit.go).
//
// Memtables. Each memtable is an arena of MemTableSize plus 15% (10.4 MiB
// for 8 MiB), allocated whole and counted by the collector even where its
// pages are not yet touched; a memtable flush builds one L0 table of it,
// whose builder grows its allocator by doubling (32 MiB live after a
// flush in a profile). A 4 MiB memtable halves both; mnemo bench saves
// --clients 1,32 --duration 5s gave 632 and 731 µs of CPU a save at one
// client against 521 and 634 with 8 MiB (alternately twice, load ~9), and
// a 10-minute soak with 4 MiB memtables lowered the nodes' resident size at
// one minute (47-50 against 52-60 MiB) but not its drift (README, Soak), so
// 8 MiB stays until a quieter measurement says otherwise. On a node that
// only searches, the arena is mostly never touched: the soft limit counts
// it, the resident size does not. With 4 MiB memtables, mnemo bench search
// on a reopened 100k directory (80 MiB limit, alternately 3×, load 10-11)
// collected 18-20 instead of 29-33 times over 3,000 searches, but the heap
// filled the room the arena left (RssAnon 67.7-67.8 against 62.4-62.7
// MiB) and the CPU per search did not move (610 against 616 µs, medians).
//
// Point reads, and their garbage. Txn.Get copies a value three times into
// new memory (the table iterator's ValueCopy, the item's SafeCopy,
// Item.Value's copy), and no public call reads a table value without
// them: at 100k memories that was ~55 of the ~75 KB of garbage a search
// makes in the node (mnemo bench search --memprofile, 2,500 searches),
// which under the soft memory limit is what sets how often the heap is
// collected (cmd/mnemo/memlimit.go). Tried for issue 15's fifth round and
// not kept: one iterator per search, seeking each hit. Its items reuse
// their buffers on Next but not on Seek, which drops the current item, and
// it seeks every level where Get skips by bloom filter: the garbage stayed
// (~110 against ~116 MB over the 2,500 searches) and the CPU per search
// rose (593 → 650 µs, one run each). What does remove it is the value
// log, whose Read lends the mapped bytes: a build with ValueThreshold 256
// (a diagnostic, not kept), on a fresh 100k load of its own, made 86
// instead of 188 MB of the search handler's garbage over 2,500 searches,
// 16 instead of 31-33 collections at the 80 MiB limit, 521 µs of CPU per
// search (609-649 as configured, load ~11) and 11 MiB of tables instead of
// 137. It is not taken: every group commit would sync the value log too,
// its space is reclaimed only by a value-log GC the node does not run, and
// its mapped pages (the hand-back leaves them: pages_linux.go) stayed
// resident, VmRSS 212 MiB.
package badgerkv
