package mcptools_test

import (
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
)

// TestToolsListedWithoutFeatures: the tool list does not depend on the
// node. On a Service with no surgery, capsule or dedup feature every tool
// is still listed, and a feature's tools answer a tool error naming the
// missing feature instead of vanishing.
func TestToolsListedWithoutFeatures(t *testing.T) {
	bare, _ := memorytest.Open(t, memory.Config{})
	cs := connect(t, mcpservice.New(bare, memorytest.Agent("alice")))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(allTools))
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		feature string
	}{
		{"mem_edit", map[string]any{"id": "x", "op": "retract", "reason": "r"}, "surgery"},
		{"mem_approve", map[string]any{"edit_id": "x"}, "surgery"},
		{"mem_audit", nil, "surgery"},
		{"mem_capsules", nil, "capsule"},
		{"mem_capsule_get", map[string]any{"capsule_id": "x"}, "capsule"},
		{"mem_duplicates", nil, "duplicate-detection"},
	} {
		mustContain(t, tc.tool, textOf(call(t, cs, tc.tool, tc.args, true)), "not found", "no "+tc.feature+" feature")
	}
	// The bundle works without capsules: they are one of its sections.
	out[memapi.BundleResult](t, call(t, cs, "mem_build_context", nil, false))
}
