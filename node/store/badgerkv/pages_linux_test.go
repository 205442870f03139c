package badgerkv_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/quick"
	"unsafe"

	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// TestReleaseFilePagesKeepsThePageCache: after a read maps Badger's tables
// into the process, ReleaseFilePages leaves none of their data pages
// resident in it but keeps each table's index mapped (every read reads it
// again), the kernel's page cache still holds them all (the next read is a
// minor fault, not a disk read), and the data reads back unchanged.
func TestReleaseFilePagesKeepsThePageCache(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	for i := range 200 {
		edit(t, s, "team://a", fmt.Sprintf("m%03d", i), 1, "co", strings.Repeat("x", 500))
	}
	if err := s.Close(); err != nil { // flushes the memtable into a table
		t.Fatal(err)
	}
	kv := mustOpen(t, dir)
	s, err := store.Open(kv, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readAll := func() {
		t.Helper()
		for i := range 200 {
			rec, err := s.Record("team://a", fmt.Sprintf("m%03d", i))
			if err != nil {
				t.Fatal(err)
			}
			if f, _ := rec.Field("co"); string(f.Value) != strings.Repeat("x", 500) {
				t.Fatalf("m%03d reads back %q", i, f.Value)
			}
		}
	}
	readAll()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table written")
	}
	index, ntables := badgerkv.IndexBytes(kv)
	page := int64(os.Getpagesize())
	tails := index + int64(ntables)*3*page // what the release keeps, at most
	before := int64(residentKiB(t, dir, ".sst")) << 10
	if before <= tails {
		t.Fatalf("reading the records mapped %d bytes of tables, no more than their index tails (%d): nothing to release", before, tails)
	}
	if n := s.ReleaseFilePages(); n <= 0 {
		t.Fatalf("advised %d bytes", n)
	}
	after := int64(residentKiB(t, dir, ".sst")) << 10
	if after > tails {
		t.Fatalf("%d bytes of table pages still resident after the release, more than the %d tables' index tails (%d)", after, ntables, tails)
	}
	if after == 0 {
		t.Fatal("the release unmapped the tables' indexes too")
	}
	for _, tb := range tables {
		if cached, pages := pageCached(t, tb); cached == 0 {
			t.Fatalf("%s: none of %d pages left in the page cache", tb, pages)
		}
	}
	readAll()
}

