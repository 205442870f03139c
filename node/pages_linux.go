package node

import (
	"bytes"
	"os"
	"strconv"
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
