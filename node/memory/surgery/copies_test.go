package surgery

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
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
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	a, _ := openWith(t, 1, nil)
	// b is bob's own node: its own key, bob its only principal, alice
	// bound to a's key (as membership does).
	seed := sha256.Sum256([]byte("node b"))
	id, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	surgB, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := memory.Open(memory.Config{Agent: bob.Principal, Features: []memory.Feature{surgB}, Identity: id, Replica: 2, Now: (&memorytest.Clock{T: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}).Now,
		KeyOf: func(p namespace.Address) (ed25519.PublicKey, bool) { return a.Identity().Public, p == alice.Principal }})
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
	memorytest.Create(t, a, "alice", scenarioNS)
	memorytest.Grant(t, a, "alice", scenarioNS, "bob", "member,share")
	m := memorytest.Save(t, a, alice, memapi.SaveRequest{Namespace: scenarioNS, Type: "decision", Content: "the deploy key is k123"})
	sync(scenarioNS)
	cp, err := b.Share(ctx, bob, memapi.ShareRequest{ID: m.ID, Namespace: "agent://bob"})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := a.Store().Record(cp.Memory.Namespace, cp.Memory.ID); !rec.Empty() {
		t.Fatal("a holds bob's copy: the test would not cross nodes")
	}

	// Forged: a quarantine of m's id stored in agent://alice (where alice
	// may write, but m does not live) reaches no copy.
	body := editBody{Version: sealVersion, Namespace: "agent://alice", Target: m.ID, Op: memapi.OpQuarantine, Reason: "forged",
		Proposer: "agent://alice", Key: a.Identity().Public, TS: 1}
	enc, eid, err := seal(a.Identity(), editDomain, &body, func(sig []byte) any { return &sealedEdit{Body: body, Sig: sig} })
	if err != nil {
		t.Fatal(err)
	}
	if err := Of(a).core.Write(func(tx *store.Tx) error {
		return putSealed(tx, "agent://alice", schema.EditPrefix+eid, schema.KindEdit, schema.FieldEdit, enc, crdt.Timestamp(body.TS))
	}); err != nil {
		t.Fatal(err)
	}
	sync("agent://alice")
	if _, err := b.GetFor(ctx, bob, cp.Memory.ID, memapi.GetOptions{}); err != nil {
		t.Fatalf("an edit in another namespace reached the copy: %v", err)
	}

	q, err := Of(a).Propose(ctx, alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpQuarantine, Reason: "leaked key"})
	if err != nil {
		t.Fatal(err)
	}
	sync(scenarioNS)
	if _, err := b.GetFor(ctx, bob, cp.Memory.ID, memapi.GetOptions{}); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("bob's copy on b is readable after the quarantine on a: %v", err)
	}
	au, err := Of(b).Audit(ctx, bob, memapi.AuditQuery{ID: cp.Memory.ID})
	if err != nil || len(au.Edits) != 1 || au.Edits[0].Follows != q.EditID || au.Edits[0].Namespace != "agent://bob" || au.Edits[0].Proposer != "agent://bob" {
		t.Fatalf("b's audit of the copy: %+v %v", au, err)
	}
	// Applying the same state again writes nothing more.
	sync(scenarioNS)
	if au, _ := Of(b).Audit(ctx, bob, memapi.AuditQuery{ID: cp.Memory.ID}); len(au.Edits) != 1 {
		t.Fatalf("a repeated sync followed again: %+v", au.Edits)
	}
}
