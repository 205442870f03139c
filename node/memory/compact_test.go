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
	"unicode/utf8"
)

// saveAged saves memories created ageDays before the fake clock's present
// (pres), oldest first: the HLC never runs backwards, so old memories must
// be written before newer ones.
func saveAged(t *testing.T, s *Service, clk *fakeClock, c Caller, pres time.Time, ages []int, mod func(i int, r *SaveRequest)) []string {
	t.Helper()
	if !slices.IsSortedFunc(ages, func(a, b int) int { return b - a }) {
		t.Fatal("saveAged wants ages oldest first")
	}
	var ids []string
	for i, age := range ages {
		clk.t = pres.Add(-time.Duration(age) * 24 * time.Hour)
		req := SaveRequest{Content: fmt.Sprintf("memory aged %d days, number %d", age, i)}
		if mod != nil {
			mod(i, &req)
		}
		ids = append(ids, mustSave(t, s, c, req).ID)
	}
	clk.t = pres
	return ids
}

func TestCompactIdentify(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	pres := clk.t
	long := strings.Repeat("é", 60) + "\n  " + strings.Repeat("ab ", 40)
	ages := []int{400, 365, 364, 200, 90, 89, 30, 29, 7, 6, 0}
	ids := saveAged(t, s, clk, c, pres, ages, func(i int, r *SaveRequest) {
		if i == 0 {
			r.Content = long
		}
		if i == 3 {
			r.Project = "other"
		}
	})
	// A deleted old memory is never a candidate.
	deleted := saveAged(t, s, clk, c, pres.AddDate(0, 0, -1000), []int{0}, nil)[0]
	clk.t = pres
	if err := s.Delete(ctx, c, deleted, false); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s, c)

	res, err := s.Compact(ctx, c, CompactRequest{OlderThanDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "identify" || res.Before != len(ids) || res.After != len(ids) || res.Compacted != 0 {
		t.Fatalf("identify result %+v", res)
	}
	var got []string
	for _, cd := range res.Candidates {
		got = append(got, cd.ID)
	}
	if want := ids[:len(ids)-1]; !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want oldest first %v", got, want)
	}
	wantHist := []AgeBucket{{Label: "<7d", Count: 1}, {Label: "7-30d", Count: 2}, {Label: "30-90d", Count: 2}, {Label: "90-365d", Count: 3}, {Label: ">=365d", Count: 2}}
	if !slices.Equal(res.Histogram, wantHist) {
		t.Fatalf("histogram %v, want %v", res.Histogram, wantHist)
	}
	first := res.Candidates[0]
	if first.AgeDays != 400 || first.Scope != DefaultScope || first.Namespace != "agent://alice" || !first.CreatedAt.Equal(pres.AddDate(0, 0, -400)) {
		t.Fatalf("candidate %+v", first)
	}
	wantSnippet := strings.TrimSpace(string([]rune(memapi.OneLine(long))[:snippetRunes])) + "…"
	if first.Snippet != wantSnippet || utf8.RuneCountInString(first.Snippet) > snippetRunes+1 {
		t.Fatalf("snippet %q, want the first %d characters: %q", first.Snippet, snippetRunes, wantSnippet)
	}
	if short := res.Candidates[1]; short.Snippet != "memory aged 365 days, number 1" {
		t.Fatalf("short content snippet %q", short.Snippet)
	}

	res, _ = s.Compact(ctx, c, CompactRequest{OlderThanDays: 30, Limit: 3})
	if len(res.Candidates) != 3 || res.Candidates[0].ID != ids[0] || res.Candidates[2].ID != ids[2] {
		t.Fatalf("limit 3: %+v", res.Candidates)
	}
	if total := bucketTotal(res.Histogram); total != 7 {
		t.Fatalf("the histogram counts every stale memory, not the first limit: %v", res.Histogram)
	}
	res, _ = s.Compact(ctx, c, CompactRequest{OlderThanDays: 30, Project: "other"})
	if len(res.Candidates) != 1 || res.Candidates[0].ID != ids[3] || res.Before != 1 {
		t.Fatalf("project filter: %+v", res)
	}
	if after := snapshot(t, s, c); after != before {
		t.Fatal("identify changed the state")
	}
}

func bucketTotal(h []AgeBucket) int {
	n := 0
	for _, b := range h {
		n += b.Count
	}
	return n
}

