package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
)

// The data directory holds the owner token, the node's private key and
// every memory in clear: only its owner may read it. Open tightens it (the
// directory and everything under it lose all group and other access) and
// logs a warning naming each path it had to change. Badger creates some of
// its files (value log, discard stats) with 0666 less the umask, so the node
// also tightens, quietly, right after opening the store, on every
// housekeeping tick and at Close: a warning at the next start then means
// something else loosened a file. A key file given on the command line is
// another matter: the node did not write it, so a loose one is refused
// (ReadClusterKey) rather than changed behind the operator's back.

// groupOther is the permission bits of everyone but the owner.
const groupOther fs.FileMode = 0o077

// tightenPerms removes group and other access from dir and every directory
// and regular file under it (0755 → 0700, 0644 → 0600), returning each path
// it changed with its mode before. Symbolic links are not followed. A file
// that vanishes meanwhile (Badger deletes memtables and old tables) is
// skipped. On Windows, where modes do not carry access rights, it does
// nothing.
func tightenPerms(dir string) (changed []permChange, err error) {
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil // symlinks, sockets: not ours to change
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		mode := info.Mode().Perm()
		if mode&groupOther == 0 {
			return nil
		}
		if err := os.Chmod(path, mode&^groupOther); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		changed = append(changed, permChange{path, mode, mode &^ groupOther})
		return nil
	})
	if err != nil {
		return changed, fmt.Errorf("node: tighten permissions under %s: %w", dir, err)
	}
	return changed, nil
}

type permChange struct {
	path     string
	was, now fs.FileMode
}

// securePerms runs tightenPerms on dir and logs each change at level.
func securePerms(dir string, log *slog.Logger, level slog.Level, msg string) error {
	changed, err := tightenPerms(dir)
	for _, c := range changed {
		log.Log(context.Background(), level, msg, "path", c.path, "was", fmt.Sprintf("%#o", c.was), "now", fmt.Sprintf("%#o", c.now))
	}
	return err
}

// ErrLooseKeyFile is returned by ReadClusterKey for a key file that group
// or others may read.
var ErrLooseKeyFile = errors.New("node: key file readable by group or others")

// ReadClusterKey reads a cluster key file (as `mnemo cluster-key PATH`
// writes it), refusing one that group or others may read or write: anyone
// holding the key can join the cluster's gossip. The mode is checked on the
// opened file, so a file swapped after the check is not read. The error
// names the file and the fix (chmod 600).
func ReadClusterKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("node: cluster key: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("node: cluster key: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("node: cluster key %s is not a regular file", path)
	}
	if m := info.Mode().Perm(); runtime.GOOS != "windows" && m&groupOther != 0 {
		return nil, fmt.Errorf("%w: %s has mode %#o; run: chmod 600 %s", ErrLooseKeyFile, path, m, path)
	}
	// A key is some 45 bytes of base64; a larger file is not one.
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("node: cluster key: %w", err)
	}
	return b, nil
}

// WriteClusterKey writes key to a new file at path, mode 0600. It refuses
// to replace an existing file: a cluster's key overwritten by mistake cuts
// the node off from its peers.
func WriteClusterKey(path string, key string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("node: write cluster key: %w", err)
	}
	if _, err := io.WriteString(f, key+"\n"); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("node: write cluster key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("node: write cluster key: %w", err)
	}
	return f.Close()
}
