package capsule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
)

// openTest opens a Service owned by alice, the only local agent, with the
// capsule feature attached.
func openTest(t *testing.T, dir string) (*memory.Service, *memorytest.Clock, memapi.Caller) {
	t.Helper()
	s, clk := memorytest.Open(t, memory.Config{KV: badgerkvtest.In(t, dir), Features: []memory.Feature{capsule.New()}})
	return s, clk, memorytest.Agent("alice")
}

var (
	bobP   = memapi.Caller{Principal: namespace.MustParse("agent://bob")}
	carolP = memapi.Caller{Principal: namespace.MustParse("agent://carol")}
)

func capsuleFixture(t *testing.T) (*memory.Service, *memorytest.Clock, memapi.Caller, []string, memapi.CapsuleCreated) {
	t.Helper()
	s, clk, alice := openTest(t, "")
	ctx := context.Background()
	var ids []string
	for _, content := range []string{"Jack has the elevated support tier since March.", "Jack complained about double billing on invoice 42."} {
		r, err := s.Save(ctx, alice, memapi.SaveRequest{Type: "fact", Content: content, SubjectType: "user", SubjectID: "jack"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	created, err := capsule.Of(s).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "user", SubjectID: "jack",
		Audience: []string{"agent://bob"}, IDs: ids, Risks: []string{"billing complaint open"}})
	if err != nil {
		t.Fatal(err)
	}
	if created.ItemCount != 2 || !created.ExpiresAt.Equal(clk.T.Add(7*24*time.Hour)) {
		t.Fatalf("created %+v", created)
	}
	return s, clk, alice, ids, created
}

func TestCapsuleAudienceReads(t *testing.T) {
	s, _, alice, ids, created := capsuleFixture(t)
	ctx := context.Background()
	got, err := capsule.Of(s).Get(ctx, bobP, created.CapsuleID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != memapi.CapsuleActive || len(got.Items) != 2 || got.Items[0].Lineage != ids[0] || got.Risks[0] != "billing complaint open" {
		t.Fatalf("audience view %+v", got)
	}
	if !strings.HasPrefix(got.Namespace, "agent://bob/.inbox/alice/capsule-") || !strings.Contains(strings.Join(got.Items[0].Provenance, " "), "source:"+ids[0]) {
		t.Fatalf("item %+v", got.Items[0])
	}
	list, _ := capsule.Of(s).List(ctx, bobP, memapi.CapsuleQuery{SubjectType: "user", SubjectID: "jack"})
	if len(list.Capsules) != 1 || list.Capsules[0].ID != created.CapsuleID {
		t.Fatalf("bob's list %+v", list)
	}
	if l, _ := capsule.Of(s).List(ctx, bobP, memapi.CapsuleQuery{SubjectID: "someone-else"}); len(l.Capsules) != 0 {
		t.Fatalf("subject filter ignored: %+v", l)
	}
	if res, _ := s.Search(ctx, bobP, memapi.SearchQuery{Query: "billing"}); res.Total != 1 {
		t.Fatalf("bob's search does not see the capsule item: %+v", res)
	}
	// Outside the audience: nothing, by any path.
	if _, err := capsule.Of(s).Get(ctx, carolP, created.CapsuleID); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("carol reads the capsule: %v", err)
	}
	if l, _ := capsule.Of(s).List(ctx, carolP, memapi.CapsuleQuery{}); len(l.Capsules) != 0 {
		t.Fatalf("carol lists %+v", l)
	}
	if res, _ := s.Search(ctx, carolP, memapi.SearchQuery{Query: "billing"}); res.Total != 0 {
		t.Fatalf("carol finds capsule items: %+v", res)
	}
	if _, err := s.Get(ctx, carolP, got.Items[0].ID, false); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("carol gets an item: %v", err)
	}
	// The creator lists it too.
	if l, _ := capsule.Of(s).List(ctx, alice, memapi.CapsuleQuery{}); len(l.Capsules) != 1 || l.Capsules[0].Audience[0] != "agent://bob" {
		t.Fatalf("creator list %+v", l)
	}
}

