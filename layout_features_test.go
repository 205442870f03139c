package mnemo_test

import (
	"slices"
	"strings"
	"testing"
)

// pureLogic are the pure packages node/memory's core may import (the
// layout rule "node's pure packages"): logic shared by the core and its
// features, holding no feature of its own.
var pureLogic = []string{"node/schema", "node/similarity", "node/memory/effective"}

// TestMemoryCoreImportsNoFeature guards node/memory's doc ("Record kinds
// and features"): a feature lives in a subpackage of node/memory that uses
// the core through interfaces, and the core never imports one, so a
// feature can be added or removed without touching the core.
func TestMemoryCoreImportsNoFeature(t *testing.T) {
	core := mod("node/memory")
	for _, p := range listDeps(t)[core] {
		if strings.HasPrefix(p, core+"/") && !slices.Contains(pureLogic, strings.TrimPrefix(p, module+"/")) {
			t.Errorf("node/memory imports its feature package %s; the node wires features, the core knows none", p)
		}
	}
}
