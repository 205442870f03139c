package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memory"
)

// The node key is made once (0600), survives restarts, and gives the
// replica id; a corrupt key file stops the node.
func TestAccessIdentity(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := testConfig(t, dir)
	n := mustOpen(t, cfg)
	id := n.Identity()
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, st)
	}
	if n.Service().Replica() != id.ReplicaID() || string(n.NodeID()) != string(acl.NodeIDOf(id.Public)) {
		t.Fatalf("replica %v, node id %s: not derived from the key", n.Service().Replica(), n.NodeID())
	}
	n.Close()
	n2 := mustOpen(t, cfg)
	if !n2.Identity().Public.Equal(id.Public) {
		t.Fatal("a restart made a new key")
	}
	n2.Close()
	os.WriteFile(filepath.Join(dir, KeyFile), []byte("not a key\n"), 0o600)
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), KeyFile) {
		t.Fatalf("corrupt key: %v", err)
	}
}

// config.json: a missing file is no rules; a bad one stops the node with an
// error naming it; rules map X-Mnemo-Session to principals for the owner
// token, and those principals are local (they can create namespaces).
func TestAccessSettingsAndSessions(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := testConfig(t, dir)
	for _, bad := range []string{
		`{"principal_rules":[{"mode":"glob","match":"x","principal":"bob"}]}`,
		`{"principal_rule":[]}`,
		`{"auto_promote":{"enabled":true,"namespace":"agent://x"}}`,
		`{"duplicates":{"embeddings":{"enabled":true,"base_url":"ftp://x","model":"m"}}}`,
		`not json`,
	} {
		os.WriteFile(filepath.Join(dir, SettingsFile), []byte(bad), 0o600)
		if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), SettingsFile) {
			t.Fatalf("settings %s: %v", bad, err)
		}
	}
	os.WriteFile(filepath.Join(dir, SettingsFile), []byte(`{
		"principal_rules": [
			{"mode": "map", "match": "bob-main", "principal": "agent://bob"},
			{"mode": "regex", "match": "^agent:([a-z0-9-]+):", "principal": "agent://$1"}
		]}`), 0o600)
	n := mustOpen(t, cfg)
	go n.Serve(t.Context())
	ctx := context.Background()
	owner, err := client.New(n.Addr(), n.Token())
	if err != nil {
		t.Fatal(err)
	}
	bob := owner.WithSession("bob-main")
	carol := owner.WithSession("agent:carol:main")
	if _, err := owner.Save(ctx, memory.SaveRequest{Content: "alice private"}); err != nil {
		t.Fatal(err)
	}
	res, err := bob.Save(ctx, memory.SaveRequest{Content: "bob's own"})
	if err != nil || res.Namespace != "agent://bob" {
		t.Fatalf("bob's save: %+v %v", res, err)
	}
	if r, err := bob.Search(ctx, memory.SearchQuery{Query: "private"}); err != nil || r.Total != 0 {
		t.Fatalf("bob sees alice's memory: %+v %v", r, err)
	}
	if _, err := carol.Search(ctx, memory.SearchQuery{Query: "private", Filter: memory.Filter{Namespace: "agent://alice"}}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("carol reads alice's namespace: %v", err)
	}
	// carol became local when her session key resolved: she can create.
	if info, err := carol.CreateNamespace(ctx, "team://carols"); err != nil || info.Root != "agent://carol" {
		t.Fatalf("carol creates: %+v %v", info, err)
	}
	for _, p := range []string{"agent://alice", "agent://bob", "agent://carol"} {
		if !slices.Contains(n.Principals(), namespace.MustParse(p)) {
			t.Errorf("%s not among the local principals %v", p, n.Principals())
		}
	}
	// A bound token ignores the session header and cannot issue tokens.
	tok, err := owner.IssueToken(ctx, "agent://dave")
	if err != nil {
		t.Fatal(err)
	}
	dave, _ := client.New(n.Addr(), tok)
	if res, err := dave.WithSession("bob-main").Save(ctx, memory.SaveRequest{Content: "dave's"}); err != nil || res.Namespace != "agent://dave" {
		t.Fatalf("dave with bob's session key: %+v %v", res, err)
	}
	if _, err := dave.IssueToken(ctx, "agent://alice"); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("a bound token issued a token: %v", err)
	}
	if _, err := owner.IssueToken(ctx, "team://x"); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("a token for a team: %v", err)
	}
	// Tokens survive a restart.
	n.Close()
	n2 := mustOpen(t, cfg)
	go n2.Serve(t.Context())
	dave2, _ := client.New(n2.Addr(), tok)
	if r, err := dave2.Search(ctx, memory.SearchQuery{Query: "dave's"}); err != nil || r.Total != 1 {
		t.Fatalf("dave after a restart: %+v %v", r, err)
	}
}
