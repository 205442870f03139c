package node

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// residentStat reads the process's resident file pages from
// /proc/self/statm, kept open: its third figure, "shared", is RssFile +
// RssShmem in pages, counters the kernel keeps (reading it walks nothing).
type residentStat struct{ f *os.File }

func openResidentStat() *residentStat {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return nil
	}
	return &residentStat{f: f}
}

// fileBytes is the resident file and shared memory of the process in
// bytes; -1 where it cannot be read. Safe for concurrent use.
func (r *residentStat) fileBytes() int64 {
	if r == nil {
		return -1
	}
	var b [128]byte
	n, err := r.f.ReadAt(b[:], 0)
	if n == 0 && err != nil {
		return -1
	}
	f := bytes.Fields(b[:n])
	if len(f) < 3 {
		return -1
	}
	pages, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}

func (r *residentStat) close() {
	if r != nil {
		r.f.Close()
	}
}

// releaseExecutable unmaps from the process the pages of its own
// executable's read-only mappings (code, read-only data) and returns how
// many bytes of mappings it advised. They stay in the kernel's page cache:
// a page the process needs again costs a minor fault. Start-up runs code
// and reads tables that serving never touches again (package
// initialisation, templates, schemas, the index rebuild): of a 36 MB
// binary ~22 MiB were resident after start-up, and ~15 MiB after a
// hand-back at start and 2,500 searches at 100k memories (pages.go).
//
// MADV_DONTNEED on a private mapping discards what the process wrote
// there: a read-only mapping of the executable holds no such page unless
// the loader relocated it before making it read-only (RELRO) or a debugger
// wrote a breakpoint into it. So only mappings that /proc/self/smaps shows
// with "Anonymous: 0 kB" are advised (none where the field is missing),
// read afresh at every call (the node
// calls it at start and once a minute: reading smaps takes a fraction of a
// millisecond).
func releaseExecutable() int64 {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0
	}
	var advised int64
	for _, m := range readOnlyMappings(b, exe) {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), madvDontneed); e == 0 {
			advised += int64(m.end - m.start)
		}
	}
	return advised
}

// madvDontneed is MADV_DONTNEED (linux/mman.h).
const madvDontneed = 4

// mapping is an address range of the process.
type mapping struct{ start, end uint64 }

// readOnlyMappings lists, from the text of /proc/self/smaps, the mappings
// of path that are readable, not writable, private and hold no anonymous
// page: their pages are the file's, and dropping them loses nothing.
func readOnlyMappings(smaps []byte, path string) []mapping {
	var out []mapping
	var cur mapping
	in := false    // cur is a candidate
	clean := false // cur's smaps say "Anonymous: 0 kB"
	for line := range bytes.SplitSeq(smaps, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if bytes.HasSuffix(f[0], []byte(":")) { // a field of the mapping above
			if in && string(f[0]) == "Anonymous:" {
				clean = len(f) >= 2 && string(f[1]) == "0"
			}
			continue
		}
		if in && clean {
			out = append(out, cur)
		}
		// start-end perms offset dev inode path
		in, clean = false, false
		if len(f) != 6 || string(f[5]) != path || (string(f[1]) != "r-xp" && string(f[1]) != "r--p") {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if ok && err1 == nil && err2 == nil && end > start {
			cur, in = mapping{start, end}, true
		}
	}
	if in && clean {
		out = append(out, cur)
	}
	return out
}
