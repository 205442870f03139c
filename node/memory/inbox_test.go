package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
)

func TestInboxRule(t *testing.T) {
	alice, bob, carol := namespace.MustParse("agent://alice"), namespace.MustParse("agent://bob"), namespace.MustParse("agent://carol")
	ns, err := InboxNamespace(bob, alice, "proj-1")
	if err != nil || ns.String() != "agent://bob/.inbox/alice/proj-1" {
		t.Fatalf("inbox address %v %v", ns, err)
	}
	if tg, w, ok := InboxParties(ns); !ok || tg != bob || w != alice {
		t.Fatalf("parties %v %v %v", tg, w, ok)
	}
	if _, _, ok := InboxParties(namespace.MustParse("agent://bob/notes")); ok {
		t.Fatal("a plain sub-namespace taken for an inbox")
	}
	cases := []struct {
		p    namespace.Address
		perm acl.Permission
		ok   bool
	}{
		{alice, acl.Write, true}, {alice, acl.Read, true}, {bob, acl.Read, true},
		{bob, acl.Write, false}, {carol, acl.Read, false}, {carol, acl.Write, false},
		{bob, acl.Share, false}, {alice, acl.Admin, false},
	}
	for _, c := range cases {
		err, decided := inboxDecision(c.p, ns, c.perm)
		if !decided || (err == nil) != c.ok {
			t.Errorf("%s %s on the inbox: err=%v, want allowed=%v", c.p, c.perm, err, c.ok)
		}
	}
	if !Replicated(ns.String()) || Replicated("agent://bob/notes") || !Replicated("team://x") {
		t.Fatal("Replicated does not follow the inbox rule")
	}
}

// Writes into an inbox come only from its writer; the target reads them in
// its own searches.
func TestInboxThroughTheService(t *testing.T) {
	svc, _, alice := openTest(t, "")
	ctx := context.Background()
	ns, _ := InboxNamespace(namespace.MustParse("agent://bob"), alice.Principal, "p1")
	if _, err := svc.Save(ctx, alice, SaveRequest{Namespace: ns.String(), Content: "delivered note about payments"}); err != nil {
		t.Fatalf("writer cannot write its inbox: %v", err)
	}
	bob := Caller{Principal: namespace.MustParse("agent://bob")}
	if _, err := svc.Save(ctx, bob, SaveRequest{Namespace: ns.String(), Content: "x"}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("target wrote into its inbox: %v", err)
	}
	res, err := svc.Search(ctx, bob, SearchQuery{Query: "payments"})
	if err != nil || res.Total != 1 {
		t.Fatalf("target does not see its inbox in default recall: %+v %v", res, err)
	}
}
