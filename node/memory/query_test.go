package memory

import (
	"context"
	"errors"
	"fmt"
	"github.com/mnemohq/mnemo/node/memapi"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTopicKeyUpsertKeepsIDWithinNamespace(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	a := mustSave(t, s, c, SaveRequest{Type: "decision", Content: "use postgres", TopicKey: "arch/db", Tags: []string{"db", "old"}, Project: "p1"})
	clk.advance(time.Hour)
	b := mustSave(t, s, c, SaveRequest{Type: "decision", Content: "use sqlite", TopicKey: "arch/db", Tags: []string{"db", "new"}})
	if !b.Upserted || b.ID != a.ID || b.Content != "use sqlite" || !slices.Equal(b.Tags, []string{"db", "new"}) {
		t.Fatalf("upsert: %+v", b)
	}
	if b.Project != "p1" || !b.CreatedAt.Equal(a.CreatedAt) || !b.UpdatedAt.After(a.UpdatedAt) {
		t.Fatalf("upsert lost project or times: %+v", b)
	}
	if st, _ := s.Stats(ctx, c, ""); st.Memories != 1 {
		t.Fatalf("upsert created a second memory: %+v", st)
	}
	// Another namespace with the same key is another memory.
	sub := mustSave(t, s, c, SaveRequest{Namespace: "subagent/task-1", Content: "use mysql", TopicKey: "arch/db"})
	if sub.Upserted || sub.ID == a.ID || sub.Namespace != "agent://alice/subagent/task-1" {
		t.Fatalf("upsert crossed namespaces: %+v", sub)
	}
	sub2 := mustSave(t, s, c, SaveRequest{Namespace: "subagent/task-1", Content: "use mysql 8", TopicKey: "arch/db"})
	if !sub2.Upserted || sub2.ID != sub.ID {
		t.Fatalf("upsert in the sub-namespace: %+v", sub2)
	}
	if got, _ := s.Get(ctx, c, a.ID, false); got.Content != "use sqlite" {
		t.Fatalf("sub-namespace upsert touched the root memory: %+v", got)
	}
	// A soft-deleted memory is not upserted into: the key starts afresh.
	if err := s.Delete(ctx, c, a.ID, false); err != nil {
		t.Fatal(err)
	}
	fresh := mustSave(t, s, c, SaveRequest{Content: "use duckdb", TopicKey: "arch/db"})
	if fresh.Upserted || fresh.ID == a.ID {
		t.Fatalf("saved into a deleted memory: %+v", fresh)
	}
}

func TestSubAgentScoping(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	sub := mustSave(t, s, c, SaveRequest{Namespace: "subagent/task-1", Content: "kiwi in task one"})
	if sub.Namespace != "agent://alice/subagent/task-1" {
		t.Fatalf("sub-agent save landed in %q", sub.Namespace)
	}
	root := mustSave(t, s, c, SaveRequest{Content: "kiwi at the root"})
	other := mustSave(t, s, c, SaveRequest{Namespace: "agent://alice/subagent/task-10", Content: "kiwi in task ten"})
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"", []string{sub.ID, root.ID, other.ID}},
		{"agent://alice", []string{sub.ID, root.ID, other.ID}},
		{"subagent/task-1", []string{sub.ID}}, // not task-10: a prefix is not a parent
		{"agent://alice/subagent/task-1", []string{sub.ID}},
		{"subagent", []string{sub.ID, other.ID}},
	} {
		res, err := s.Search(ctx, c, SearchQuery{Query: "kiwi", Filter: Filter{Namespace: tc.ns}})
		if err != nil || !sameSet(hitIDs(res), tc.want) || res.Total != len(tc.want) {
			t.Errorf("namespace %q: got %v (total %d), want %v, err %v", tc.ns, hitIDs(res), res.Total, tc.want, err)
		}
	}
}

