package node

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func chmod(t *testing.T, path string, m fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, m); err != nil { // Chmod, unlike Mkdir and WriteFile, ignores the umask
		t.Fatal(err)
	}
}

// A data directory, or files in it, that group or others can reach are
// tightened at start (0700 / 0600), with a warning naming each path; a
// symlink's target is left alone. Every file the node leaves is owner-only.
func TestOpenTightensTheDataDirectory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes carry no access rights on Windows")
	}
	dir := filepath.Join(t.TempDir(), "data")
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	loose := map[string]fs.FileMode{
		filepath.Join(dir, TokenFile):    0o644,
		filepath.Join(dir, "notes"):      0o604,
		filepath.Join(sub, "nested"):     0o660,
		filepath.Join(dir, "executable"): 0o755,
		outside:                          0o644,
	}
	for p, m := range loose {
		if err := os.WriteFile(p, []byte("owner-token-0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		chmod(t, p, m)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	chmod(t, sub, 0o750)
	chmod(t, dir, 0o755)

	cfg, logs := testConfig(t, dir)
	n := mustOpen(t, cfg)
	for p, want := range map[string]fs.FileMode{
		dir: 0o700, sub: 0o700, filepath.Join(dir, TokenFile): 0o600, filepath.Join(dir, "notes"): 0o600,
		filepath.Join(sub, "nested"): 0o600, filepath.Join(dir, "executable"): 0o700, outside: 0o644,
	} {
		if got := modeOf(t, p); got != want {
			t.Errorf("%s: mode %#o, want %#o", p, got, want)
		}
	}
	out := logs.String()
	for _, p := range []string{dir, sub, filepath.Join(dir, TokenFile), filepath.Join(dir, "notes"), filepath.Join(sub, "nested")} {
		if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "path="+p+" ") {
			t.Errorf("no warning names %s:\n%s", p, out)
		}
	}
	if strings.Contains(out, "path="+outside) {
		t.Errorf("the symlink's target was touched:\n%s", out)
	}

	// Whatever the node and its store created is owner-only once it closes.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		if m := modeOf(t, p); m&0o077 != 0 {
			t.Errorf("%s left with mode %#o", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A cluster key file that group or others may read is refused, naming the
// file and the fix; `mnemo cluster-key FILE` writes one with mode 0600 and
// never replaces a file.
func TestClusterKeyFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes carry no access rights on Windows")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.key")
	const key = "c2VjcmV0LWtleS0wMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Ng=="
	if err := WriteClusterKey(path, key); err != nil {
		t.Fatal(err)
	}
	if m := modeOf(t, path); m != 0o600 {
		t.Fatalf("written with mode %#o", m)
	}
	if err := WriteClusterKey(path, "other"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("replaced an existing key file: %v", err)
	}
	b, err := ReadClusterKey(path)
	if err != nil || strings.TrimSpace(string(b)) != key {
		t.Fatalf("read back %q, %v", b, err)
	}
	for _, m := range []fs.FileMode{0o644, 0o640, 0o604, 0o620} {
		chmod(t, path, m)
		_, err := ReadClusterKey(path)
		if !errors.Is(err, ErrLooseKeyFile) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %#o: %v", m, err)
		}
	}
	chmod(t, path, 0o400)
	if _, err := ReadClusterKey(path); err != nil {
		t.Fatalf("read-only for the owner: %v", err)
	}
}
