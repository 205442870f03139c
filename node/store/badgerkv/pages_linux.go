package badgerkv

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
)

// madvDontneed and madvPageout are MADV_DONTNEED and MADV_PAGEOUT
// (linux/mman.h).
const (
	madvDontneed = 4
	madvPageout  = 21
)

// ReleaseFilePages unmaps from the process the pages of this KV's tables
// that reading them mapped, pages out its memtable logs' synced pages
// (below), and returns how many bytes
// of mappings it advised. Badger maps its files; the index rebuild at start
// reads every record once, and searches map a whole page-cache folio per
// record read, which would otherwise leave the data set resident (counted
// in VmRSS as RssFile) until memory pressure.
//
// The advice is MADV_DONTNEED: on Badger's shared file mappings it drops
// the process's page-table entries and leaves the pages in the kernel's
// page cache (clean pages are not written; a dirty one keeps its dirt in
// the cache), so a record read again costs a minor fault, not a disk
// read, and what the mapped memory holds never changes. The page cache stays the kernel's to
// reclaim, as for a database that reads its files with pread. Until issue
// 15 the advice was MADV_PAGEOUT, which also evicts the pages from the
// cache: the searches after each hand-back then read their records from
// disk (10 searches at 100k memories right after it: 6.2 against 2.3 ms
// of CPU each, medians of 3).
//
// Unlike MADV_PAGEOUT, MADV_DONTNEED discards what an anonymous or private
// mapping holds, so it must never reach an address range that Badger
// unmapped after /proc/self/maps was read and that something else (the Go
// runtime maps memory too) mapped again. Hence only tables, and only
// those pinned for the duration: an iterator over the whole tree holds a
// reference to every table there when it is made (a table is unmapped
// only when its last reference goes), and only the tables Badger lists
// both before and after the iterator is made are advised. Badger's listing
// takes no reference and table ids are never reused, so a table in both
// listings was there all along, and is pinned; one compacted away between
// the first listing and the pin is in the first only, and one made after
// the first waits for the next hand-back. The value log is left alone: its
// files are remapped when they are truncated, and values over 64 KiB are
// rare and read rarely.
//
// Each table's index (its block offsets and bloom filter, ~2.6% of the
// table bytes: 3.7 MiB at 100k memories) stays mapped: Badger reads it in
// place on every point read, so handing it back only had the next
// searches fault it in again (keptOut).
//
// The memtable logs (NNNNN.mem) are handed back too, with MADV_PAGEOUT:
// Badger writes each through a shared mapping of twice MemTableSize and
// never reads it again but to replay it after a crash, so a node under
// writes held each log's written pages resident until the flush deleted it
// (a sawtooth of up to 8 MiB a log, two logs at a flush: 6.9 MiB of
// RssFile after 20 s of one client's saves), and its resident size rose
// and fell with it (issue 14's soak; doc.go, "Memtable logs", has the
// figures). The pages Sync wrote are clean, and the advice drops them from
// the process and from the page cache, which will not read them again; a
// page still dirty (written since the last Sync) or under writeback stays
// in the page cache with what it holds (the kernel frees only clean file
// pages on this advice, and writes none back), so nothing written is lost,
// and a tail page Badger writes again faults back in (from the disk, if it
// was clean) first. Unlike MADV_DONTNEED, MADV_PAGEOUT never changes what
// any memory holds (on an anonymous mapping it can only swap pages out),
// so a log's range needs no pin: should Badger delete the log and its
// address range be mapped again by something else between the listing and
// the advice, the advice costs that memory a page-in at worst.
func (k *KV) ReleaseFilePages() int64 {
	if k.dir == "" {
		return 0
	}
	before := map[uint64]bool{}
	for _, t := range k.db.Tables() {
		before[t.ID] = true
	}
	txn := k.db.NewTransaction(false)
	defer txn.Discard()
	pin := txn.NewIterator(badger.IteratorOptions{})
	defer pin.Close()
	listed := map[string]int{} // pinned: in both listings; its index's size
	for _, t := range k.db.Tables() {
		if before[t.ID] {
			listed[table.NewFilename(t.ID, k.dir)] = t.IndexSz
		}
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	var advised int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 {
			continue
		}
		path := string(fields[5])
		indexSz, pinned := listed[path]
		isLog := !pinned && strings.HasPrefix(path, k.dir+string(os.PathSeparator)) && strings.HasSuffix(path, memExt)
		if !pinned && !isLog {
			continue
		}
		lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if isLog {
			if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), madvPageout); e == 0 {
				advised += int64(end - start)
			}
			continue
		}
		if offset, err := strconv.ParseUint(string(fields[2]), 16, 64); err != nil || offset != 0 {
			// Badger maps each table whole, from offset 0; a mapping
			// from elsewhere in the file does not end at its index, so
			// where that index lies in it is not known: left alone.
			continue
		}
		n := keptOut(uintptr(end-start), uintptr(indexSz), uintptr(os.Getpagesize()))
		if n == 0 {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), n, madvDontneed); e != 0 {
			continue
		}
		advised += int64(n)
	}
	return advised
}

// keptOut is how many bytes from the start of a table's mapping of size
// bytes (whole pages) to advise, so that the table's tail stays mapped: its
// index of indexSize bytes and the footer Badger writes after it at the
// end of the file (the index's length, a checksum and the checksum's
// length: a few bytes). Two pages more than the index cover the footer and
// the file's last page, which the mapping rounds up; the cut is rounded
// down to a page. So the cut is at most size-indexSize-2*page, while the
// index starts at the file's size less the footer and the index, more
// than size-page-footer-indexSize: the cut comes before the index's first
// byte as long as the footer is under a page
// (TestKeptOutLeavesTheIndexMapped). 0 when that tail is the whole
// mapping.
func keptOut(size, indexSize, page uintptr) uintptr {
	keep := indexSize + 2*page
	if keep >= size {
		return 0
	}
	return (size - keep) &^ (page - 1)
}