func TestSearchFilters(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	m1 := mustSave(t, s, c, SaveRequest{Type: "decision", Content: "falcon one", Tags: []string{"a", "b"}, Project: "p1",
		Scope: "project", SubjectType: "user", SubjectID: "u1", SessionID: "s1", Channel: "team"})
	clk.advance(time.Hour)
	m2 := mustSave(t, s, c, SaveRequest{Type: "fact", Content: "falcon two", Tags: []string{"a"}, Project: "p2",
		Scope: "user", SubjectType: "repo", SubjectID: "r1", SessionID: "s2", Channel: "private"})
	clk.advance(time.Hour)
	m3 := mustSave(t, s, c, SaveRequest{Type: "decision", Content: "falcon three", Tags: []string{"b", "c"}, Project: "p1",
		Scope: "global", SubjectType: "user", SubjectID: "u2", SessionID: "s1", Channel: "public"})
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"none", Filter{}, []string{m1.ID, m2.ID, m3.ID}},
		{"type", Filter{Type: "decision"}, []string{m1.ID, m3.ID}},
		{"one tag", Filter{Tags: []string{"a"}}, []string{m1.ID, m2.ID}},
		{"all of two tags", Filter{Tags: []string{"a", "b"}}, []string{m1.ID}},
		{"tag nobody has", Filter{Tags: []string{"b", "zzz"}}, nil},
		{"project", Filter{Project: "p1"}, []string{m1.ID, m3.ID}},
		{"scope", Filter{Scope: "user"}, []string{m2.ID}},
		{"subject type", Filter{SubjectType: "user"}, []string{m1.ID, m3.ID}},
		{"subject", Filter{SubjectType: "user", SubjectID: "u2"}, []string{m3.ID}},
		{"session", Filter{SessionID: "s1"}, []string{m1.ID, m3.ID}},
		{"channel", Filter{Channel: "private"}, []string{m2.ID}},
		{"since (inclusive)", Filter{Since: m2.CreatedAt}, []string{m2.ID, m3.ID}},
		{"until (inclusive)", Filter{Until: m2.CreatedAt}, []string{m1.ID, m2.ID}},
		{"since and until", Filter{Since: m2.CreatedAt, Until: m2.CreatedAt}, []string{m2.ID}},
		{"combined", Filter{Type: "decision", Project: "p1", Channel: "public"}, []string{m3.ID}},
	} {
		res, err := s.Search(ctx, c, SearchQuery{Query: "falcon", Filter: tc.f})
		if err != nil || !sameSet(hitIDs(res), tc.want) || res.Total != len(tc.want) {
			t.Errorf("%s: got %v (total %d), want %v, err %v", tc.name, hitIDs(res), res.Total, tc.want, err)
		}
	}
}

