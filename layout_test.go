package mnemo_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// storageAndTransport are the heavy dependencies only the node's core and
// the cluster loop may link.
var storageAndTransport = []string{
	"github.com/dgraph-io/badger",
	"github.com/quic-go/quic-go",
	"github.com/hashicorp/memberlist",
}

// TestDependencyDirection guards the layout in DESIGN.md: the pure packages
// never reach storage, transport or the network, directly or transitively.
func TestDependencyDirection(t *testing.T) {
	pure := []string{"crdt", "namespace", "acl", "projection"}
	forbidden := append(slices.Clone(storageAndTransport),
		"net", // exact: net/url and net/netip are pure
		"net/http",
	)
	for _, dir := range pure {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue // the folder gets created with its first code
		}
		for _, p := range deps(t, "./"+dir+"/...") {
			if f, bad := matches(p, forbidden); bad {
				t.Errorf("%s depends on %s (%s); DESIGN.md keeps it pure", dir, p, f)
			}
		}
	}
}

// TestEdgesLinkNoStorage guards "Inside node/" in DESIGN.md: the HTTP
// client and the MCP tools speak the API through node/memapi and never link
// Badger, QUIC or memberlist (issue 12).
func TestEdgesLinkNoStorage(t *testing.T) {
	for _, pkg := range []string{"./node/memapi", "./node/client", "./node/mcptools"} {
		for _, p := range deps(t, pkg) {
			if f, bad := matches(p, storageAndTransport); bad {
				t.Errorf("%s depends on %s (%s); DESIGN.md keeps the API's edges free of storage", pkg, p, f)
			}
		}
	}
}

// TestSchemaIsPure guards "one schema" in DESIGN.md: node/schema is shared
// by the node and the simulator, so it defines the stored shape without the
// memory core, the store or anything heavy behind it (issue 12).
func TestSchemaIsPure(t *testing.T) {
	forbidden := append(slices.Clone(storageAndTransport),
		"github.com/mnemohq/mnemo/node/memory",
		"github.com/mnemohq/mnemo/node/store",
	)
	for _, p := range deps(t, "./node/schema") {
		if f, bad := matches(p, forbidden); bad {
			t.Errorf("node/schema depends on %s (%s); DESIGN.md keeps the schema below the memory core", p, f)
		}
	}
}

// deps lists the import paths pattern depends on, transitively, as
// `go list -deps` does (tests excluded).
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath", pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var paths []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p.ImportPath)
	}
	return paths
}

// matches reports which of forbidden names path: a module path (with a dot)
// covers its subpackages, a standard-library path only itself.
func matches(path string, forbidden []string) (string, bool) {
	for _, f := range forbidden {
		if path == f || (strings.Contains(f, ".") && strings.HasPrefix(path, f+"/")) {
			return f, true
		}
	}
	return "", false
}
