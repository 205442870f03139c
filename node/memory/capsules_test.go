package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
)

var (
	bobP   = Caller{Principal: namespace.MustParse("agent://bob")}
	carolP = Caller{Principal: namespace.MustParse("agent://carol")}
)

func capsuleFixture(t *testing.T) (*Service, *fakeClock, Caller, []string, CapsuleCreated) {
	t.Helper()
	s, clk, alice := openTest(t, "")
	ctx := context.Background()
	var ids []string
	for _, content := range []string{"Jack has the elevated support tier since March.", "Jack complained about double billing on invoice 42."} {
		r, err := s.Save(ctx, alice, SaveRequest{Type: "fact", Content: content, SubjectType: "user", SubjectID: "jack"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	created, err := s.CreateCapsule(ctx, alice, CapsuleRequest{SubjectType: "user", SubjectID: "jack",
		Audience: []string{"agent://bob"}, IDs: ids, Risks: []string{"billing complaint open"}})
	if err != nil {
		t.Fatal(err)
	}
	if created.ItemCount != 2 || !created.ExpiresAt.Equal(clk.t.Add(7*24*time.Hour)) {
		t.Fatalf("created %+v", created)
	}
	return s, clk, alice, ids, created
}

func TestCapsuleAudienceReads(t *testing.T) {
	s, _, alice, ids, created := capsuleFixture(t)
	ctx := context.Background()
	got, err := s.GetCapsule(ctx, bobP, created.CapsuleID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != CapsuleActive || len(got.Items) != 2 || got.Items[0].Lineage != ids[0] || got.Risks[0] != "billing complaint open" {
		t.Fatalf("audience view %+v", got)
	}
	if !strings.HasPrefix(got.Namespace, "agent://bob/.inbox/alice/capsule-") || !strings.Contains(strings.Join(got.Items[0].Provenance, " "), "source:"+ids[0]) {
		t.Fatalf("item %+v", got.Items[0])
	}
	list, _ := s.ListCapsules(ctx, bobP, CapsuleQuery{SubjectType: "user", SubjectID: "jack"})
	if len(list.Capsules) != 1 || list.Capsules[0].ID != created.CapsuleID {
		t.Fatalf("bob's list %+v", list)
	}
	if l, _ := s.ListCapsules(ctx, bobP, CapsuleQuery{SubjectID: "someone-else"}); len(l.Capsules) != 0 {
		t.Fatalf("subject filter ignored: %+v", l)
	}
	if res, _ := s.Search(ctx, bobP, SearchQuery{Query: "billing"}); res.Total != 1 {
		t.Fatalf("bob's search does not see the capsule item: %+v", res)
	}
	// Outside the audience: nothing, by any path.
	if _, err := s.GetCapsule(ctx, carolP, created.CapsuleID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("carol reads the capsule: %v", err)
	}
	if l, _ := s.ListCapsules(ctx, carolP, CapsuleQuery{}); len(l.Capsules) != 0 {
		t.Fatalf("carol lists %+v", l)
	}
	if res, _ := s.Search(ctx, carolP, SearchQuery{Query: "billing"}); res.Total != 0 {
		t.Fatalf("carol finds capsule items: %+v", res)
	}
	if _, err := s.Get(ctx, carolP, got.Items[0].ID, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("carol gets an item: %v", err)
	}
	// The creator lists it too.
	if l, _ := s.ListCapsules(ctx, alice, CapsuleQuery{}); len(l.Capsules) != 1 || l.Capsules[0].Audience[0] != "agent://bob" {
		t.Fatalf("creator list %+v", l)
	}
}

func TestCapsuleExpiry(t *testing.T) {
	s, clk, alice, _, created := capsuleFixture(t)
	ctx := context.Background()
	got, _ := s.GetCapsule(ctx, bobP, created.CapsuleID)
	itemID := got.Items[0].ID
	clk.t = clk.t.Add(7*24*time.Hour - time.Second)
	if _, err := s.GetCapsule(ctx, bobP, created.CapsuleID); err != nil {
		t.Fatalf("unreadable before expiry: %v", err)
	}
	clk.t = clk.t.Add(time.Second)
	// Read-time enforcement, before any collection.
	if _, err := s.GetCapsule(ctx, bobP, created.CapsuleID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("readable after expiry: %v", err)
	}
	if _, err := s.Get(ctx, bobP, itemID, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("item readable after expiry: %v", err)
	}
	if res, _ := s.Search(ctx, bobP, SearchQuery{Query: "billing"}); res.Total != 0 {
		t.Fatalf("item searchable after expiry: %+v", res)
	}
	if cr, _ := s.Context(ctx, bobP, ContextQuery{}); len(cr.Memories) != 0 {
		t.Fatalf("item in context after expiry: %+v", cr.Memories)
	}
	// Collection: the creator's node retracts every record.
	n, err := s.SweepCapsules()
	if err != nil || n != 1 {
		t.Fatalf("sweep %d %v", n, err)
	}
	ns, _ := InboxNamespace(bobP.Principal, alice.Principal, schema.CapsuleNamePrefix+created.CapsuleID)
	for _, id := range []string{itemID, schema.CapsuleMetaID} {
		if gone, _ := s.Store().Retracted(ns.String(), id); !gone {
			t.Fatalf("%s not retracted by the sweep", id)
		}
	}
	if l, _ := s.ListCapsules(ctx, alice, CapsuleQuery{}); len(l.Capsules) != 0 {
		t.Fatalf("collected capsule still listed %+v", l)
	}
}

func TestCapsuleRevoke(t *testing.T) {
	s, _, alice, _, created := capsuleFixture(t)
	ctx := context.Background()
	if _, err := s.RevokeCapsule(ctx, bobP, created.CapsuleID); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("audience revoked: %v", err)
	}
	if _, err := s.RevokeCapsule(ctx, carolP, created.CapsuleID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outsider revoke: %v", err)
	}
	v, err := s.RevokeCapsule(ctx, alice, created.CapsuleID)
	if err != nil || v.Status != CapsuleRevoked {
		t.Fatalf("revoke %+v %v", v, err)
	}
	if _, err := s.GetCapsule(ctx, bobP, created.CapsuleID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("readable after revoke: %v", err)
	}
	if res, _ := s.Search(ctx, bobP, SearchQuery{Query: "billing"}); res.Total != 0 {
		t.Fatalf("searchable after revoke: %+v", res)
	}
	if got, err := s.GetCapsule(ctx, alice, created.CapsuleID); err != nil || got.Status != CapsuleRevoked || len(got.Items) != 0 {
		t.Fatalf("creator view after revoke %+v %v", got, err)
	}
}

func TestCapsuleSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, clk, alice := openTest(t, dir)
	ctx := context.Background()
	r, _ := s.Save(ctx, alice, SaveRequest{Content: "the deploy key rotates monthly"})
	created, err := s.CreateCapsule(ctx, alice, CapsuleRequest{SubjectType: "project", SubjectID: "deploy", Audience: []string{"bob"}, IDs: []string{r.ID}, TTLDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(Config{Dir: dir, Agent: alice.Principal, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, err := s2.GetCapsule(ctx, bobP, created.CapsuleID); err != nil || len(got.Items) != 1 {
		t.Fatalf("after reopen %+v %v", got, err)
	}
	clk.t = clk.t.Add(25 * time.Hour)
	s2.Close()
	s3, err := Open(Config{Dir: dir, Agent: alice.Principal, Now: clk.now}) // Open collects
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	ns, _ := InboxNamespace(bobP.Principal, alice.Principal, schema.CapsuleNamePrefix+created.CapsuleID)
	if gone, _ := s3.Store().Retracted(ns.String(), schema.CapsuleMetaID); !gone {
		t.Fatal("Open did not collect the expired capsule")
	}
}

func TestCapsuleDeniedRecordsNothing(t *testing.T) {
	s, _, alice := openTest(t, "")
	ctx := context.Background()
	mine, _ := s.Save(ctx, alice, SaveRequest{Content: "alice's own note"})
	// A memory in bob's namespace: alice cannot read it.
	bobs, err := s.Save(ctx, bobP, SaveRequest{Content: "bob's private note"})
	if err != nil {
		t.Fatal(err)
	}
	before := len(s.Store().Namespaces())
	ixBefore := s.ix.Len()
	_, err = s.CreateCapsule(ctx, alice, CapsuleRequest{SubjectType: "user", SubjectID: "x", Audience: []string{"agent://carol"}, IDs: []string{mine.ID, bobs.ID}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("unreadable id: %v", err)
	}
	// Readable but not shareable: bob's inbox from alice (inbox grants nobody share).
	ns, _ := InboxNamespace(bobP.Principal, alice.Principal, "notes")
	inboxed, err := s.Save(ctx, alice, SaveRequest{Namespace: ns.String(), Content: "delivered"})
	if err != nil {
		t.Fatal(err)
	}
	before, ixBefore = len(s.Store().Namespaces()), s.ix.Len()
	if _, err := s.CreateCapsule(ctx, bobP, CapsuleRequest{SubjectType: "user", SubjectID: "x", Audience: []string{"agent://carol"}, IDs: []string{inboxed.ID}}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("no share: %v", err)
	}
	if got := len(s.Store().Namespaces()); got != before || s.ix.Len() != ixBefore {
		t.Fatalf("a denied capsule recorded something: namespaces %d→%d, index %d→%d", before, got, ixBefore, s.ix.Len())
	}
	for _, bad := range []CapsuleRequest{
		{SubjectID: "x", Audience: []string{"bob"}, IDs: []string{mine.ID}},
		{SubjectType: "user", SubjectID: "x", IDs: []string{mine.ID}},
		{SubjectType: "user", SubjectID: "x", Audience: []string{"bob"}},
		{SubjectType: "user", SubjectID: "x", Audience: []string{"bob"}, IDs: []string{mine.ID}, TTLDays: 91},
		{SubjectType: "user", SubjectID: "x", Audience: []string{"team://a"}, IDs: []string{mine.ID}},
	} {
		if _, err := s.CreateCapsule(ctx, alice, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if l, _ := s.ListCapsules(ctx, alice, CapsuleQuery{}); len(l.Capsules) != 0 {
		t.Fatalf("capsules recorded: %+v", l)
	}
}

func TestCapsuleByQuery(t *testing.T) {
	s, _, alice := openTest(t, "")
	ctx := context.Background()
	for _, c := range []string{"payments retry with backoff", "payments use idempotency keys", "unrelated lunch order"} {
		if _, err := s.Save(ctx, alice, SaveRequest{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	created, err := s.CreateCapsule(ctx, alice, CapsuleRequest{SubjectType: "project", SubjectID: "payments",
		Audience: []string{"agent://bob", "agent://carol"}, Query: &SearchQuery{Query: "payments", Limit: 5}})
	if err != nil || created.ItemCount != 2 || len(created.Audience) != 2 {
		t.Fatalf("%+v %v", created, err)
	}
	for _, who := range []Caller{bobP, carolP} {
		if got, err := s.GetCapsule(ctx, who, created.CapsuleID); err != nil || len(got.Items) != 2 {
			t.Fatalf("%s: %+v %v", who.Principal, got, err)
		}
	}
}