// residentKiB sums the resident size of this process's mappings of files
// in dir whose names end in suffix (/proc/self/smaps).
func residentKiB(t *testing.T, dir, suffix string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps: ", err)
	}
	defer f.Close()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], abs+"/") && strings.HasSuffix(fields[5], suffix)
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kib, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kib
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// pageCached maps path read-only and asks mincore how many of its pages
// the page cache holds (for a file mapping mincore reports the cache,
// whether or not this mapping has touched the pages).
func pageCached(t *testing.T, path string) (cached, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	pages = (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, pages
}

// TestReleaseFilePagesDuringCompactions: hand-backs running while writes
// flush memtables and compactions replace (and unmap) tables change no
// value and crash nothing: only tables pinned for the hand-back are
// advised (pages_linux.go).
func TestReleaseFilePagesDuringCompactions(t *testing.T) {
	kv, err := badgerkv.Open(t.TempDir(), badgerkv.Options{MemTableSize: 1 << 20, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	value := func(i int) []byte { return []byte(fmt.Sprintf("%06d %s", i, strings.Repeat("v", 1000))) }
	const batches, perBatch = 60, 100 // ~6 MB: flushes and compactions of 1 MiB memtables
	done := make(chan error, 1)
	go func() {
		for b := range batches {
			err := kv.Update(func(w store.Writer) error {
				for i := b * perBatch; i < (b+1)*perBatch; i++ {
					if err := w.Set([]byte(fmt.Sprintf("k%06d", i)), value(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var advised int64
	for hands := 0; ; hands++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			advised += kv.ReleaseFilePages()
			if advised == 0 {
				t.Fatalf("%d hand-backs advised no table", hands+1)
			}
			readsBack(t, kv, batches*perBatch, value)
			return
		default:
			advised += kv.ReleaseFilePages()
		}
	}
}

// TestKeptOutLeavesTheIndexMapped: for any table file (its size, its index's
// size, a footer of up to a page less a byte after the index) and page size,
// the part of its mapping the hand-back advises is whole pages, ends before
// the index's first byte, and leaves mapped at most the index and three
// pages; a table no larger than that keeps all of it.
func TestKeptOutLeavesTheIndexMapped(t *testing.T) {
	prop := func(fileSize, indexSize, footer uint32, pageShift uint8) bool {
		page := uintptr(1) << (12 + pageShift%5) // 4 KiB to 64 KiB
		file := uintptr(fileSize) + 1
		foot := uintptr(footer) % page
		if foot >= file {
			foot = file - 1
		}
		index := uintptr(indexSize) % (file - foot)
		mapped := (file + page - 1) &^ (page - 1)
		cut := badgerkv.KeptOut(mapped, index, page)
		indexStart := file - foot - index
		switch {
		case index+2*page >= mapped && cut != 0:
			t.Logf("cut %d of a mapping of %d no larger than its index %d and two pages", cut, mapped, index)
		case cut%page != 0:
			t.Logf("cut %d is not whole pages of %d", cut, page)
		case cut > indexStart:
			t.Logf("cut %d passes the index's start %d (file %d, index %d, footer %d)", cut, indexStart, file, index, foot)
		case mapped-cut > index+3*page:
			t.Logf("cut %d keeps %d of %d mapped, more than the index %d and three pages", cut, mapped-cut, mapped, index)
		default:
			return true
		}
		return false
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20000}); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseFilePagesPagesOutTheLogs: the memtable log's pages a node's
// writes made resident leave the process at a hand-back once synced, and
// what the log holds is all still there: a copy of the directory taken
// then (as a crash would leave it: the memtable not flushed) replays every
// write.
func TestReleaseFilePagesPagesOutTheLogs(t *testing.T) {
	dir := t.TempDir()
	kv, err := badgerkv.Open(dir, badgerkv.Options{MemTableSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	value := func(i int) []byte { return []byte(fmt.Sprintf("%06d %s", i, strings.Repeat("w", 1000))) }
	const n = 3000 // ~3 MB: one memtable, not flushed
	for b := range n / 100 {
		err := kv.Update(func(w store.Writer) error { // synced, as the store's group commit syncs
			for i := b * 100; i < (b+1)*100; i++ {
				if err := w.Set([]byte(fmt.Sprintf("k%06d", i)), value(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if tables, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(tables) != 0 {
		t.Fatalf("the writes were flushed to %d tables: no log left to hand back", len(tables))
	}
	before := residentKiB(t, dir, ".mem")
	if before < 1<<10 {
		t.Fatalf("%d KiB of the memtable log resident after ~3 MB of writes: nothing to hand back", before)
	}
	if advised := kv.ReleaseFilePages(); advised <= 0 {
		t.Fatalf("advised %d bytes", advised)
	}
	if after := residentKiB(t, dir, ".mem"); after > before/8 {
		t.Fatalf("%d KiB of the memtable log still resident after the hand-back, of %d before", after, before)
	}
	crashed := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "mnemo.lock" || e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	replayed := mustOpen(t, crashed)
	defer replayed.Close()
	readsBack(t, kv, n, value)
	readsBack(t, replayed, n, value)
}

// readsBack checks that kv holds value(i) under the key k%06d for each i
// below n.
func readsBack(t *testing.T, kv *badgerkv.KV, n int, value func(int) []byte) {
	t.Helper()
	err := kv.View(func(r store.Reader) error {
		for i := range n {
			got, err := r.Get([]byte(fmt.Sprintf("k%06d", i)))
			if err != nil {
				return fmt.Errorf("k%06d: %w", i, err)
			}
			if !bytes.Equal(got, value(i)) {
				return fmt.Errorf("k%06d reads back %.20q…", i, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
