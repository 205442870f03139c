package mcptools_test

import (
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
)

// TestSurgeryTools: mem_edit amends and quarantines, mem_search and
// mem_context go through the edits, mem_audit shows the history, and a
// bad edit is a tool error that records nothing.
func TestSurgeryTools(t *testing.T) {
	cs, _ := newSession(t)
	saved := out[memapi.SaveResult](t, call(t, cs, "mem_save", map[string]any{"content": "kafka retention is seven days", "type": "decision"}, false))
	call(t, cs, "mem_edit", map[string]any{"id": saved.ID, "op": "amend"}, true) // no reason
	mustContain(t, "bad op", textOf(call(t, cs, "mem_edit", map[string]any{"id": saved.ID, "op": "erase", "reason": "r"}, true)), "unknown op")
	res := call(t, cs, "mem_edit", map[string]any{"id": saved.ID, "op": "amend", "reason": "wrong number", "text": "kafka retention is thirty days"}, false)
	er := out[memapi.EditResult](t, res)
	if er.Status != memapi.StatusApproved {
		t.Fatalf("edit: %+v", er)
	}
	mustContain(t, "search", textOf(call(t, cs, "mem_search", map[string]any{"query": "thirty"}, false)), saved.ID)
	if got := textOf(call(t, cs, "mem_search", map[string]any{"query": "seven"}, false)); strings.Contains(got, saved.ID) {
		t.Fatalf("old text searchable: %s", got)
	}
	call(t, cs, "mem_edit", map[string]any{"id": saved.ID, "op": "quarantine", "reason": "unverified"}, false)
	if got := textOf(call(t, cs, "mem_context", map[string]any{}, false)); strings.Contains(got, "thirty") {
		t.Fatalf("quarantined memory in context: %s", got)
	}
	mustContain(t, "include_quarantined", textOf(call(t, cs, "mem_search", map[string]any{"query": "thirty", "include_quarantined": true}, false)), saved.ID)
	au := out[memapi.AuditResult](t, call(t, cs, "mem_audit", map[string]any{"id": saved.ID}, false))
	if len(au.Edits) != 2 || au.Edits[0].Op != "amend" || au.Edits[1].Op != "quarantine" {
		t.Fatalf("audit: %+v", au)
	}
	mustContain(t, "approve a decided edit", textOf(call(t, cs, "mem_approve", map[string]any{"edit_id": er.EditID}, true)), "no approval")
}
