package memory

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

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
