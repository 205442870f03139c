package memory

import (
	"context"
	"fmt"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/bundle"
	"strings"
	"testing"
	"time"
)

func TestBundlePrecedenceAndBudget(t *testing.T) {
	s, clk, alice := openTest(t, "")
	ctx := context.Background()
	save := func(req SaveRequest) Memory {
		t.Helper()
		clk.t = clk.t.Add(time.Minute)
		r, err := s.Save(ctx, alice, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Memory
	}
	// Saved oldest to newest in the reverse of precedence, so newest-first
	// alone would give the wrong order.
	sess := save(SaveRequest{Type: "decision", Scope: "session", SessionID: "s1", Title: "session decision", Content: "use the staging db for this session"})
	save(SaveRequest{Type: "decision", Scope: "session", SessionID: "other", Title: "other session", Content: "not for s1"})
	user := save(SaveRequest{Type: "decision", Scope: "user", Title: "user decision", Content: "jack prefers email"})
	proj := save(SaveRequest{Type: "decision", Scope: "project", Project: "pay", Title: "project decision", Content: "payments use idempotency keys"})
	save(SaveRequest{Type: "decision", Scope: "project", Project: "other", Title: "other project", Content: "not for pay"})
	glob := save(SaveRequest{Type: "decision", Scope: "global", Title: "global decision", Content: "never log secrets"})
	pol := save(SaveRequest{Type: "decision", Scope: "policy", Title: "policy decision", Content: "PII stays in the EU"})
	inSession := save(SaveRequest{Type: "note", SessionID: "s1", Project: "pay", Content: "session note: retried invoice 7"})
	save(SaveRequest{Type: "note", Project: "pay", Content: "project note: the ledger is append-only"})

	res, err := bundle.Build(ctx, s, alice, BundleRequest{SessionID: "s1", Project: "pay", MaxTokens: 5000})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Decisions {
		got = append(got, m.ID)
	}
	want := []string{pol.ID, glob.ID, proj.ID, user.ID, sess.ID}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("decision order %v, want %v", got, want)
	}
	if len(res.Recent) != 2 || res.Recent[0].ID != inSession.ID {
		t.Fatalf("recent %+v", res.Recent)
	}
	if b := res.Budget; b.Total != b.Decisions+b.Capsules+b.Recent || memapi.EstimateTokens(res.Text) > b.Total || b.Decisions == 0 || b.Recent == 0 {
		t.Fatalf("budget %+v for %d tokens of text", b, memapi.EstimateTokens(res.Text))
	}
	// Every budget, tiny to large: never exceeded, shares respected.
	for _, max := range []int{1, 5, 10, 20, 40, 60, 100, 150, 300, 1000} {
		r, err := bundle.Build(ctx, s, alice, BundleRequest{SessionID: "s1", Project: "pay", MaxTokens: max})
		if err != nil {
			t.Fatal(err)
		}
		b := r.Budget
		if b.Total > max || memapi.EstimateTokens(r.Text) > max || b.Decisions > max*bundle.DecisionShare/100 || b.MaxTokens != max {
			t.Fatalf("max %d: budget %+v, text %d tokens", max, b, memapi.EstimateTokens(r.Text))
		}
		if max < 300 && !r.Truncated {
			t.Fatalf("max %d: not truncated", max)
		}
	}
}

func TestBundleCapsulesOnlyForAudience(t *testing.T) {
	s, _, alice, _, created := capsuleFixture(t)
	ctx := context.Background()
	res, err := bundle.Build(ctx, s, bobP, BundleRequest{SubjectType: "user", SubjectID: "jack", MaxTokens: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Capsules) != 1 || res.Capsules[0].ID != created.CapsuleID || len(res.Capsules[0].Items) != 2 || res.Budget.Capsules == 0 {
		t.Fatalf("bob's bundle %+v", res)
	}
	if !strings.Contains(res.Text, "Risks: billing complaint open") {
		t.Fatalf("text %q", res.Text)
	}
	for _, m := range res.Recent {
		if isCapsuleNS(m.Namespace) {
			t.Fatalf("capsule item repeated in recent: %+v", m)
		}
	}
	for _, c := range []Caller{carolP, alice} {
		r, err := bundle.Build(ctx, s, c, BundleRequest{SubjectType: "user", SubjectID: "jack"})
		if err != nil || len(r.Capsules) != 0 || r.Budget.Capsules != 0 {
			t.Fatalf("%s gets capsules: %+v %v", c.Principal, r.Capsules, err)
		}
	}
	off := false
	if r, _ := bundle.Build(ctx, s, bobP, BundleRequest{SubjectType: "user", SubjectID: "jack", IncludeCapsules: &off}); len(r.Capsules) != 0 {
		t.Fatal("include_capsules=false ignored")
	}
	if _, err := bundle.Build(ctx, s, bobP, BundleRequest{SubjectType: "user"}); err == nil {
		t.Fatal("subject_type without subject_id accepted")
	}
}

func TestBundleBudgetFlows(t *testing.T) {
	s, _, alice := openTest(t, "")
	ctx := context.Background()
	for i := range 30 {
		if _, err := s.Save(ctx, alice, SaveRequest{Type: "note", Content: fmt.Sprintf("note %d %s", i, strings.Repeat("word ", 20))}); err != nil {
			t.Fatal(err)
		}
	}
	// No decisions and no capsules: recent memories may use the whole budget.
	r, err := bundle.Build(ctx, s, alice, BundleRequest{MaxTokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	if r.Budget.Recent <= 400*(100-bundle.DecisionShare-bundle.CapsuleShare)/100 || r.Budget.Total > 400 {
		t.Fatalf("unused shares did not flow to recent: %+v", r.Budget)
	}
}

var _ bundle.Source = (*Service)(nil)
