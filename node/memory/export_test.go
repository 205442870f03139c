package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mnemohq/mnemo/node/schema"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// richService holds one memory of each shape an export must carry.
func richService(t *testing.T) (*Service, *fakeClock, Caller) {
	t.Helper()
	s, clk, c := openTest(t, t.TempDir())
	ctx := context.Background()
	mustSave(t, s, c, SaveRequest{Type: "decision", Title: "Every field", Content: "content\nwith two lines",
		Summary: "short", Tags: []string{"b", "a"}, TopicKey: "arch/all", Importance: ptr(0.9), Confidence: ptr(0.25),
		LinkedFiles: []string{"main.go", "go.mod"}, Scope: "user", SubjectType: "repo", SubjectID: "mnemo",
		Project: "mnemo", SessionID: "s1", Channel: "team"})
	clk.advance(time.Minute)
	upd := mustSave(t, s, c, SaveRequest{Content: "to be updated"})
	clk.advance(time.Minute)
	if _, err := s.Update(ctx, c, upd.ID, UpdateRequest{Content: ptr("updated"), Tags: &[]string{"x"}}); err != nil {
		t.Fatal(err)
	}
	gone := mustSave(t, s, c, SaveRequest{Content: "soft deleted", TopicKey: "arch/gone"})
	clk.advance(time.Minute)
	if err := s.Delete(ctx, c, gone.ID, false); err != nil {
		t.Fatal(err)
	}
	var src []string
	for i := range 2 {
		src = append(src, mustSave(t, s, c, SaveRequest{Content: fmt.Sprintf("source %d", i)}).ID)
	}
	clk.advance(time.Minute)
	if _, err := s.Compact(ctx, c, CompactRequest{CompactIDs: src, SummaryTitle: "sum", SummaryContent: "both sources"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSession(ctx, c, SessionStart{ID: "s1", Project: "mnemo", Directory: "/src"}); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Minute)
	if _, err := s.EndSession(ctx, c, SessionEnd{ID: "s1", Summary: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSession(ctx, c, SessionStart{ID: "s2"}); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour)
	return s, clk, c
}

func exportJSON(t *testing.T, s *Service, c Caller, ns string) (Export, []byte) {
	t.Helper()
	ex, err := s.Export(context.Background(), c, ns)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	return ex, b
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExportImportRoundTrip(t *testing.T) {
	src, clk, c := richService(t)
	ex, data := exportJSON(t, src, c, "")
	if ex.Format != "mnemo-export" || ex.Version != 1 || len(ex.Memories) != 6 || len(ex.Sessions) != 2 {
		t.Fatalf("export: %s", jsonOf(t, ex))
	}
	dst, dclk, _ := openTest(t, t.TempDir())
	dclk.t = clk.t // restored later than exported
	ctx := context.Background()
	res, err := dst.ImportWith(ctx, c, data, ImportOptions{PreserveProvenance: true})
	if err != nil {
		t.Fatal(err)
	}
	if res != (ImportResult{Format: "mnemo-export", Memories: 6, Sessions: 2}) {
		t.Fatalf("import result %+v", res)
	}
	got, _ := exportJSON(t, dst, c, "")
	if a, b := jsonOf(t, ex.Memories), jsonOf(t, got.Memories); a != b {
		t.Fatalf("memories differ after the round trip:\nexported %s\nimported %s", a, b)
	}
	if a, b := jsonOf(t, ex.Sessions), jsonOf(t, got.Sessions); a != b {
		t.Fatalf("sessions differ after the round trip:\nexported %s\nimported %s", a, b)
	}
	// The imported memories behave like the originals: searchable, the
	// deleted one hidden, the topic key upserts.
	if r, _ := dst.Search(ctx, c, SearchQuery{Query: "lines"}); r.Total != 1 {
		t.Fatalf("imported memory not searchable: %+v", r)
	}
	if st, _ := dst.Stats(ctx, c, ""); st.Memories != 3 || st.Deleted != 3 || st.Sessions != 2 {
		t.Fatalf("stats after import %+v", st)
	}
	if r := mustSave(t, dst, c, SaveRequest{Content: "again", TopicKey: "arch/all"}); !r.Upserted {
		t.Fatalf("imported topic key not upserted: %+v", r)
	}

	// Importing twice skips everything and changes nothing.
	before := snapshot(t, src, c)
	res, err = src.Import(ctx, c, "", data)
	if err != nil || res != (ImportResult{Format: "mnemo-export", Skipped: 8}) {
		t.Fatalf("second import: %+v %v", res, err)
	}
	if snapshot(t, src, c) != before {
		t.Fatal("a second import changed the state")
	}
}

func TestImportIntoNamespace(t *testing.T) {
	src, clk, c := richService(t)
	_, data := exportJSON(t, src, c, "")
	dst, dclk, _ := openTest(t, "")
	dclk.t = clk.t
	ctx := context.Background()
	if _, err := dst.Import(ctx, c, "subagent/restored", data); err != nil {
		t.Fatal(err)
	}
	ex, _ := dst.Export(ctx, c, "")
	for _, m := range ex.Memories {
		if m.Namespace != "agent://alice/subagent/restored" {
			t.Fatalf("memory %s imported into %s", m.ID, m.Namespace)
		}
	}
	for _, ss := range ex.Sessions {
		if ss.Namespace != "agent://alice/subagent/restored" {
			t.Fatalf("session %s imported into %s", ss.ID, ss.Namespace)
		}
	}
}

// TestImportAllOrNothing: one bad item anywhere in the body and nothing of
// it is written.
func TestImportAllOrNothing(t *testing.T) {
	src, clk, c := richService(t)
	ex, _ := exportJSON(t, src, c, "")
	dst, dclk, _ := openTest(t, t.TempDir())
	dclk.t = clk.t
	ctx := context.Background()
	mustSave(t, dst, c, SaveRequest{Content: "already here"})
	before := snapshot(t, dst, c)
	for name, mod := range map[string]func(*Export){
		"bad scope":            func(e *Export) { e.Memories[3].Scope = "galaxy" },
		"empty content":        func(e *Export) { e.Memories[5].Content = "" },
		"short id":             func(e *Export) { e.Memories[0].ID = "x" },
		"session no id":        func(e *Export) { e.Sessions[1].ID = "" },
		"session long dir":     func(e *Export) { e.Sessions[0].Directory = strings.Repeat("d", MaxPathBytes+1) },
		"session long summary": func(e *Export) { e.Sessions[0].Summary = strings.Repeat("s", MaxContentBytes+1) },
	} {
		var e Export
		if err := json.Unmarshal([]byte(jsonOf(t, ex)), &e); err != nil {
			t.Fatal(err)
		}
		mod(&e)
		b, _ := json.Marshal(e)
		if _, err := dst.Import(ctx, c, "", b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if snapshot(t, dst, c) != before {
			t.Fatalf("%s: a failed import changed the state", name)
		}
	}
}

func TestImportEngram(t *testing.T) {
	data, err := os.ReadFile("testdata/engram-export.json")
	if err != nil {
		t.Fatal(err)
	}
	s, _, c := openTest(t, "")
	ctx := context.Background()
	res, err := s.Import(ctx, c, "", data)
	if err != nil {
		t.Fatal(err)
	}
	if res != (ImportResult{Format: "engram", Memories: 3, Prompts: 2, Sessions: 2}) {
		t.Fatalf("import result %+v", res)
	}
	ex, _ := s.Export(ctx, c, "")
	at := func(v string) time.Time {
		tm, err := time.Parse(time.DateTime, v)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	byTitle := map[string]Memory{}
	for _, m := range ex.Memories {
		byTitle[m.Title] = m
		if m.Namespace != "agent://alice" || m.Author != "agent://alice" || len(m.ID) != 26 || m.ContentHash != schema.ContentHash(m.Content) {
			t.Errorf("memory %+v", m)
		}
	}
	jwt := byTitle["Use JWT for API auth"]
	if jwt.Type != "decision" || !strings.HasPrefix(jwt.Content, "Chose short-lived JWT") || jwt.Project != "webapp" ||
		jwt.Scope != "project" || jwt.TopicKey != "architecture/auth" || jwt.SessionID != "sess-aaa" ||
		!slices.Equal(jwt.Tags, []string{"tool:Edit"}) || !jwt.CreatedAt.Equal(at("2026-03-01 09:15:00")) ||
		!jwt.UpdatedAt.Equal(at("2026-03-01 10:00:00")) || jwt.DeletedAt != nil ||
		!slices.Equal(jwt.Provenance, []string{"source:engram:obs-7f3a"}) {
		t.Errorf("observation 1: %s", jsonOf(t, jwt))
	}
	race := byTitle["Fixed token refresh race"]
	if race.Type != "bugfix" || race.Scope != "user" || len(race.Tags) != 0 || race.TopicKey != "" {
		t.Errorf("observation 2 (personal scope, no tool): %s", jsonOf(t, race))
	}
	tdt := byTitle["Prefer table-driven tests"]
	if tdt.Type != DefaultType || tdt.Project != "" || tdt.DeletedAt == nil || !tdt.DeletedAt.Equal(at("2026-03-03 08:00:00")) ||
		!slices.Equal(tdt.Tags, []string{"tool:Bash"}) || !slices.Equal(tdt.Provenance, []string{"source:engram:3"}) {
		t.Errorf("observation 3 (bad type, derived title, deleted, no sync_id): %s", jsonOf(t, tdt))
	}
	prompt := byTitle["add JWT auth to the API"]
	if prompt.Type != "prompt" || prompt.Scope != "session" || prompt.SessionID != "sess-aaa" || prompt.Project != "webapp" ||
		!prompt.CreatedAt.Equal(at("2026-03-01 09:01:00")) {
		t.Errorf("prompt: %s", jsonOf(t, prompt))
	}
	if len(byTitle) != 5 {
		t.Errorf("%d memories", len(byTitle))
	}
	if len(ex.Sessions) != 2 {
		t.Fatalf("sessions %+v", ex.Sessions)
	}
	a, b := ex.Sessions[1], ex.Sessions[0] // newest first
	if a.ID != "sess-aaa" || a.Project != "webapp" || a.Directory != "/home/dev/webapp" || !a.StartedAt.Equal(at("2026-03-01 09:00:00")) ||
		a.EndedAt == nil || !a.EndedAt.Equal(at("2026-03-01 11:30:00")) || a.Summary != "Set up JWT auth and fixed the refresh race." {
		t.Errorf("session a: %s", jsonOf(t, a))
	}
	if b.ID != "sess-bbb" || b.EndedAt != nil || b.Summary != "" || !b.StartedAt.Equal(at("2026-03-02 14:00:00")) {
		t.Errorf("session b: %s", jsonOf(t, b))
	}
	if r, _ := s.Search(ctx, c, SearchQuery{Query: "refresh", Filter: Filter{Project: "webapp"}}); r.Total != 2 {
		t.Errorf("search after import: %v", hitIDs(r))
	}

	before := snapshot(t, s, c)
	res, err = s.Import(ctx, c, "", data)
	if err != nil || res != (ImportResult{Format: "engram", Skipped: 7}) {
		t.Fatalf("second import: %+v %v", res, err)
	}
	if snapshot(t, s, c) != before {
		t.Fatal("a second engram import changed the state")
	}
}

func TestImportRejectsOtherBodies(t *testing.T) {
	s, _, c := openTest(t, "")
	mustSave(t, s, c, SaveRequest{Content: "x"})
	before := snapshot(t, s, c)
	for _, body := range []string{``, `{}`, `null`, `[]`, `"mnemo-export"`, `{"format":"other","memories":[]}`,
		`{"format":"mnemo-export","memories":{}}`, `{"observations":[{"id":1,"content":"x","created_at":"yesterday"}]}`,
		`{"observations":[{"id":1,"content":"","created_at":"2026-01-01 00:00:00"}]}`, `{"format":"mnemo-export"} trailing`} {
		if _, err := s.Import(context.Background(), c, "", []byte(body)); !errors.Is(err, ErrInvalid) {
			t.Errorf("body %q: %v", body, err)
		}
	}
	if snapshot(t, s, c) != before {
		t.Fatal("a rejected import changed the state")
	}
}
