package capsule_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/schema"
)

// scenarioNS is the team namespace the copy tests share into.
const scenarioNS = "team://t"

// copyWorld is one node (every access principal local, as in the access
// tests) where alice's memory M was shared into team://t (bob reads it)
// and put in a capsule for bob.
type copyWorld struct {
	s           *memory.Service
	m           memapi.Memory // the original, in agent://alice
	share, item memapi.Memory // its copies: in team://t, in bob's capsule inbox
}

func newCopyWorld(t *testing.T, approvals surgery.Approvals) copyWorld {
	t.Helper()
	ctx := context.Background()
	surg, err := surgery.New(approvals)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal, Replica: 1, Features: []memory.Feature{surg, capsule.New()}})
	alice := memorytest.Agent("alice")
	memorytest.Create(t, s, "alice", scenarioNS)
	memorytest.Grant(t, s, "alice", scenarioNS, "bob", "read")
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Content: "the deploy key is k123 for kafka"}).Memory
	sh, err := s.Share(ctx, alice, memapi.ShareRequest{ID: m.ID, Namespace: scenarioNS})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := capsule.Of(s).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "user", SubjectID: "jack", Audience: []string{"agent://bob"}, IDs: []string{m.ID}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := capsule.Of(s).Get(ctx, bobP, cp.CapsuleID)
	if err != nil || len(got.Items) != 1 {
		t.Fatalf("capsule %+v %v", got, err)
	}
	w := copyWorld{s: s, m: m, share: sh.Memory, item: got.Items[0]}
	for _, c := range []memapi.Memory{w.share, w.item} {
		if c.Lineage != m.ID || c.CopiedFrom != "agent://alice" {
			t.Fatalf("copy does not name its source: %+v", c)
		}
	}
	if ids := w.visible(t); !memorytest.SameSet(ids, []string{w.share.ID, w.item.ID}) {
		t.Fatalf("bob sees %v before any edit", ids)
	}
	return w
}

