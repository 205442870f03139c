package node

import (
	"os"
	"path/filepath"
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
