package badgerkv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Syncing. Badger is opened without SyncWrites, so a commit returns once
// it is in the memtable and its log (and, for a value of ValueThreshold or
// more, the value log), written through a shared mapping but not synced;
// the store's group commit syncs once for every commit made meanwhile
// (Sync).
//
// Badger's DB.Sync (v4.9.6, db.go) syncs the log of the current memtable
// and the current value-log file only. Neither rotation syncs the file it
// leaves: a memtable that fills is swapped for a new one, with a new log,
// by the write goroutine before it writes the next request
// (ensureRoomForWrite), and the old log is synced by nothing — its
// entries become durable when the flush of that memtable has written and
// synced an L0 table and the manifest, after which the log is deleted; a
// value-log file that fills is closed by doneWriting, which syncs it only
// with SyncWrites. So a commit made just before a rotation and synced
// with DB.Sync just after it would be acknowledged while still only in
// the page cache.
//
// So Sync does not call DB.Sync: it fdatasyncs every log that may hold a
// commit made before it began, through its own descriptor (the pages
// Badger dirtied through its mapping are in the same page cache). The
// logs are numbered in sequence (00001.mem, 000001.vlog); a new one is
// created by the one write goroutine after its last write to the one
// before, so the logs a commit made before a Sync can be in run from the
// newest one the last Sync saw to the newest one now, and Sync syncs those
// of them still there (one file unless a rotation came between), and the
// directory when one of them is new to it. A file already gone
// was flushed to a synced table (a memtable log) or collected (a value
// log: the node runs no value-log GC). The value logs are synced only
// when a commit since the last Sync wrote a value big enough to go there
// (rare: values of 64 KiB or more); DB.Sync syncs the current one every
// time, which at one client cost ~1 ms of the ~3.5 ms a sync took on this
// machine (go test -bench in a scratch module, noisy: the disk is shared).

const (
	memExt  = ".mem"
	vlogExt = ".vlog"
)

func memName(fid uint32) string  { return fmt.Sprintf("%05d%s", fid, memExt) }
func vlogName(fid uint32) string { return fmt.Sprintf("%06d%s", fid, vlogExt) }

// Sync makes every commit made before it durable (see above). One at a
// time.
func (k *KV) Sync() error {
	if k.noSync {
		return nil
	}
	k.syncMu.Lock()
	defer k.syncMu.Unlock()
	if err := k.syncLogs(&k.memFid, memExt, memName); err != nil {
		return err
	}
	if k.bigValues.Swap(false) {
		return k.syncLogs(&k.vlogFid, vlogExt, vlogName)
	}
	return nil
}

// syncLogs syncs every log with extension ext numbered *fid (the newest
// the last Sync saw) or more that is there now, and moves *fid to the
// newest of them. It reads the directory rather than stepping from *fid
// while the next file is there: between two Syncs Badger may rotate more
// than once and flush (delete) a log in between, and a walk that stopped
// at the first gap would miss the newest. A log gone between the listing
// and its sync was flushed to a synced table.
func (k *KV) syncLogs(fid *uint32, ext string, name func(uint32) string) error {
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return fmt.Errorf("badgerkv: sync: %w", err)
	}
	newest := *fid
	for _, e := range entries {
		n, ok := logNumber(e.Name(), ext)
		if !ok || n < *fid {
			continue
		}
		if err := k.fsync(filepath.Join(k.dir, name(n))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("badgerkv: sync: %w", err)
		}
		newest = max(newest, n)
	}
	if newest > *fid {
		// A log created since the last Sync: Badger does not sync the
		// directory when it creates one (ristretto's OpenMmapFile syncs
		// it only for a file it does not size), and a crash could lose
		// the new name and with it the commits the log holds.
		if err := k.fsync(k.dir); err != nil {
			return fmt.Errorf("badgerkv: sync: directory: %w", err)
		}
	}
	*fid = newest
	return nil
}

// findLogs notes the newest memtable log and value log (Open).
func (k *KV) findLogs() error {
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return fmt.Errorf("badgerkv: %w", err)
	}
	for _, e := range entries {
		for _, l := range []struct {
			ext string
			fid *uint32
		}{{memExt, &k.memFid}, {vlogExt, &k.vlogFid}} {
			if n, ok := logNumber(e.Name(), l.ext); ok && n > *l.fid {
				*l.fid = n
			}
		}
	}
	return nil
}

// logNumber is the number of the log named name with extension ext; ok
// is false for any other file.
func logNumber(name, ext string) (n uint32, ok bool) {
	base, ok := strings.CutSuffix(name, ext)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(base, 10, 32)
	return uint32(v), err == nil
}

// fdatasync syncs the file or directory at path (syncData: sync_linux.go,
// sync_other.go).
func fdatasync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = syncData(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
