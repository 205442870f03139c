package mnemo_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyDirection guards the layout in DESIGN.md: the pure packages
// never reach storage, transport or the network, directly or transitively.
func TestDependencyDirection(t *testing.T) {
	pure := []string{"crdt", "namespace", "acl", "projection"}
	forbidden := []string{
		"github.com/dgraph-io/badger",
		"github.com/quic-go/quic-go",
		"github.com/hashicorp/memberlist",
		"net", // exact: net/url and net/netip are pure
		"net/http",
	}
	for _, dir := range pure {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue // the folder gets created with its first code
		}
		out, err := exec.Command("go", "list", "-deps", "-json=ImportPath", "./"+dir+"/...").Output()
		if err != nil {
			t.Fatalf("go list %s: %v", dir, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for dec.More() {
			var p struct{ ImportPath string }
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			for _, f := range forbidden {
				if p.ImportPath == f || (strings.Contains(f, ".") && strings.HasPrefix(p.ImportPath, f+"/")) {
					t.Errorf("%s depends on %s; DESIGN.md keeps it pure", dir, p.ImportPath)
				}
			}
		}
	}
}
