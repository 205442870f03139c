package bundle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/bundle"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/schema"
)

var (
	_ bundle.Source   = (*memory.Service)(nil)
	_ bundle.Capsules = (*capsule.Capsules)(nil)

	bobP   = memorytest.Agent("bob")
	carolP = memorytest.Agent("carol")
)

// openTest opens a Service owned by alice, the only local agent, with the
// capsule feature attached, in memory.
func openTest(t *testing.T) (*memory.Service, *memorytest.Clock, memapi.Caller) {
	t.Helper()
	s, clk := memorytest.Open(t, memory.Config{Features: []memory.Feature{capsule.New()}})
	return s, clk, memorytest.Agent("alice")
}

// capsuleFixture has alice save two memories about user jack and put them
// in a capsule for bob.
func capsuleFixture(t *testing.T) (*memory.Service, *memorytest.Clock, memapi.Caller, []string, memapi.CapsuleCreated) {
	t.Helper()
	s, clk, alice := openTest(t)
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
	return s, clk, alice, ids, created
}

func TestBundlePrecedenceAndBudget(t *testing.T) {
	s, clk, alice := openTest(t)
	ctx := context.Background()
	save := func(req memapi.SaveRequest) memapi.Memory {
		t.Helper()
		clk.T = clk.T.Add(time.Minute)
		r, err := s.Save(ctx, alice, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Memory
	}
	// Saved oldest to newest in the reverse of precedence, so newest-first
	// alone would give the wrong order.
	sess := save(memapi.SaveRequest{Type: "decision", Scope: "session", SessionID: "s1", Title: "session decision", Content: "use the staging db for this session"})
	save(memapi.SaveRequest{Type: "decision", Scope: "session", SessionID: "other", Title: "other session", Content: "not for s1"})
	user := save(memapi.SaveRequest{Type: "decision", Scope: "user", Title: "user decision", Content: "jack prefers email"})
	proj := save(memapi.SaveRequest{Type: "decision", Scope: "project", Project: "pay", Title: "project decision", Content: "payments use idempotency keys"})
	save(memapi.SaveRequest{Type: "decision", Scope: "project", Project: "other", Title: "other project", Content: "not for pay"})
	glob := save(memapi.SaveRequest{Type: "decision", Scope: "global", Title: "global decision", Content: "never log secrets"})
	pol := save(memapi.SaveRequest{Type: "decision", Scope: "policy", Title: "policy decision", Content: "PII stays in the EU"})
	inSession := save(memapi.SaveRequest{Type: "note", SessionID: "s1", Project: "pay", Content: "session note: retried invoice 7"})
	save(memapi.SaveRequest{Type: "note", Project: "pay", Content: "project note: the ledger is append-only"})

	res, err := bundle.Build(ctx, s, capsule.Of(s), alice, memapi.BundleRequest{SessionID: "s1", Project: "pay", MaxTokens: 5000})
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
		r, err := bundle.Build(ctx, s, capsule.Of(s), alice, memapi.BundleRequest{SessionID: "s1", Project: "pay", MaxTokens: max})
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
	res, err := bundle.Build(ctx, s, capsule.Of(s), bobP, memapi.BundleRequest{SubjectType: "user", SubjectID: "jack", MaxTokens: 2000})
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
		if schema.IsCapsuleInbox(m.Namespace) {
			t.Fatalf("capsule item repeated in recent: %+v", m)
		}
	}
	for _, c := range []memapi.Caller{carolP, alice} {
		r, err := bundle.Build(ctx, s, capsule.Of(s), c, memapi.BundleRequest{SubjectType: "user", SubjectID: "jack"})
		if err != nil || len(r.Capsules) != 0 || r.Budget.Capsules != 0 {
			t.Fatalf("%s gets capsules: %+v %v", c.Principal, r.Capsules, err)
		}
	}
	off := false
	if r, _ := bundle.Build(ctx, s, capsule.Of(s), bobP, memapi.BundleRequest{SubjectType: "user", SubjectID: "jack", IncludeCapsules: &off}); len(r.Capsules) != 0 {
		t.Fatal("include_capsules=false ignored")
	}
	if _, err := bundle.Build(ctx, s, capsule.Of(s), bobP, memapi.BundleRequest{SubjectType: "user"}); err == nil {
		t.Fatal("subject_type without subject_id accepted")
	}
}

func TestBundleBudgetFlows(t *testing.T) {
	s, _, alice := openTest(t)
	ctx := context.Background()
	for i := range 30 {
		if _, err := s.Save(ctx, alice, memapi.SaveRequest{Type: "note", Content: fmt.Sprintf("note %d %s", i, strings.Repeat("word ", 20))}); err != nil {
			t.Fatal(err)
		}
	}
	// No decisions and no capsules: recent memories may use the whole budget.
	r, err := bundle.Build(ctx, s, capsule.Of(s), alice, memapi.BundleRequest{MaxTokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	if r.Budget.Recent <= 400*(100-bundle.DecisionShare-bundle.CapsuleShare)/100 || r.Budget.Total > 400 {
		t.Fatalf("unused shares did not flow to recent: %+v", r.Budget)
	}
}
