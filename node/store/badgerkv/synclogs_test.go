package badgerkv

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Between two Syncs Badger may rotate its memtable twice and flush the
// log in the middle (and the one the last Sync saw): the newest log must
// still be synced, though the logs before it are gone, and the directory
// too, which holds its new name.
func TestSyncFindsTheNewestLogPastAGap(t *testing.T) {
	dir := t.TempDir()
	var synced []string
	k := &KV{dir: dir, memFid: 5, fsync: func(path string) error {
		if _, err := os.Stat(path); err != nil {
			return err
		}
		synced = append(synced, filepath.Base(path))
		return nil
	}}
	for _, name := range []string{memName(3), memName(7), vlogName(1)} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Sync(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(synced, []string{memName(7), filepath.Base(dir)}) || k.memFid != 7 {
		t.Fatalf("Sync synced %v and saw log %d as the newest; want [%s %s] and 7", synced, k.memFid, memName(7), filepath.Base(dir))
	}
	// No new log since: the directory is not synced again.
	synced = nil
	if err := k.Sync(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(synced, []string{memName(7)}) {
		t.Fatalf("a Sync with no new log synced %v; want [%s]", synced, memName(7))
	}
}