func TestCapsuleExpiry(t *testing.T) {
	s, clk, alice, _, created := capsuleFixture(t)
	ctx := context.Background()
	got, _ := capsule.Of(s).Get(ctx, bobP, created.CapsuleID)
	itemID := got.Items[0].ID
	clk.T = clk.T.Add(7*24*time.Hour - time.Second)
	if _, err := capsule.Of(s).Get(ctx, bobP, created.CapsuleID); err != nil {
		t.Fatalf("unreadable before expiry: %v", err)
	}
	clk.T = clk.T.Add(time.Second)
	// Read-time enforcement, before any collection.
	if _, err := capsule.Of(s).Get(ctx, bobP, created.CapsuleID); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("readable after expiry: %v", err)
	}
	if _, err := s.Get(ctx, bobP, itemID, false); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("item readable after expiry: %v", err)
	}
	if res, _ := s.Search(ctx, bobP, memapi.SearchQuery{Query: "billing"}); res.Total != 0 {
		t.Fatalf("item searchable after expiry: %+v", res)
	}
	if cr, _ := s.Context(ctx, bobP, memapi.ContextQuery{}); len(cr.Memories) != 0 {
		t.Fatalf("item in context after expiry: %+v", cr.Memories)
	}
	// Collection: the creator's node retracts every record.
	n, err := capsule.Of(s).Sweep()
	if err != nil || n != 1 {
		t.Fatalf("sweep %d %v", n, err)
	}
	ns, _ := memory.InboxNamespace(bobP.Principal, alice.Principal, schema.CapsuleNamePrefix+created.CapsuleID)
	for _, id := range []string{itemID, schema.CapsuleMetaID} {
		if gone, _ := s.Store().Retracted(ns.String(), id); !gone {
			t.Fatalf("%s not retracted by the sweep", id)
		}
	}
	if l, _ := capsule.Of(s).List(ctx, alice, memapi.CapsuleQuery{}); len(l.Capsules) != 0 {
		t.Fatalf("collected capsule still listed %+v", l)
	}
}

func TestCapsuleRevoke(t *testing.T) {
	s, _, alice, _, created := capsuleFixture(t)
	ctx := context.Background()
	if _, err := capsule.Of(s).Revoke(ctx, bobP, created.CapsuleID); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("audience revoked: %v", err)
	}
	if _, err := capsule.Of(s).Revoke(ctx, carolP, created.CapsuleID); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("outsider revoke: %v", err)
	}
	v, err := capsule.Of(s).Revoke(ctx, alice, created.CapsuleID)
	if err != nil || v.Status != memapi.CapsuleRevoked {
		t.Fatalf("revoke %+v %v", v, err)
	}
	if _, err := capsule.Of(s).Get(ctx, bobP, created.CapsuleID); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("readable after revoke: %v", err)
	}
	if res, _ := s.Search(ctx, bobP, memapi.SearchQuery{Query: "billing"}); res.Total != 0 {
		t.Fatalf("searchable after revoke: %+v", res)
	}
	if got, err := capsule.Of(s).Get(ctx, alice, created.CapsuleID); err != nil || got.Status != memapi.CapsuleRevoked || len(got.Items) != 0 {
		t.Fatalf("creator view after revoke %+v %v", got, err)
	}
}

func TestCapsuleSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, clk, alice := openTest(t, dir)
	ctx := context.Background()
	r, _ := s.Save(ctx, alice, memapi.SaveRequest{Content: "the deploy key rotates monthly"})
	created, err := capsule.Of(s).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "project", SubjectID: "deploy", Audience: []string{"bob"}, IDs: []string{r.ID}, TTLDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := memory.Open(memory.Config{KV: badgerkvtest.In(t, dir), Agent: alice.Principal, Now: clk.Now, Features: []memory.Feature{capsule.New()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, err := capsule.Of(s2).Get(ctx, bobP, created.CapsuleID); err != nil || len(got.Items) != 1 {
		t.Fatalf("after reopen %+v %v", got, err)
	}
	clk.T = clk.T.Add(25 * time.Hour)
	s2.Close()
	s3, err := memory.Open(memory.Config{KV: badgerkvtest.In(t, dir), Agent: alice.Principal, Now: clk.Now, Features: []memory.Feature{capsule.New()}}) // memory.Open collects
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	ns, _ := memory.InboxNamespace(bobP.Principal, alice.Principal, schema.CapsuleNamePrefix+created.CapsuleID)
	if gone, _ := s3.Store().Retracted(ns.String(), schema.CapsuleMetaID); !gone {
		t.Fatal("Open did not collect the expired capsule")
	}
}

func TestCapsuleDeniedRecordsNothing(t *testing.T) {
	s, _, alice := openTest(t, "")
	ctx := context.Background()
	mine, _ := s.Save(ctx, alice, memapi.SaveRequest{Content: "alice's own note"})
	// A memory in bob's namespace: alice cannot read it.
	bobs, err := s.Save(ctx, bobP, memapi.SaveRequest{Content: "bob's private note"})
	if err != nil {
		t.Fatal(err)
	}
	before := len(s.Store().Namespaces())
	ixBefore := s.Indexed()
	_, err = capsule.Of(s).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "user", SubjectID: "x", Audience: []string{"agent://carol"}, IDs: []string{mine.ID, bobs.ID}})
	if !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("unreadable id: %v", err)
	}
	// Readable but not shareable: bob's inbox from alice (inbox grants nobody share).
	ns, _ := memory.InboxNamespace(bobP.Principal, alice.Principal, "notes")
	inboxed, err := s.Save(ctx, alice, memapi.SaveRequest{Namespace: ns.String(), Content: "delivered"})
	if err != nil {
		t.Fatal(err)
	}
	before, ixBefore = len(s.Store().Namespaces()), s.Indexed()
	if _, err := capsule.Of(s).Create(ctx, bobP, memapi.CapsuleRequest{SubjectType: "user", SubjectID: "x", Audience: []string{"agent://carol"}, IDs: []string{inboxed.ID}}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("no share: %v", err)
	}
	if got := len(s.Store().Namespaces()); got != before || s.Indexed() != ixBefore {
		t.Fatalf("a denied capsule recorded something: namespaces %d→%d, index %d→%d", before, got, ixBefore, s.Indexed())
	}
	for _, bad := range []memapi.CapsuleRequest{
		{SubjectID: "x", Audience: []string{"bob"}, IDs: []string{mine.ID}},
		{SubjectType: "user", SubjectID: "x", IDs: []string{mine.ID}},
		{SubjectType: "user", SubjectID: "x", Audience: []string{"bob"}},
		{SubjectType: "user", SubjectID: "x", Audience: []string{"bob"}, IDs: []string{mine.ID}, TTLDays: 91},
		{SubjectType: "user", SubjectID: "x", Audience: []string{"team://a"}, IDs: []string{mine.ID}},
	} {
		if _, err := capsule.Of(s).Create(ctx, alice, bad); !errors.Is(err, memapi.ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if l, _ := capsule.Of(s).List(ctx, alice, memapi.CapsuleQuery{}); len(l.Capsules) != 0 {
		t.Fatalf("capsules recorded: %+v", l)
	}
}

func TestCapsuleByQuery(t *testing.T) {
	s, _, alice := openTest(t, "")
	ctx := context.Background()
	for _, c := range []string{"payments retry with backoff", "payments use idempotency keys", "unrelated lunch order"} {
		if _, err := s.Save(ctx, alice, memapi.SaveRequest{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	created, err := capsule.Of(s).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "project", SubjectID: "payments",
		Audience: []string{"agent://bob", "agent://carol"}, Query: &memapi.SearchQuery{Query: "payments", Limit: 5}})
	if err != nil || created.ItemCount != 2 || len(created.Audience) != 2 {
		t.Fatalf("%+v %v", created, err)
	}
	for _, who := range []memapi.Caller{bobP, carolP} {
		if got, err := capsule.Of(s).Get(ctx, who, created.CapsuleID); err != nil || len(got.Items) != 2 {
			t.Fatalf("%s: %+v %v", who.Principal, got, err)
		}
	}
}
