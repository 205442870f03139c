package client_test

import (
	"errors"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

// TestFeatureRoundTrip: the calls behind the sharing, surgery, capsule,
// bundle and duplicates tools reach the node's routes and decode its
// answers; `mnemo mcp` attached to a node serves those tools through them.
func TestFeatureRoundTrip(t *testing.T) {
	surg, err := surgery.New(surgery.Approvals{"*": {"retract"}})
	if err != nil {
		t.Fatal(err)
	}
	dd, err := dedup.New(dedup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClientWith(t, surg, capsule.New(), dd)
	ctx := t.Context()
	if _, err := c.CreateNamespace(ctx, "team://core"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, "project://core"); err != nil {
		t.Fatal(err)
	}
	saved, err := c.Save(ctx, memapi.SaveRequest{Content: "kafka retention is seven days", Type: "decision",
		SubjectType: "user", SubjectID: "u1"})
	if err != nil {
		t.Fatal(err)
	}

	sh, err := c.Share(ctx, memapi.ShareRequest{ID: saved.ID, Namespace: "team://core"})
	if err != nil || sh.Memory.Namespace != "team://core" || sh.Memory.Lineage != saved.ID {
		t.Fatalf("share: %+v %v", sh, err)
	}
	if pr, err := c.Promote(ctx, memapi.PromoteRequest{ID: saved.ID, Namespace: "project://core"}); err != nil || pr.Memory.Namespace != "project://core" {
		t.Fatalf("promote: %+v %v", pr, err)
	}
	if d, err := c.Duplicates(ctx, memapi.DuplicateQuery{Threshold: 0.5, Limit: 10}); err != nil || d.Pairs == nil {
		t.Fatalf("duplicates: %+v %v", d, err)
	}
	mr, err := c.MergeDuplicates(ctx, memapi.MergeRequest{IDs: []string{sh.Memory.ID, saved.ID}, Namespace: "team://core"})
	if err != nil || mr.Memory.ID != sh.Memory.ID {
		t.Fatalf("merge: %+v %v", mr, err)
	}

	text := "kafka retention is thirty days"
	ed, err := c.ProposeEdit(ctx, memapi.EditRequest{TargetID: saved.ID, Op: "amend", Reason: "wrong number", Patch: memapi.EditPatch{Text: &text}})
	if err != nil || ed.Status != memapi.StatusApproved {
		t.Fatalf("amend: %+v %v", ed, err)
	}
	// A retract needs approval here: it waits, then the owner (admin of its
	// own namespace) rejects it.
	rt, err := c.ProposeEdit(ctx, memapi.EditRequest{TargetID: saved.ID, Op: "retract", Reason: "private"})
	if err != nil || rt.Status != memapi.StatusPending {
		t.Fatalf("retract: %+v %v", rt, err)
	}
	if au, err := c.Audit(ctx, memapi.AuditQuery{Status: memapi.StatusPending}); err != nil || len(au.Edits) != 1 || au.Edits[0].EditID != rt.EditID {
		t.Fatalf("audit pending: %+v %v", au, err)
	}
	if e, err := c.DecideEdit(ctx, rt.EditID, false); err != nil || e.Status != memapi.StatusRejected {
		t.Fatalf("reject: %+v %v", e, err)
	}
	if _, err := c.DecideEdit(ctx, ed.EditID, true); !errors.Is(err, memapi.ErrConflict) {
		t.Fatalf("approve an edit that needed no approval: %v, want memapi.ErrConflict", err)
	}

	cr, err := c.CreateCapsule(ctx, memapi.CapsuleRequest{SubjectType: "user", SubjectID: "u1", Audience: []string{"agent://bob"},
		IDs: []string{saved.ID}, Risks: []string{"open complaint"}})
	if err != nil || cr.ItemCount != 1 {
		t.Fatalf("create capsule: %+v %v", cr, err)
	}
	if l, err := c.Capsules(ctx, memapi.CapsuleQuery{SubjectType: "user", SubjectID: "u1"}); err != nil || len(l.Capsules) != 1 {
		t.Fatalf("capsules: %+v %v", l, err)
	}
	if cp, err := c.Capsule(ctx, cr.CapsuleID); err != nil || len(cp.Items) != 1 || cp.Items[0].Content != text {
		t.Fatalf("capsule: %+v %v", cp, err)
	}
	if b, err := c.BuildContext(ctx, memapi.BundleRequest{SubjectType: "user", SubjectID: "u1", MaxTokens: 500}); err != nil || b.Budget.MaxTokens != 500 {
		t.Fatalf("bundle: %+v %v", b, err)
	}
	if rv, err := c.RevokeCapsule(ctx, cr.CapsuleID); err != nil || rv.Status != "revoked" {
		t.Fatalf("revoke: %+v %v", rv, err)
	}
	if _, err := c.Capsule(ctx, "no-such-capsule"); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("unknown capsule: %v, want memapi.ErrNotFound", err)
	}
}
