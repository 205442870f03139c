package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// `mnemo cluster-key FILE` writes the key with mode 0600 and does not
// replace a file; without FILE it prints the key. `mnemo node` refuses a
// key file group or others may read, naming it and the chmod fix.
func TestClusterKeyCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes carry no access rights on Windows")
	}
	ctx := context.Background()
	var out, errb bytes.Buffer
	if code := runClusterKey(ctx, nil, nil, &out, &errb); code != exitOK || len(strings.TrimSpace(out.String())) < 40 {
		t.Fatalf("print: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	path := filepath.Join(t.TempDir(), "cluster.key")
	out.Reset()
	if code := runClusterKey(ctx, []string{path}, nil, &out, &errb); code != exitOK {
		t.Fatalf("write: exit %d, stderr %q", code, errb.String())
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", info, err)
	}
	key, _ := os.ReadFile(path)
	if strings.Contains(out.String(), strings.TrimSpace(string(key))) {
		t.Fatal("the key written to a file was printed too")
	}
	errb.Reset()
	if code := runClusterKey(ctx, []string{path}, nil, &out, &errb); code == exitOK || !strings.Contains(errb.String(), "exists") {
		t.Fatalf("overwrite: exit %d, stderr %q", code, errb.String())
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, key) {
		t.Fatal("an existing key file was replaced")
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	code := runNode(ctx, []string{"--data", t.TempDir(), "--http", "127.0.0.1:0", "--agent", "k", "--cluster-key", path}, nil, &out, &errb)
	if code == exitOK || !strings.Contains(errb.String(), path) || !strings.Contains(errb.String(), "chmod 600 "+path) {
		t.Fatalf("node with a loose key file: exit %d, stderr %q", code, errb.String())
	}
}
