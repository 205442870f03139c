package node

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memory"
)

// logBuf collects log output (and mirrors it to t.Log).
type logBuf struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testConfig(t *testing.T, dir string) (Config, *logBuf) {
	lb := &logBuf{t: t}
	return Config{
		Dir:      dir,
		HTTPAddr: "127.0.0.1:0",
		Agent:    "alice",
		Logger:   slog.New(slog.NewTextHandler(lb, nil)),
	}, lb
}

func mustOpen(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestOpenWritesTokenAndInfo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created by Open
	cfg, _ := testConfig(t, dir)
	n := mustOpen(t, cfg)

	if !strings.HasPrefix(n.Addr(), "http://127.0.0.1:") || strings.HasSuffix(n.Addr(), ":0") {
		t.Fatalf("Addr %q: want the real loopback port", n.Addr())
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("data dir mode %v, want 0700", m)
	}
	tok, err := ReadToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) != 32 {
		t.Fatalf("token %q: want 32 bytes base64url (%v)", tok, err)
	}
	if tok != n.Token() {
		t.Fatal("Token() differs from the file")
	}
	if m := mode(t, filepath.Join(dir, TokenFile)); m != 0o600 {
		t.Errorf("token mode %v, want 0600", m)
	}
	info, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info != (Info{PID: os.Getpid(), HTTP: n.Addr(), Agent: "agent://alice"}) {
		t.Fatalf("node.json %+v", info)
	}
	if m := mode(t, filepath.Join(dir, InfoFile)); m != 0o600 {
		t.Errorf("node.json mode %v, want 0600", m)
	}
	if n.Service().Owner().String() != "agent://alice" {
		t.Fatalf("owner %v", n.Service().Owner())
	}
}

func TestSecondOpenFailsNamingHolder(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := testConfig(t, dir)
	n := mustOpen(t, cfg)
	before, _ := os.ReadFile(filepath.Join(dir, InfoFile))

	_, err := Open(cfg)
	if err == nil {
		t.Fatal("second Open on the same directory succeeded")
	}
	if !errors.Is(err, memory.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("error %q: want memory.ErrLocked naming pid %d", err, os.Getpid())
	}
	after, _ := os.ReadFile(filepath.Join(dir, InfoFile))
	if !bytes.Equal(before, after) {
		t.Fatalf("failed Open changed node.json: %s → %s", before, after)
	}
	// The first node still serves.
	go n.Serve(t.Context())
	if err := waitHealthy(t, n.Addr()); err != nil {
		t.Fatal(err)
	}
}

func waitHealthy(t *testing.T, base string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.New(base, "")
	if err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.Health(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node at %s never became healthy", base)
		case <-tick.C:
		}
	}
}

func TestServeShutdownAndReopen(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := testConfig(t, dir)
	n := mustOpen(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()

	c, err := client.New(n.Addr(), n.Token())
	if err != nil {
		t.Fatal(err)
	}
	saved, err := c.Save(t.Context(), memory.SaveRequest{Type: "decision", Content: "persist me"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := client.New(n.Addr(), "wrong-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Stats(t.Context(), ""); err == nil {
		t.Fatal("a wrong token was accepted")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("node.json still there after shutdown: %v", err)
	}
	if err := c.Health(t.Context()); !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("health after shutdown: %v, want ErrUnreachable", err)
	}
	if err := n.Close(); err != nil { // idempotent
		t.Fatalf("second Close: %v", err)
	}

	// The lock is released: the directory reopens, same token, same data.
	n2 := mustOpen(t, cfg)
	if n2.Token() != n.Token() {
		t.Fatal("token changed across restarts")
	}
	m, err := n2.Service().Get(t.Context(), memory.Caller{Principal: n2.Service().Owner()}, saved.ID, false)
	if err != nil || m.Content != "persist me" {
		t.Fatalf("after restart: %+v, %v", m, err)
	}
	if err := n2.Serve(ctx); err != nil { // ctx is already done: Serve shuts down at once
		t.Fatalf("Serve on a done context: %v", err)
	}
	if err := n2.Serve(ctx); err == nil {
		t.Fatal("second Serve did not fail")
	}
}

func TestFallbackPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	cfg, _ := testConfig(t, t.TempDir())
	cfg.HTTPAddr = busy.Addr().String()
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Open on a busy port without fallback: %v", err)
	}
	// The failed Open released the directory: it opens again.
	cfg.FallbackPort = true
	n := mustOpen(t, cfg)
	if n.Addr() == "http://"+busy.Addr().String() {
		t.Fatalf("fallback kept the busy address %s", n.Addr())
	}
	go n.Serve(t.Context())
	if err := waitHealthy(t, n.Addr()); err != nil {
		t.Fatal(err)
	}
}

func TestNonLoopbackWarns(t *testing.T) {
	cfg, lb := testConfig(t, t.TempDir())
	cfg.HTTPAddr = "0.0.0.0:0"
	n := mustOpen(t, cfg)
	if !strings.Contains(lb.String(), "level=WARN") || !strings.Contains(lb.String(), "beyond loopback") {
		t.Fatalf("no warning logged for 0.0.0.0; log:\n%s", lb.String())
	}
	if !strings.HasPrefix(n.Addr(), "http://127.0.0.1:") {
		t.Fatalf("Addr %q: want a dialable loopback URL", n.Addr())
	}

	cfg2, lb2 := testConfig(t, t.TempDir())
	mustOpen(t, cfg2)
	if strings.Contains(lb2.String(), "beyond loopback") {
		t.Fatal("warned for a loopback address")
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no dir":             {Agent: "alice"},
		"bad agent":          {Dir: t.TempDir(), Agent: "team://x"},
		"agent with path":    {Dir: t.TempDir(), Agent: "agent://alice/sub"},
		"negative body":      {Dir: t.TempDir(), Agent: "alice", MaxBodyBytes: -1},
		"negative timeout":   {Dir: t.TempDir(), Agent: "alice", ShutdownTimeout: -time.Second},
		"tree of one":        {Dir: t.TempDir(), Agent: "alice", TreeThreshold: 1},
		"negative trees":     {Dir: t.TempDir(), Agent: "alice", TreeThreshold: -3},
		"on demand from one": {Dir: t.TempDir(), Agent: "alice", BindingsOnDemandAt: 1},
		"on demand negative": {Dir: t.TempDir(), Agent: "alice", BindingsOnDemandAt: -2},
	} {
		if n, err := Open(cfg); err == nil {
			n.Close()
			t.Errorf("%s: Open accepted %+v", name, cfg)
		}
	}
}

func TestShortTokenRejected(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(t, dir)
	if n, err := Open(cfg); err == nil {
		n.Close()
		t.Fatal("Open accepted a 3-byte token")
	}
	// …and released the lock, so fixing the file is enough.
	os.Remove(filepath.Join(dir, TokenFile))
	mustOpen(t, cfg)
}

func TestDefaults(t *testing.T) {
	t.Setenv("MNEMO_DATA", "/some/where")
	if d, err := DefaultDir(); err != nil || d != "/some/where" {
		t.Fatalf("DefaultDir with MNEMO_DATA: %q, %v", d, err)
	}
	t.Setenv("MNEMO_DATA", "")
	t.Setenv("HOME", "/home/x")
	if d, err := DefaultDir(); err != nil || d != "/home/x/.mnemo" {
		t.Fatalf("DefaultDir: %q, %v", d, err)
	}
	name := DefaultAgentName()
	if name == "" || strings.ContainsAny(name, " @/:") {
		t.Fatalf("DefaultAgentName %q", name)
	}
}
