package memory

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// copyWorld is one node (every access principal local, as in the access
// tests) where alice's memory M was shared into team://t (bob reads it)
// and put in a capsule for bob.
type copyWorld struct {
	s           *Service
	m           Memory // the original, in agent://alice
	share, item Memory // its copies: in team://t, in bob's capsule inbox
}

func newCopyWorld(t *testing.T, approvals Approvals) copyWorld {
	t.Helper()
	ctx := context.Background()
	s, _ := openAccessWith(t, 1, approvals)
	alice := accAgent("alice")
	accCreate(t, s, "alice", scenarioNS)
	accGrant(t, s, "alice", scenarioNS, "bob", "read")
	m := mustSave(t, s, alice, SaveRequest{Type: "decision", Content: "the deploy key is k123 for kafka"}).Memory
	sh, err := s.Share(ctx, alice, ShareRequest{ID: m.ID, Namespace: scenarioNS})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := s.CreateCapsule(ctx, alice, CapsuleRequest{SubjectType: "user", SubjectID: "jack", Audience: []string{"agent://bob"}, IDs: []string{m.ID}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetCapsule(ctx, bobP, cp.CapsuleID)
	if err != nil || len(got.Items) != 1 {
		t.Fatalf("capsule %+v %v", got, err)
	}
	w := copyWorld{s: s, m: m, share: sh.Memory, item: got.Items[0]}
	for _, c := range []Memory{w.share, w.item} {
		if c.Lineage != m.ID || c.CopiedFrom != "agent://alice" {
			t.Fatalf("copy does not name its source: %+v", c)
		}
	}
	if ids := w.visible(t); !sameSet(ids, []string{w.share.ID, w.item.ID}) {
		t.Fatalf("bob sees %v before any edit", ids)
	}
	return w
}

// visible is what bob, who reads both copies, finds of them by search,
// context and get.
func (w copyWorld) visible(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	res, err := w.s.Search(ctx, bobP, SearchQuery{Query: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	cx, err := w.s.Context(ctx, bobP, ContextQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range []Memory{w.share, w.item} {
		_, gerr := w.s.GetFor(ctx, bobP, c.ID, GetOptions{})
		inSearch, inContext := slices.Contains(hitIDs(res), c.ID), slices.Contains(memIDs(cx.Memories), c.ID)
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
func (w copyWorld) follows(t *testing.T, editID string) []Edit {
	t.Helper()
	au, err := w.s.Audit(context.Background(), bobP, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var out []Edit
	for _, e := range au.Edits {
		if e.Follows == editID {
			out = append(out, e)
		}
	}
	return out
}

func (w copyWorld) edit(t *testing.T, op string, p EditPatch) EditResult {
	t.Helper()
	r, err := w.s.ProposeEdit(context.Background(), accAgent("alice"), EditRequest{TargetID: w.m.ID, Op: op, Reason: "leaked key", Patch: p})
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
		q := w.edit(t, OpQuarantine, EditPatch{})
		if ids := w.visible(t); len(ids) != 0 {
			t.Fatalf("copies of a quarantined memory still read: %v", ids)
		}
		if g, err := w.s.Get(ctx, bobP, w.share.ID, false); err != nil || !g.Quarantined {
			t.Fatalf("the share copy is not flagged quarantined: %+v %v", g, err)
		}
		fs := w.follows(t, q.EditID)
		if len(fs) != 2 || !sameSet([]string{fs[0].TargetID, fs[1].TargetID}, []string{w.share.ID, w.item.ID}) {
			t.Fatalf("audit of the following edits: %+v", fs)
		}
		for _, e := range fs {
			if e.Op != OpQuarantine || e.Status != StatusApproved || e.Namespace == w.m.Namespace || e.Proposer != "agent://alice" {
				t.Fatalf("following edit %+v", e)
			}
		}
		if cp, _ := w.s.ListCapsules(ctx, bobP, CapsuleQuery{}); len(cp.Capsules) == 1 {
			if full, _ := w.s.GetCapsule(ctx, bobP, cp.Capsules[0].ID); len(full.Items) != 0 {
				t.Fatalf("capsule still carries the quarantined item: %+v", full.Items)
			}
		}
	})
	t.Run("retract", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		if err := w.s.Delete(ctx, accAgent("alice"), w.m.ID, true); err != nil {
			t.Fatal(err)
		}
		if ids := w.visible(t); len(ids) != 0 {
			t.Fatalf("copies of a retracted memory still read: %v", ids)
		}
		for _, c := range []Memory{w.share, w.item} {
			if _, err := w.s.Get(ctx, accAgent("alice"), c.ID, true); !errors.Is(err, ErrNotFound) {
				t.Fatalf("copy %s readable with include_deleted: %v", c.ID, err)
			}
			if rec, _ := w.s.Store().Record(c.Namespace, c.ID); !rec.Empty() {
				t.Fatalf("copy %s still stored in %s", c.ID, c.Namespace)
			}
		}
		// The original's history lists what followed it, where the caller
		// may read (alice does not read what she delivered to bob's inbox
		// unless she names it; bob reads both copies' namespaces).
		au, _ := w.s.Audit(ctx, accAgent("alice"), AuditQuery{ID: w.m.ID})
		if len(au.Edits) != 2 || au.Edits[0].Op != OpRetract || au.Edits[1].Follows != au.Edits[0].EditID || au.Edits[1].TargetID != w.share.ID {
			t.Fatalf("the original's audit does not list the edit that followed it: %+v", au.Edits)
		}
		if fs := w.follows(t, au.Edits[0].EditID); len(fs) != 2 || fs[0].Op != OpRetract || fs[1].Op != OpRetract {
			t.Fatalf("bob's audit of the following retracts: %+v", fs)
		}
	})
	t.Run("block", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		w.edit(t, OpBlock, EditPatch{Channel: "public"})
		if ids := w.visible(t); len(ids) != 2 {
			t.Fatalf("a block hid the copies from every channel: %v", ids)
		}
		for _, c := range []Memory{w.share, w.item} {
			if _, err := w.s.GetFor(ctx, bobP, c.ID, GetOptions{Channel: "public"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("copy %s readable on the blocked channel: %v", c.ID, err)
			}
		}
	})
	t.Run("copy made after the edit", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		w.edit(t, OpQuarantine, EditPatch{})
		accCreate(t, w.s, "alice", "team://u")
		accGrant(t, w.s, "alice", "team://u", "bob", "read")
		late, err := w.s.Share(ctx, accAgent("alice"), ShareRequest{ID: w.m.ID, Namespace: "team://u"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.GetFor(ctx, bobP, late.Memory.ID, GetOptions{}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a copy of a quarantined memory is readable: %v", err)
		}
	})
	t.Run("amend stays", func(t *testing.T) {
		w := newCopyWorld(t, nil)
		text := "the deploy key is in the vault"
		w.edit(t, OpAmend, EditPatch{Text: &text})
		if g, err := w.s.Get(ctx, bobP, w.share.ID, false); err != nil || g.Content != w.share.Content {
			t.Fatalf("an amend reached the copy: %+v %v", g, err)
		}
	})
}

// TestFollowingEditsKeepCopyRules: where the copy's namespace needs
// approval for the op, the following edit waits for its admin.
func TestFollowingEditsKeepCopyRules(t *testing.T) {
	ctx := context.Background()
	w := newCopyWorld(t, Approvals{scenarioNS: {OpQuarantine}})
	q := w.edit(t, OpQuarantine, EditPatch{})
	if q.Status != StatusApproved {
		t.Fatalf("the original's quarantine %+v", q)
	}
	if ids := w.visible(t); !slices.Equal(ids, []string{w.share.ID}) {
		t.Fatalf("visible %v: want the team copy only, until a team admin approves", ids)
	}
	var pending Edit
	for _, e := range w.follows(t, q.EditID) {
		if e.Namespace == scenarioNS {
			pending = e
		}
	}
	if pending.Status != StatusPending {
		t.Fatalf("team copy's following edit %+v", pending)
	}
	if _, err := w.s.DecideEdit(ctx, accAgent("alice"), pending.EditID, true); err != nil {
		t.Fatal(err)
	}
	if ids := w.visible(t); len(ids) != 0 {
		t.Fatalf("visible %v after approval", ids)
	}
}

// TestEditsFollowCopiesAcrossNodes: node b holds bob's private copy of a
// team memory (agent://bob never leaves b). A quarantine made on node a
// reaches it when the team namespace's state arrives: b, whose principal
// made the copy, writes the following edit. An edit stored in another
// namespace against the same id reaches no copy.
func TestEditsFollowCopiesAcrossNodes(t *testing.T) {
	ctx := context.Background()
	alice, bob := accAgent("alice"), accAgent("bob")
	a, _ := openAccessWith(t, 1, nil)
	// b is bob's own node: its own key, bob its only principal, alice
	// bound to a's key (as membership does).
	seed := sha256.Sum256([]byte("node b"))
	id, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(Config{Agent: bob.Principal, Identity: id, Replica: 2, Now: (&fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}).now,
		KeyOf: func(p namespace.Address) (ed25519.PublicKey, bool) { return a.acl.id.Public, p == alice.Principal }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	sync := func(ns string) {
		t.Helper()
		st, err := a.Store().State(ns)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ApplyRemote(ns, st); err != nil {
			t.Fatal(err)
		}
	}
	accCreate(t, a, "alice", scenarioNS)
	accGrant(t, a, "alice", scenarioNS, "bob", "member,share")
	m := mustSave(t, a, alice, SaveRequest{Namespace: scenarioNS, Type: "decision", Content: "the deploy key is k123"})
	sync(scenarioNS)
	cp, err := b.Share(ctx, bob, ShareRequest{ID: m.ID, Namespace: "agent://bob"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.ix.Meta(cp.Memory.ID); ok {
		t.Fatal("a holds bob's copy: the test would not cross nodes")
	}

	// Forged: a quarantine of m's id stored in agent://alice (where alice
	// may write, but m does not live) reaches no copy.
	body := editBody{Version: sealVersion, Namespace: "agent://alice", Target: m.ID, Op: OpQuarantine, Reason: "forged",
		Proposer: "agent://alice", Key: a.acl.id.Public, TS: 1}
	enc, eid, err := seal(a.acl.id, editDomain, &body, func(sig []byte) any { return &sealedEdit{Body: body, Sig: sig} })
	if err != nil {
		t.Fatal(err)
	}
	if err := a.write(func(tx *store.Tx) error {
		return putSealed(tx, "agent://alice", schema.EditPrefix+eid, schema.KindEdit, schema.FieldEdit, enc, crdt.Timestamp(body.TS))
	}); err != nil {
		t.Fatal(err)
	}
	sync("agent://alice")
	if _, err := b.GetFor(ctx, bob, cp.Memory.ID, GetOptions{}); err != nil {
		t.Fatalf("an edit in another namespace reached the copy: %v", err)
	}

	q, err := a.ProposeEdit(ctx, alice, EditRequest{TargetID: m.ID, Op: OpQuarantine, Reason: "leaked key"})
	if err != nil {
		t.Fatal(err)
	}
	sync(scenarioNS)
	if _, err := b.GetFor(ctx, bob, cp.Memory.ID, GetOptions{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob's copy on b is readable after the quarantine on a: %v", err)
	}
	au, err := b.Audit(ctx, bob, AuditQuery{ID: cp.Memory.ID})
	if err != nil || len(au.Edits) != 1 || au.Edits[0].Follows != q.EditID || au.Edits[0].Namespace != "agent://bob" || au.Edits[0].Proposer != "agent://bob" {
		t.Fatalf("b's audit of the copy: %+v %v", au, err)
	}
	// Applying the same state again writes nothing more.
	sync(scenarioNS)
	if au, _ := b.Audit(ctx, bob, AuditQuery{ID: cp.Memory.ID}); len(au.Edits) != 1 {
		t.Fatalf("a repeated sync followed again: %+v", au.Edits)
	}
}

// TestRevokedCapsuleKeepsItsAudit: revoking a capsule drops its items,
// never the audit records stored beside them — the edit that followed a
// quarantine onto a capsule item stays on the audit log (the log is never
// shortened, DESIGN.md invariant 5).
func TestRevokedCapsuleKeepsItsAudit(t *testing.T) {
	ctx := context.Background()
	w := newCopyWorld(t, nil)
	q := w.edit(t, OpQuarantine, EditPatch{})
	before := w.follows(t, q.EditID)
	if len(before) != 2 {
		t.Fatalf("following edits before the revoke: %+v", before)
	}
	cp, err := w.s.ListCapsules(ctx, bobP, CapsuleQuery{})
	if err != nil || len(cp.Capsules) != 1 {
		t.Fatalf("capsules %+v %v", cp, err)
	}
	if _, err := w.s.RevokeCapsule(ctx, accAgent("alice"), cp.Capsules[0].ID); err != nil {
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