func TestCompactIdentifyDefaultLimit(t *testing.T) {
	s, clk, c := openTest(t, "")
	ages := make([]int, DefaultCompactLimit+10)
	for i := range ages {
		ages[i] = 500 - i
	}
	ids := saveAged(t, s, clk, c, clk.t, ages, nil)
	res, err := s.Compact(context.Background(), c, CompactRequest{OlderThanDays: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != DefaultCompactLimit || res.Candidates[0].ID != ids[0] || res.Candidates[DefaultCompactLimit-1].ID != ids[DefaultCompactLimit-1] {
		t.Fatalf("%d candidates", len(res.Candidates))
	}
	if bucketTotal(res.Histogram) != len(ids) {
		t.Fatalf("histogram %v", res.Histogram)
	}
}

func TestCompactExecute(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	pres := clk.t
	ids := saveAged(t, s, clk, c, pres, []int{100, 90, 80, 70, 60}, func(i int, r *SaveRequest) { r.Scope = "user" })
	sub := saveAged(t, s, clk, c, pres, []int{50, 40}, func(i int, r *SaveRequest) { r.Namespace = "subagent/w" })
	already := saveAged(t, s, clk, c, pres, []int{30}, nil)[0]
	if err := s.Delete(ctx, c, already, false); err != nil {
		t.Fatal(err)
	}
	live := len(ids) + len(sub)

	// All or nothing: one bad id and nothing is deleted or written.
	before := snapshot(t, s, c)
	for _, bad := range [][]string{
		{ids[0], ids[1], "01NOPE0000000000000000000Z"},
		{ids[0], already},
		{ids[0], "s:sess"},
	} {
		_, err := s.Compact(ctx, c, CompactRequest{CompactIDs: bad, SummaryTitle: "t", SummaryContent: "c"})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("compact %v: %v", bad, err)
		}
		if snapshot(t, s, c) != before {
			t.Fatalf("a failed compaction of %v changed the state", bad)
		}
	}

	res, err := s.Compact(ctx, c, CompactRequest{CompactIDs: []string{ids[0], ids[1], ids[2], ids[0]},
		SummaryTitle: "Early storage notes", SummaryContent: "We tried three databases.", SessionID: "sess-9"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "execute" || res.Compacted != 3 || res.Before != live || res.After != live-3+1 || res.SummaryID == "" {
		t.Fatalf("execute result %+v", res)
	}
	for _, id := range ids[:3] {
		if _, err := s.Get(ctx, c, id, false); !errors.Is(err, ErrNotFound) {
			t.Fatalf("compacted %s still live: %v", id, err)
		}
		if m, _ := s.Get(ctx, c, id, true); m.DeletedAt == nil {
			t.Fatalf("compacted %s not soft-deleted", id)
		}
	}
	sum, err := s.Get(ctx, c, res.SummaryID, false)
	if err != nil {
		t.Fatal(err)
	}
	wantProv := []string{"author:agent://alice", "source:" + ids[0], "source:" + ids[1], "source:" + ids[2]}
	slices.Sort(wantProv)
	if sum.Type != "compaction_summary" || sum.Title != "Early storage notes" || sum.Content != "We tried three databases." ||
		sum.Scope != "user" || sum.Namespace != "agent://alice" || sum.Project != "" || sum.SessionID != "sess-9" ||
		!slices.Equal(sum.Provenance, wantProv) {
		t.Fatalf("summary %+v", sum)
	}
	if st, _ := s.Stats(ctx, c, ""); st.Memories != live-3+1 || st.Deleted != 4 {
		t.Fatalf("stats after compaction %+v", st)
	}

	// Summaries go where the sources were; mixed namespaces go to the caller.
	res, err = s.Compact(ctx, c, CompactRequest{CompactIDs: sub, SummaryTitle: "w", SummaryContent: "w done"})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Get(ctx, c, res.SummaryID, false); m.Namespace != "agent://alice/subagent/w" || m.Scope != DefaultScope {
		t.Fatalf("sub-namespace summary %+v", m)
	}
	// Without a summary only the deletions happen.
	res, err = s.Compact(ctx, c, CompactRequest{CompactIDs: ids[3:]})
	if err != nil || res.Compacted != 2 || res.SummaryID != "" || res.After != res.Before-2 {
		t.Fatalf("compaction without summary: %+v %v", res, err)
	}
	// The session defaults to manual-save; Project both filters the counts and
	// goes on the summary.
	rest := saveAged(t, s, clk, c, pres, []int{1}, func(_ int, r *SaveRequest) { r.Project = "p" })
	res, err = s.Compact(ctx, c, CompactRequest{CompactIDs: rest, Project: "p", SummaryTitle: "p", SummaryContent: "p done"})
	if err != nil || res.Before != 1 || res.After != 1 {
		t.Fatalf("project compaction: %+v %v", res, err)
	}
	if m, _ := s.Get(ctx, c, res.SummaryID, false); m.Project != "p" || m.SessionID != "manual-save" {
		t.Fatalf("project summary %+v", m)
	}
}

func TestCompactExecuteMaxIDs(t *testing.T) {
	// On disk: the summary's provenance makes a record over the in-memory
	// store's 1 KiB value limit.
	s, _, c := openTest(t, t.TempDir())
	var ids []string
	for i := range MaxCompactLimit {
		ids = append(ids, mustSave(t, s, c, SaveRequest{Content: fmt.Sprintf("bulk %d", i)}).ID)
	}
	res, err := s.Compact(context.Background(), c, CompactRequest{CompactIDs: ids, SummaryTitle: "bulk", SummaryContent: "200 notes"})
	if err != nil || res.Compacted != MaxCompactLimit || res.After != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	sum, _ := s.Get(context.Background(), c, res.SummaryID, false)
	if len(sum.Provenance) != MaxCompactLimit+1 {
		t.Fatalf("summary provenance has %d entries", len(sum.Provenance))
	}
}