// visible is what bob, who reads both copies, finds of them by search,
// context and get.
func (w copyWorld) visible(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	res, err := w.s.Search(ctx, bobP, memapi.SearchQuery{Query: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	cx, err := w.s.Context(ctx, bobP, memapi.ContextQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range []memapi.Memory{w.share, w.item} {
		_, gerr := w.s.GetFor(ctx, bobP, c.ID, memapi.GetOptions{})
		inSearch, inContext := slices.Contains(memorytest.HitIDs(res), c.ID), slices.Contains(memorytest.IDs(cx.Memories), c.ID)
		if inSearch != (gerr == nil) || inContext != (gerr == nil) {
			t.Fatalf("copy %s: search %v, context %v, get %v disagree", c.ID, inSearch, inContext, gerr)
		}
		if gerr == nil {
			got = append(got, c.ID)
		}
	}
	return got
}

// follows returns the edits bob's audit shows that follow editID.
func (w copyWorld) follows(t *testing.T, editID string) []memapi.Edit {
	t.Helper()
	au, err := surgery.Of(w.s).Audit(context.Background(), bobP, memapi.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var out []memapi.Edit
	for _, e := range au.Edits {
		if e.Follows == editID {
			out = append(out, e)
		}
	}
	return out
}

func (w copyWorld) edit(t *testing.T, op string, p memapi.EditPatch) memapi.EditResult {
	t.Helper()
	r, err := surgery.Of(w.s).Propose(context.Background(), memorytest.Agent("alice"), memapi.EditRequest{TargetID: w.m.ID, Op: op, Reason: "leaked key", Patch: p})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEditsFollowCopies: a quarantine, block or retract of a memory
// reaches its share copy and its capsule copy, and each following edit is
// on the audit log of the copy's namespace, naming the original edit.
func TestEditsFollowCopies(t *testing.T) {
	ctx := context.Background()
	t.Run("quarantine", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		q := w.edit(t, memapi.OpQuarantine, memapi.EditPatch{})
		if ids := w.visible(t); len(ids) != 0 {
			t.Fatalf("copies of a quarantined memory still read: %v", ids)
		}
		if g, err := w.s.Get(ctx, bobP, w.share.ID, false); err != nil || !g.Quarantined {
			t.Fatalf("the share copy is not flagged quarantined: %+v %v", g, err)
		}
		fs := w.follows(t, q.EditID)
		if len(fs) != 2 || !memorytest.SameSet([]string{fs[0].TargetID, fs[1].TargetID}, []string{w.share.ID, w.item.ID}) {
			t.Fatalf("audit of the following edits: %+v", fs)
		}
		for _, e := range fs {
			if e.Op != memapi.OpQuarantine || e.Status != memapi.StatusApproved || e.Namespace == w.m.Namespace || e.Proposer != "agent://alice" {
				t.Fatalf("following edit %+v", e)
			}
		}
		if cp, _ := capsule.Of(w.s).List(ctx, bobP, memapi.CapsuleQuery{}); len(cp.Capsules) == 1 {
			if full, _ := capsule.Of(w.s).Get(ctx, bobP, cp.Capsules[0].ID); len(full.Items) != 0 {
				t.Fatalf("capsule still carries the quarantined item: %+v", full.Items)
			}
		}
	})
	t.Run("retract", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		if err := w.s.Delete(ctx, memorytest.Agent("alice"), w.m.ID, true); err != nil {
			t.Fatal(err)
		}
		if ids := w.visible(t); len(ids) != 0 {
			t.Fatalf("copies of a retracted memory still read: %v", ids)
		}
		for _, c := range []memapi.Memory{w.share, w.item} {
			if _, err := w.s.Get(ctx, memorytest.Agent("alice"), c.ID, true); !errors.Is(err, memapi.ErrNotFound) {
				t.Fatalf("copy %s readable with include_deleted: %v", c.ID, err)
			}
			if rec, _ := w.s.Store().Record(c.Namespace, c.ID); !rec.Empty() {
				t.Fatalf("copy %s still stored in %s", c.ID, c.Namespace)
			}
		}
		// The original's history lists what followed it, where the caller
		// may read (alice does not read what she delivered to bob's inbox
		// unless she names it; bob reads both copies' namespaces).
		au, _ := surgery.Of(w.s).Audit(ctx, memorytest.Agent("alice"), memapi.AuditQuery{ID: w.m.ID})
		if len(au.Edits) != 2 || au.Edits[0].Op != memapi.OpRetract || au.Edits[1].Follows != au.Edits[0].EditID || au.Edits[1].TargetID != w.share.ID {
			t.Fatalf("the original's audit does not list the edit that followed it: %+v", au.Edits)
		}
		if fs := w.follows(t, au.Edits[0].EditID); len(fs) != 2 || fs[0].Op != memapi.OpRetract || fs[1].Op != memapi.OpRetract {
			t.Fatalf("bob's audit of the following retracts: %+v", fs)
		}
	})
	t.Run("block", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		w.edit(t, memapi.OpBlock, memapi.EditPatch{Channel: "public"})
		if ids := w.visible(t); len(ids) != 2 {
			t.Fatalf("a block hid the copies from every channel: %v", ids)
		}
		for _, c := range []memapi.Memory{w.share, w.item} {
			if _, err := w.s.GetFor(ctx, bobP, c.ID, memapi.GetOptions{Channel: "public"}); !errors.Is(err, memapi.ErrNotFound) {
				t.Fatalf("copy %s readable on the blocked channel: %v", c.ID, err)
			}
		}
	})
	t.Run("copy made after the edit", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		w.edit(t, memapi.OpQuarantine, memapi.EditPatch{})
		memorytest.Create(t, w.s, "alice", "team://u")
		memorytest.Grant(t, w.s, "alice", "team://u", "bob", "read")
		late, err := w.s.Share(ctx, memorytest.Agent("alice"), memapi.ShareRequest{ID: w.m.ID, Namespace: "team://u"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.GetFor(ctx, bobP, late.Memory.ID, memapi.GetOptions{}); !errors.Is(err, memapi.ErrNotFound) {
			t.Fatalf("a copy of a quarantined memory is readable: %v", err)
		}
	})
	t.Run("amend stays", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		text := "the deploy key is in the vault"
		w.edit(t, memapi.OpAmend, memapi.EditPatch{Text: &text})
		if g, err := w.s.Get(ctx, bobP, w.share.ID, false); err != nil || g.Content != w.share.Content {
			t.Fatalf("an amend reached the copy: %+v %v", g, err)
		}
	})
}

// TestFollowingEditsKeepCopyRules: where the copy's namespace needs
// approval for the op, the following edit waits for its admin.
func TestFollowingEditsKeepCopyRules(t *testing.T) {
	ctx := context.Background()
	w := newCopyWorld(t, surgery.Approvals{scenarioNS: {memapi.OpQuarantine}})
	q := w.edit(t, memapi.OpQuarantine, memapi.EditPatch{})
	if q.Status != memapi.StatusApproved {
		t.Fatalf("the original's quarantine %+v", q)
	}
	if ids := w.visible(t); !slices.Equal(ids, []string{w.share.ID}) {
		t.Fatalf("visible %v: want the team copy only, until a team admin approves", ids)
	}
	var pending memapi.Edit
	for _, e := range w.follows(t, q.EditID) {
		if e.Namespace == scenarioNS {
			pending = e
		}
	}
	if pending.Status != memapi.StatusPending {
		t.Fatalf("team copy's following edit %+v", pending)
	}
	if _, err := surgery.Of(w.s).Decide(ctx, memorytest.Agent("alice"), pending.EditID, true); err != nil {
		t.Fatal(err)
	}
	if ids := w.visible(t); len(ids) != 0 {
		t.Fatalf("visible %v after approval", ids)
	}
}

// TestRevokedCapsuleKeepsItsAudit: revoking a capsule drops its items,
// never the audit records stored beside them — the edit that followed a
// quarantine onto a capsule item stays on the audit log (the log is never
// shortened, DESIGN.md invariant 5).
func TestRevokedCapsuleKeepsItsAudit(t *testing.T) {
	ctx := context.Background()
	w := newCopyWorld(t, nil)
	q := w.edit(t, memapi.OpQuarantine, memapi.EditPatch{})
	before := w.follows(t, q.EditID)
	if len(before) != 2 {
		t.Fatalf("following edits before the revoke: %+v", before)
	}
	cp, err := capsule.Of(w.s).List(ctx, bobP, memapi.CapsuleQuery{})
	if err != nil || len(cp.Capsules) != 1 {
		t.Fatalf("capsules %+v %v", cp, err)
	}
	if _, err := capsule.Of(w.s).Revoke(ctx, memorytest.Agent("alice"), cp.Capsules[0].ID); err != nil {
		t.Fatal(err)
	}
	if after := w.follows(t, q.EditID); len(after) != len(before) {
		t.Fatalf("revoking the capsule shortened the audit log: %d following edits before, %d after: %+v", len(before), len(after), after)
	}
	for _, e := range before {
		if rec, _ := w.s.Store().Record(e.Namespace, schema.EditPrefix+e.EditID); rec.Empty() {
			t.Fatalf("revoking the capsule retracted the audit record of edit %s in %s", e.EditID, e.Namespace)
		}
	}
	if rec, _ := w.s.Store().Record(w.item.Namespace, w.item.ID); !rec.Empty() {
		t.Fatalf("revoked capsule item %s still stored", w.item.ID)
	}
}
