package node

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestResidentStatCountsMappedFiles: the figure the budget reads grows by
// the pages of a file the process maps and reads, and shrinks when they
// are advised away as ReleaseFilePages does.
func TestResidentStatCountsMappedFiles(t *testing.T) {
	st := openResidentStat()
	if st == nil {
		t.Fatal("no /proc/self/statm")
	}
	defer st.close()
	const size = 8 << 20
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	m, err := syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	before := st.fileBytes()
	if before <= 0 {
		t.Fatalf("resident file bytes %d", before)
	}
	sum := 0
	for i := 0; i < size; i += os.Getpagesize() {
		sum += int(m[i])
	}
	if sum != 0 { // and the reads are used, so not left out by the compiler
		t.Fatalf("a file of zeros reads back %d", sum)
	}
	read := st.fileBytes()
	if read-before < size/2 {
		t.Fatalf("reading %d MiB mapped added %d bytes (%d → %d)", size>>20, read-before, before, read)
	}
	if err := syscall.Madvise(m, 4); err != nil { // MADV_DONTNEED
		t.Fatal(err)
	}
	if after := st.fileBytes(); read-after < size/2 {
		t.Fatalf("advising them away took %d bytes off (%d → %d)", read-after, read, after)
	}
}

// TestReadOnlyMappings: of a smaps text, only the named file's read-only
// private mappings without an anonymous page are listed; a writable one,
// a shared one, one the process wrote to (a relocated or patched page)
// another file's, and one whose smaps do not say it has no anonymous
// page are not.
func TestReadOnlyMappings(t *testing.T) {
	const smaps = `00400000-00f8d000 r-xp 00000000 08:01 42 /usr/bin/mnemo
Size:              12084 kB
Rss:               10148 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00f8d000-01c10000 r--p 00b8d000 08:01 42 /usr/bin/mnemo
Anonymous:             0 kB
01c10000-01c87000 rw-p 01810000 08:01 42 /usr/bin/mnemo
Anonymous:           100 kB
01c87000-01c90000 r--p 01887000 08:01 42 /usr/bin/mnemo
Anonymous:             4 kB
01c90000-01ca0000 r--s 01890000 08:01 42 /usr/bin/mnemo
Anonymous:             0 kB
7f0000000000-7f0000001000 r-xp 00000000 08:01 7 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000001000-7f0000002000 r--p 00000000 00:00 0
Anonymous:             0 kB
7f0000002000-7f0000003000 r--p 00001000 08:01 42 /usr/bin/mnemo
Anonymous:             0 kB
7f0000003000-7f0000004000 r--p 00002000 08:01 42 /usr/bin/mnemo
Rss:                   4 kB`
	got := readOnlyMappings([]byte(smaps), "/usr/bin/mnemo")
	want := []mapping{{0x400000, 0xf8d000}, {0xf8d000, 0x1c10000}, {0x7f0000002000, 0x7f0000003000}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	if got := readOnlyMappings([]byte(smaps), "/usr/bin/other"); len(got) != 0 {
		t.Fatalf("another file's mappings: %x", got)
	}
}

// TestReleaseExecutable: the test binary's own code and read-only data
// are advised away and the process goes on running what was there (the
// pages come back from the page cache on the next touch); its resident
// file pages shrink.
func TestReleaseExecutable(t *testing.T) {
	st := openResidentStat()
	if st == nil {
		t.Fatal("no /proc/self/statm")
	}
	defer st.close()
	before := st.fileBytes()
	if n := releaseExecutable(); n <= 0 {
		t.Fatalf("advised %d bytes of the executable", n)
	}
	after := st.fileBytes()
	if after >= before {
		t.Fatalf("resident file bytes %d → %d", before, after)
	}
	// Code and tables of the binary run and read as before.
	if got := fmt.Sprintf("%x", sha256.Sum256([]byte("mnemo"))); !strings.HasPrefix(got, "a3ce9845") {
		t.Fatalf("sha256 after the hand-back: %s", got)
	}
}
