package mnemo_test

import (
	"strings"
	"testing"
)

// TestMemoryCoreImportsNoFeature guards node/memory's doc ("Record kinds
// and features"): features live in subpackages of node/memory that use the
// core through interfaces; the core never imports one of them, so a
// feature can be added or removed without touching it.
func TestMemoryCoreImportsNoFeature(t *testing.T) {
	const core = "github.com/mnemohq/mnemo/node/memory"
	for _, p := range deps(t, "./node/memory") {
		if strings.HasPrefix(p, core+"/") {
			t.Errorf("node/memory imports its feature package %s; the node wires features, the core knows none", p)
		}
	}
}
