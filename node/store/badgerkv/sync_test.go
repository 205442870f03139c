package badgerkv_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// syncRecorder records the files Sync syncs.
type syncRecorder struct {
	mu    sync.Mutex
	paths []string
}

func (r *syncRecorder) fsync(path string) error {
	r.mu.Lock()
	r.paths = append(r.paths, filepath.Base(path))
	r.mu.Unlock()
	return nil
}

func (r *syncRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paths
	r.paths = nil
	return p
}

func logs(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	slices.Sort(m)
	return m
}

// A commit whose memtable is rotated out before the Sync is synced by it:
// Sync syncs every memtable log from the newest the last Sync saw to the
// newest now (Badger's DB.Sync would sync only the newest, and its
// rotation syncs nothing). UpdateNoSync syncs nothing; a value big enough
// for the value log makes Sync sync that too.
func TestSyncCoversRotatedLogs(t *testing.T) {
	dir := t.TempDir()
	kv, err := badgerkv.Open(dir, badgerkv.Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	rec := &syncRecorder{}
	badgerkv.SetFsync(kv, rec.fsync)
	first := logs(t, dir, ".mem")
	if len(first) == 0 {
		t.Fatal("no memtable log")
	}
	start := first[len(first)-1]
	val := []byte(strings.Repeat("x", 1000))
	for i := 0; logs(t, dir, ".mem")[len(logs(t, dir, ".mem"))-1] == start; i++ {
		if i > 10000 {
			t.Fatal("the memtable never rotated")
		}
		if err := kv.UpdateNoSync(func(w store.Writer) error { return w.Set(fmt.Appendf(nil, "k%06d", i), val) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("UpdateNoSync synced %v", got)
	}
	if err := kv.Sync(); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	now := logs(t, dir, ".mem")
	newest := now[len(now)-1]
	if !slices.Contains(got, start) || !slices.Contains(got, newest) {
		t.Fatalf("Sync synced %v; want the rotated log %s and the current %s", got, start, newest)
	}
	if slices.ContainsFunc(got, func(p string) bool { return strings.HasSuffix(p, ".vlog") }) {
		t.Fatalf("Sync synced a value log with no value there: %v", got)
	}

	// No rotation since: only the current log.
	if err := kv.Update(func(w store.Writer) error { return w.Set([]byte("small"), val) }); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !slices.Equal(got, []string{newest}) {
		t.Fatalf("Update synced %v, want [%s]", got, newest)
	}
	big := []byte(strings.Repeat("y", 100<<10)) // over the 64 KiB threshold
	if err := kv.Update(func(w store.Writer) error { return w.Set([]byte("big"), big) }); err != nil {
		t.Fatal(err)
	}
	got = rec.take()
	vlogs := logs(t, dir, ".vlog")
	if !slices.Contains(got, vlogs[len(vlogs)-1]) {
		t.Fatalf("a value in the value log, and Sync synced %v (value logs %v)", got, vlogs)
	}
}
