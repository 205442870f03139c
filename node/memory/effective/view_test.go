package effective

import (
	"math"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
)

func edit(id, op, status string, ts uint64, p memapi.EditPatch) Edit {
	return Edit{Edit: memapi.Edit{EditID: id, Op: op, Status: status, Patch: p}, TS: crdt.Timestamp(ts)}
}

// TestViewIsOrderFree: the view does not depend on the order the edits
// are listed in (replicas learn them in different orders).
func TestViewIsOrderFree(t *testing.T) {
	text1, text2 := "one", "two"
	imp, d1, d2 := 0.9, -0.3, 0.1
	edits := []Edit{
		edit("a", memapi.OpAmend, memapi.StatusApproved, 5, memapi.EditPatch{Text: &text2}),
		edit("b", memapi.OpAmend, memapi.StatusApproved, 3, memapi.EditPatch{Text: &text1, Importance: &imp}),
		edit("c", memapi.OpAttenuate, memapi.StatusApproved, 1, memapi.EditPatch{ImportanceDelta: &d1}),
		edit("d", memapi.OpAttenuate, memapi.StatusApproved, 1, memapi.EditPatch{ImportanceDelta: &d2}),
		edit("e", memapi.OpBlock, memapi.StatusApproved, 2, memapi.EditPatch{Channel: "public"}),
		edit("f", memapi.OpQuarantine, memapi.StatusPending, 2, memapi.EditPatch{}),
		edit("g", memapi.OpRetract, memapi.StatusRejected, 9, memapi.EditPatch{}),
	}
	base := memapi.Memory{ID: "m", Content: "orig", Importance: 0.5}
	want, wf := View(base, edits)
	if want.Content != "two" || math.Abs(want.Importance-0.7) > 1e-9 || wf.Quarantined || wf.Retracted || !slices.Equal(wf.Blocked, []string{"public"}) {
		t.Fatalf("view %+v %+v", want, wf)
	}
	for i := range 50 {
		perm := slices.Clone(edits)
		for j := range perm {
			k := (i*7 + j*13) % len(perm)
			perm[j], perm[k] = perm[k], perm[j]
		}
		got, gf := View(base, perm)
		if got.Content != want.Content || got.Importance != want.Importance || !slices.Equal(gf.Blocked, wf.Blocked) {
			t.Fatalf("order %v: %+v want %+v", perm, got, want)
		}
	}
}

// TestViewTable: one case per rule of the package doc.
func TestViewTable(t *testing.T) {
	text, one, half, up, down := "new text here", 1.0, 0.5, 0.4, -0.9
	over := 1.7
	base := memapi.Memory{ID: "m", Title: memapi.DeriveTitle("old text"), Content: "old text", Importance: 0.5, ContentHash: schema.ContentHash("old text")}
	titled := base
	titled.Title = "An explicit title"
	ok := memapi.StatusApproved
	for _, c := range []struct {
		name  string
		m     memapi.Memory
		edits []Edit
		check func(memapi.Memory, Flags) bool
	}{
		{"no edits: unchanged", base, nil, func(m memapi.Memory, f Flags) bool {
			return m.Content == "old text" && m.EditsApplied == 0 && !f.Retracted && f.Blocked == nil
		}},
		{"pending and rejected change nothing", base, []Edit{
			edit("a", memapi.OpRetract, memapi.StatusPending, 1, memapi.EditPatch{}),
			edit("b", memapi.OpAmend, memapi.StatusRejected, 1, memapi.EditPatch{Text: &text}),
		}, func(m memapi.Memory, f Flags) bool {
			return m.Content == "old text" && m.EditsApplied == 0 && !f.Retracted
		}},
		{"retract flags", base, []Edit{edit("a", memapi.OpRetract, ok, 1, memapi.EditPatch{})},
			func(m memapi.Memory, f Flags) bool { return f.Retracted && m.EditsApplied == 1 }},
		{"quarantine flags the memory too", base, []Edit{edit("a", memapi.OpQuarantine, ok, 1, memapi.EditPatch{})},
			func(m memapi.Memory, f Flags) bool { return f.Quarantined && m.Quarantined }},
		{"blocks: sorted, once each", base, []Edit{
			edit("a", memapi.OpBlock, ok, 1, memapi.EditPatch{Channel: "team"}),
			edit("b", memapi.OpBlock, ok, 2, memapi.EditPatch{Channel: "public"}),
			edit("c", memapi.OpBlock, ok, 3, memapi.EditPatch{Channel: "team"}),
		}, func(m memapi.Memory, f Flags) bool {
			return slices.Equal(f.Blocked, []string{"public", "team"}) && slices.Equal(m.BlockedChannels, f.Blocked)
		}},
		{"amend: text, hash and a derived title", base, []Edit{edit("a", memapi.OpAmend, ok, 1, memapi.EditPatch{Text: &text})},
			func(m memapi.Memory, f Flags) bool {
				return m.Content == text && m.ContentHash == schema.ContentHash(text) && m.Title == memapi.DeriveTitle(text)
			}},
		{"amend keeps an explicit title", titled, []Edit{edit("a", memapi.OpAmend, ok, 1, memapi.EditPatch{Text: &text})},
			func(m memapi.Memory, f Flags) bool { return m.Content == text && m.Title == "An explicit title" }},
		{"amend importance is clamped", base, []Edit{edit("a", memapi.OpAmend, ok, 1, memapi.EditPatch{Importance: &over})},
			func(m memapi.Memory, f Flags) bool { return m.Importance == 1 }},
		{"attenuate sets, or moves by a clamped delta", base, []Edit{
			edit("a", memapi.OpAttenuate, ok, 1, memapi.EditPatch{Importance: &one}),
			edit("b", memapi.OpAttenuate, ok, 2, memapi.EditPatch{ImportanceDelta: &down}),
		}, func(m memapi.Memory, f Flags) bool { return math.Abs(m.Importance-0.1) < 1e-9 }},
		{"attenuate applies after amend, whatever the clocks", base, []Edit{
			edit("a", memapi.OpAttenuate, ok, 1, memapi.EditPatch{ImportanceDelta: &up}),
			edit("b", memapi.OpAmend, ok, 9, memapi.EditPatch{Importance: &half}),
		}, func(m memapi.Memory, f Flags) bool { return math.Abs(m.Importance-0.9) < 1e-9 }},
		{"of two amends at one clock, the larger edit id wins", base, []Edit{
			edit("z", memapi.OpAmend, ok, 4, memapi.EditPatch{Importance: &one}),
			edit("y", memapi.OpAmend, ok, 4, memapi.EditPatch{Importance: &half}),
		}, func(m memapi.Memory, f Flags) bool { return m.Importance == 1 }},
	} {
		in := slices.Clone(c.edits)
		m, f := View(c.m, c.edits)
		if !c.check(m, f) {
			t.Errorf("%s: %+v %+v", c.name, m, f)
		}
		if !slices.EqualFunc(in, c.edits, func(a, b Edit) bool { return a.EditID == b.EditID }) {
			t.Errorf("%s: View reordered its argument", c.name)
		}
	}
}
