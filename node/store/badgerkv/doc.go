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
// releases it. ReleaseFilePages takes the pages of Badger's mapped tables
// out of the process's resident set and leaves them in the kernel's page
// cache, and pages out the memtable logs' synced pages, which nothing
// reads again but a crash's replay (store.Store.ReleaseFilePages finds it;
// pages_linux.go says why the tables' are not evicted).
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
// mappings instead of reading /proc/self/maps each time was tried and not
// kept. Each table's index (block offsets and bloom filter, which Badger
// reads in place, so every point read mapped them again) stays mapped
// since issue 15's ninth round: 3.7 MiB more resident after each
// hand-back at 100k memories. First tried at load ~12, where the CPU per
// search moved within the noise (636 against 649 µs, medians of 3); on a
// quiet machine (load 0.0–0.7), mnemo bench search on one reopened 100k
// directory, the two builds alternately 6×, medians of the 2,000
// searches: CPU per search 621 → 586 µs, p95 1.05 → 0.99 ms (lower in
// each of the six pairs), VmRSS after the hand-back 77.5 → 81.3 MiB.
//
// What the hand-backs cost, and what does not change it, was
// measured then (mnemo bench search on one 100k directory; perf record of
// the searching node): page faults on the tables (asm_exc_page_fault) 9%
// of the process's CPU and the advice 6%; the same build never handing
// back (a 1 TiB budget, VmRSS then ~210 MiB) 593-636 against 727-822 µs a
// search (alternately 4×, load 3-7), budgets of 4 / 16 / 64 MiB 927-962
// / 756-845 / 654-751 µs (3×, load 6-7). Each record read faults the
// whole 64 KiB window around it in (the kernel's fault-around: 48.7 KiB
// of RssFile per random read of a cached table, in a throwaway program
// over a 100k directory's tables), and MADV_RANDOM does not change that
// on this kernel (6.18.44: 48.7 KiB per read with it too; fault-around
// ignores the advice, which only stops readahead from disk). Splitting
// each mapping into 16 KiB VMAs (alternate ranges advised MADV_DONTDUMP,
// which changes nothing else) bounds the window by the VMA: 14.8 KiB a
// read, but 8,600 mappings at 100k (a hand-back reads /proc/self/maps),
// the same ~3 µs a fault, and the advice over all of them 1.6× slower; not
// taken. What removes the faults is reading records without mapping
// them (pread), which Badger's API does not offer; a read path of our own
// beside Badger's (its memtables, levels, bloom filters and block indexes
// found by reflection) was built and measured (README, eighth round) and
// not taken: it re-implements Badger's Get and breaks with its internals.
// Batching the advice of every table in one process_madvise call was
// measured too (829 -> 766 us a search, then 1,114 -> 1,102 at load 6-8:
// within the noise) and not taken.
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
// What stays after the load (issue 15, eighth round: --memprofile at
// the bench's resident-memory reading, ~2 s after a fresh 100k load,
// searched meanwhile) is the pool, not running compactions: 96 of the
// 143 MiB of live heap are z.Calloc under the table builders, and the
// pool then holds 8 allocators of 12 MiB each (a builder's allocator
// starts at twice BaseTableSize, 4 MiB, and doubles to hold a flushed 8
// MiB memtable or an 8 MiB L6 table; the pool hands any allocator to any
// builder, so all grow to the largest). Badger frees one per 2 s without
// a builder taken (z.AllocatorPool), so they are gone ~16 s after the
// last compaction; the search index itself is the same as a reopened
// node's (31.4 against 30.0 MiB in the profiles). Options measured on a
// fresh 100k load each (mnemo bench search, load 4-7; live heap / VmRSS
// after 2,500 searches, tables): as configured 142 / 203 MiB, 39 tables;
// MemTableSize 4 MiB 138 / 174, 44; BaseTableSize 512 KiB 106 / 145;
// 512 KiB and TableSizeMultiplier 1, 8 MiB memtables 68 / 107, and with
// 4 MiB memtables 68 / 132 (309 tables); 1 MiB, 1 and 4 MiB 70 / 115 (165
// tables). None gets under 100 MiB, and smaller tables multiply the
// tables (their mappings, bloom filters, per-table advice) and the
// compactions. No option releases the pool sooner, so the KV drains it
// itself once builders go quiet (builders.go: the one reach into
// Badger's unexported fields, DB.allocPool, guarded by a test).
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
// Larger memtables for writes (issue 14), measured and not taken. With 64
// MiB memtables and 5 level-0 tables (stall 10), mnemo bench saves at 32
// clients on a quiet machine (load ~0) gave 5,509 / 5,398 → 7,584 / 7,408
// saves/s in 30 s runs, but most of that is compaction deferred past the
// run: five 64 MiB level-0 tables are more than 30 s of saves hold. In 90 s
// runs (~570k saves with 64 MiB memtables, ~0.6 GB of records) the gain
// shrinks to 5,212 → 6,443 saves/s (64 MiB and 2 level-0 tables: 6,301),
// 316 → 254 µs of CPU a save, while the process's peak resident size
// (/usr/bin/time's maximum) goes 0.53 → 1.60 GiB (1.38 with 2 level-0
// tables): far from issue 14's 10,000 and far past what a sidecar may
// hold. 8 MiB with 4 level-0 tables (stall 8) was within the
// noise (5,739 / 5,323 saves/s). Three findings from the same work, for
// whoever takes it up again:
//   - Write amplification is not the two append streams of a save (its
//     record under r/, its dot-index entry under d/, both in time order),
//     as a table spanning both would overlap every older record. Badger
//     alone (a throwaway program: these options, no syncs, bytes written
//     from /proc/self/io), 200k one-record writes of 1,040 B: the
//     layout as it is 5.7 KB written a write; the dot entries above r/ in
//     descending order, so that no table spans older keys, 5.4 KB;
//     records alone 4.1 KB. It is the levels themselves:
//     8 MiB memtables 6.7 KB a write over 1M writes, 64 MiB 4.8, 64 MiB
//     with 5 level-0 tables 3.7; a larger BaseTableSize (8 MiB) or
//     BaseLevelSize (64 MiB) made it worse (8.9 and 8.0 KB over 400k,
//     against 6.1 as configured).
//   - With 64 MiB memtables the process wrote 22 GB in a 30 s run
//     (getrusage's blocks out, ~95 KB a save; 1.6 GB, ~9 KB a save, at 8
//     MiB). Badger alone shows it too: syncing every write, 6.9 KB a write
//     at 8 MiB and 27.4 KB at 64 MiB. The memtable's log is a mapped file
//     of twice MemTableSize, and each sync writes its dirty tail back; that
//     the kernel writes larger folios of a larger mapping is the likely
//     reason, not verified further.
//   - Writing back mapped files costs CPU in the kernel at any memtable
//     size. perf record -g of mnemo bench saves (5 s at 32 clients, 8
//     MiB): ~9% of the process's samples flush the other core's TLB
//     (ptep_clear_flush under folio_mkclean, and the IPIs it sends), more
//     than half of them in the msync Badger does after writing each new
//     table (flushes and compactions), about a third in the fdatasync of
//     the memtable's log. Each dirty page of a shared mapping is write-protected before it
//     is written; no option of Badger writes its tables or log without
//     mapping them.
//
// Memtable logs. Each memtable's log is a shared mapping of twice
// MemTableSize that Badger writes once, in order, and reads again only to
// replay it after a crash; its written pages stayed resident until the
// flush deleted it, so under writes the process's RssFile rose with every
// memtable's worth of saves and fell at its flush (6.9 MiB of the log
// resident after 20 s of mnemo bench saves at one client). The hand-back
// (ReleaseFilePages) pages them out: the clean ones (synced) leave the
// process and the page cache, the rest stay as they are. mnemo soak --for
// 10m --seed 1764 --keep 100, the build before and this one at once
// (load ~1): mean over the 13 judged processes of the mapped-file part of
// their RSS at one minute of life 22.5 → 19.5 MiB, at their RSS's
// largest 30.0 → 26.9 MiB; the largest RSS 71.7 → 68.2 MiB on average.
// The drift bound is not met either way: what is left of the swing is
// the heap's (the anonymous part, 31-34 → 41-42 MiB on average) and the
// tables a flush or compaction writes through their own mappings before
// the next hand-back.
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