func TestSoftDeleteHidesFromReads(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		ids = append(ids, mustSave(t, s, c, SaveRequest{Content: fmt.Sprintf("heron note %d", i)}).ID)
		clk.advance(time.Minute)
	}
	gone := ids[1]
	if err := s.Delete(ctx, c, gone, false); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Search(ctx, c, SearchQuery{Query: "heron"}); slices.Contains(hitIDs(res), gone) || res.Total != 2 {
		t.Errorf("search shows the deleted memory: %v", hitIDs(res))
	}
	res, _ := s.Search(ctx, c, SearchQuery{Query: "heron", IncludeDeleted: true})
	if !slices.Contains(hitIDs(res), gone) {
		t.Errorf("include_deleted search misses it: %v", hitIDs(res))
	}
	cr, _ := s.Context(ctx, c, ContextQuery{})
	if slices.Contains(memIDs(cr.Memories), gone) || strings.Contains(cr.Text, gone) {
		t.Errorf("context shows the deleted memory")
	}
	tl, err := s.Timeline(ctx, c, TimelineQuery{ID: ids[0]})
	if err != nil || !slices.Equal(memIDs(tl.After), []string{ids[2]}) {
		t.Errorf("timeline after %v: %v", memIDs(tl.After), err)
	}
	if _, err := s.Get(ctx, c, gone, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("get: %v", err)
	}
	if m, err := s.Get(ctx, c, gone, true); err != nil || m.DeletedAt == nil || !m.DeletedAt.Equal(clk.t) {
		t.Errorf("get include_deleted: %+v %v", m, err)
	}
	if err := s.Delete(ctx, c, gone, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
	if st, _ := s.Stats(ctx, c, ""); st.Memories != 2 || st.Deleted != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestHardDeleteIsFinal(t *testing.T) {
	dir := t.TempDir()
	s, _, c := openTest(t, dir)
	ctx := context.Background()
	a := mustSave(t, s, c, SaveRequest{Content: "ibis secret", TopicKey: "k/ibis"})
	soft := mustSave(t, s, c, SaveRequest{Content: "ibis soft then hard"})
	if err := s.Delete(ctx, c, a.ID, true); err != nil {
		t.Fatal(err)
	}
	// Hard delete works on an already soft-deleted memory too.
	if err := s.Delete(ctx, c, soft.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, c, soft.ID, true); err != nil {
		t.Fatalf("hard delete after soft delete: %v", err)
	}
	check := func(s *Service, live int) {
		t.Helper()
		for _, id := range []string{a.ID, soft.ID} {
			if _, err := s.Get(ctx, c, id, true); !errors.Is(err, ErrNotFound) {
				t.Errorf("get retracted %s: %v", id, err)
			}
			if err := s.Delete(ctx, c, id, true); !errors.Is(err, ErrNotFound) {
				t.Errorf("retracting twice: %v", err)
			}
		}
		if res, _ := s.Search(ctx, c, SearchQuery{Query: "ibis", IncludeDeleted: true}); res.Total != live {
			t.Errorf("retracted memory searchable: %v", hitIDs(res))
		}
		if st, _ := s.Stats(ctx, c, ""); st.Memories != live || st.Deleted != 0 {
			t.Errorf("stats count retracted memories: %+v", st)
		}
		if ex, _ := dump(s, c, ""); len(ex.Memories) != live {
			t.Errorf("a full dump holds retracted memories: %v", memIDs(ex.Memories))
		}
	}
	check(s, 0)
	b := mustSave(t, s, c, SaveRequest{Content: "ibis again", TopicKey: "k/ibis"})
	if b.Upserted || b.ID == a.ID {
		t.Fatalf("save after retract reused the memory: %+v", b)
	}
	s.Close()
	s2, _, _ := openTest(t, dir)
	check(s2, 1)
	if got, err := s2.Get(ctx, c, b.ID, false); err != nil || got.Content != "ibis again" {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
}

func TestTimelineOrderAndCounts(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	var ids []string
	for i := range 14 {
		typ := "note"
		if i%2 == 0 {
			typ = "fact"
		}
		ids = append(ids, mustSave(t, s, c, SaveRequest{Type: typ, Content: fmt.Sprintf("entry %d", i)}).ID)
		clk.advance(time.Minute)
	}
	for _, tc := range []struct {
		name          string
		q             TimelineQuery
		before, after []string
	}{
		{"defaults", TimelineQuery{ID: ids[7]}, ids[2:7], ids[8:13]},
		{"3 and 4", TimelineQuery{ID: ids[7], Before: 3, After: 4}, ids[4:7], ids[8:12]},
		{"at the start", TimelineQuery{ID: ids[0], Before: 3, After: 2}, nil, ids[1:3]},
		{"at the end", TimelineQuery{ID: ids[13], Before: 2, After: 50}, ids[11:13], nil},
		{"type filter", TimelineQuery{ID: ids[6], Before: 2, After: 2, Filter: Filter{Type: "fact"}},
			[]string{ids[2], ids[4]}, []string{ids[8], ids[10]}},
	} {
		tl, err := s.Timeline(ctx, c, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tl.Center.ID != tc.q.ID || !slices.Equal(memIDs(tl.Before), tc.before) || !slices.Equal(memIDs(tl.After), tc.after) {
			t.Errorf("%s: center %s before %v after %v; want before %v after %v", tc.name, tl.Center.ID,
				memIDs(tl.Before), memIDs(tl.After), tc.before, tc.after)
		}
	}
}

func TestContextBudget(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	for _, id := range []string{"sess-a", "sess-b"} {
		if _, err := s.StartSession(ctx, c, SessionStart{ID: id, Project: "p"}); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Minute)
	}
	var ids []string
	for i := range 30 {
		ids = append(ids, mustSave(t, s, c, SaveRequest{Type: "note", Title: fmt.Sprintf("note %d", i),
			Content: strings.Repeat(fmt.Sprintf("word%d ", i), 40)}).ID)
		clk.advance(time.Minute)
	}
	slices.Reverse(ids) // newest first

	full, err := s.Context(ctx, c, ContextQuery{MaxTokens: MaxMaxTokens})
	if err != nil {
		t.Fatal(err)
	}
	if full.Truncated || !slices.Equal(memIDs(full.Memories), ids) || len(full.Sessions) != 2 || full.Sessions[0].ID != "sess-b" {
		t.Fatalf("full context: truncated %v, %d memories, sessions %+v", full.Truncated, len(full.Memories), full.Sessions)
	}
	if !strings.Contains(full.Text, "sess-a") || !strings.Contains(full.Text, ids[0]) {
		t.Fatalf("context text lacks sessions or memories:\n%s", full.Text)
	}
	if full.MaxTokens != MaxMaxTokens || full.TokensUsed != estimateTokensOfParts(t, full) {
		t.Logf("tokens used %d", full.TokensUsed)
	}
	def, _ := s.Context(ctx, c, ContextQuery{})
	if def.MaxTokens != DefaultMaxTokens {
		t.Errorf("default max tokens %d", def.MaxTokens)
	}
	for _, budget := range []int{1, 4, 5, 8, 12, 20, 40, 100, 300, 1000, DefaultMaxTokens} {
		r, err := s.Context(ctx, c, ContextQuery{MaxTokens: budget})
		if err != nil {
			t.Fatal(err)
		}
		if r.TokensUsed > budget || memapi.EstimateTokens(r.Text) > budget {
			t.Errorf("budget %d: used %d, text is %d tokens", budget, r.TokensUsed, memapi.EstimateTokens(r.Text))
		}
		if r.TokensUsed < memapi.EstimateTokens(r.Text) {
			t.Errorf("budget %d: reports %d tokens used for a text of %d", budget, r.TokensUsed, memapi.EstimateTokens(r.Text))
		}
		complete := len(r.Memories) == len(ids) && len(r.Sessions) == 2
		if r.Truncated == complete {
			t.Errorf("budget %d: truncated %v with %d/%d memories and %d/2 sessions", budget, r.Truncated, len(r.Memories), len(ids), len(r.Sessions))
		}
		if !slices.Equal(memIDs(r.Memories), ids[:len(r.Memories)]) {
			t.Errorf("budget %d: not the newest first: %v", budget, memIDs(r.Memories))
		}
		for _, m := range r.Memories {
			if !strings.Contains(r.Text, m.ID) {
				t.Errorf("budget %d: memory %s listed but not in the text", budget, m.ID)
			}
		}
	}
}

// estimateTokensOfParts is only a sanity bound: the parts' estimates summed
// are at least the estimate of the whole text.
func estimateTokensOfParts(t *testing.T, r ContextResult) int {
	t.Helper()
	if r.TokensUsed < memapi.EstimateTokens(r.Text) {
		t.Errorf("tokens used %d below the text's estimate %d", r.TokensUsed, memapi.EstimateTokens(r.Text))
	}
	return r.TokensUsed
}
