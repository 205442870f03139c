package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
)

// openTest opens a Service owned by alice, its only local agent, with the
// transfer feature attached.
func openTest(t *testing.T, dir string) (*memory.Service, *memorytest.Clock, memapi.Caller) {
	t.Helper()
	s, clk := memorytest.Open(t, memory.Config{KV: badgerkvtest.In(t, dir), Features: []memory.Feature{transfer.New()}})
	return s, clk, memorytest.Agent("alice")
}

func ptr[T any](v T) *T { return &v }

// richService holds one memory of each shape an export must carry.
func richService(t *testing.T) (*memory.Service, *memorytest.Clock, memapi.Caller) {
	t.Helper()
	s, clk, c := openTest(t, t.TempDir())
	ctx := context.Background()
	memorytest.Save(t, s, c, memapi.SaveRequest{Type: "decision", Title: "Every field", Content: "content\nwith two lines",
		Summary: "short", Tags: []string{"b", "a"}, TopicKey: "arch/all", Importance: ptr(0.9), Confidence: ptr(0.25),
		LinkedFiles: []string{"main.go", "go.mod"}, Scope: "user", SubjectType: "repo", SubjectID: "mnemo",
		Project: "mnemo", SessionID: "s1", Channel: "team"})
	clk.Advance(time.Minute)
	upd := memorytest.Save(t, s, c, memapi.SaveRequest{Content: "to be updated"})
	clk.Advance(time.Minute)
	if _, err := s.Update(ctx, c, upd.ID, memapi.UpdateRequest{Content: ptr("updated"), Tags: &[]string{"x"}}); err != nil {
		t.Fatal(err)
	}
	gone := memorytest.Save(t, s, c, memapi.SaveRequest{Content: "soft deleted", TopicKey: "arch/gone"})
	clk.Advance(time.Minute)
	if err := s.Delete(ctx, c, gone.ID, false); err != nil {
		t.Fatal(err)
	}
	var src []string
	for i := range 2 {
		src = append(src, memorytest.Save(t, s, c, memapi.SaveRequest{Content: fmt.Sprintf("source %d", i)}).ID)
	}
	clk.Advance(time.Minute)
	if _, err := s.Compact(ctx, c, memapi.CompactRequest{CompactIDs: src, SummaryTitle: "sum", SummaryContent: "both sources"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSession(ctx, c, memapi.SessionStart{ID: "s1", Project: "mnemo", Directory: "/src"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := s.EndSession(ctx, c, memapi.SessionEnd{ID: "s1", Summary: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSession(ctx, c, memapi.SessionStart{ID: "s2"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	return s, clk, c
}

func exportJSON(t *testing.T, s *memory.Service, c memapi.Caller, ns string) (memapi.Export, []byte) {
	t.Helper()
	ex, err := transfer.Of(s).Export(context.Background(), c, ns)
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
	dclk.T = clk.T // restored later than exported
	ctx := context.Background()
	res, err := transfer.Of(dst).ImportWith(ctx, c, data, memapi.ImportOptions{PreserveProvenance: true})
	if err != nil {
		t.Fatal(err)
	}
	if res != (memapi.ImportResult{Format: "mnemo-export", Memories: 6, Sessions: 2}) {
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
	if r, _ := dst.Search(ctx, c, memapi.SearchQuery{Query: "lines"}); r.Total != 1 {
		t.Fatalf("imported memory not searchable: %+v", r)
	}
	if st, _ := dst.Stats(ctx, c, ""); st.Memories != 3 || st.Deleted != 3 || st.Sessions != 2 {
		t.Fatalf("stats after import %+v", st)
	}
	if r := memorytest.Save(t, dst, c, memapi.SaveRequest{Content: "again", TopicKey: "arch/all"}); !r.Upserted {
		t.Fatalf("imported topic key not upserted: %+v", r)
	}

	// Importing twice skips everything and changes nothing.
	before := memorytest.Snapshot(t, src, c)
	res, err = transfer.Of(src).Import(ctx, c, "", data)
	if err != nil || res != (memapi.ImportResult{Format: "mnemo-export", Skipped: 8}) {
		t.Fatalf("second import: %+v %v", res, err)
	}
	if memorytest.Snapshot(t, src, c) != before {
		t.Fatal("a second import changed the state")
	}
}

func TestImportIntoNamespace(t *testing.T) {
	src, clk, c := richService(t)
	_, data := exportJSON(t, src, c, "")
	dst, dclk, _ := openTest(t, "")
	dclk.T = clk.T
	ctx := context.Background()
	if _, err := transfer.Of(dst).Import(ctx, c, "subagent/restored", data); err != nil {
		t.Fatal(err)
	}
	ex, _ := transfer.Of(dst).Export(ctx, c, "")
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
	dclk.T = clk.T
	ctx := context.Background()
	memorytest.Save(t, dst, c, memapi.SaveRequest{Content: "already here"})
	before := memorytest.Snapshot(t, dst, c)
	for name, mod := range map[string]func(*memapi.Export){
		"bad scope":            func(e *memapi.Export) { e.Memories[3].Scope = "galaxy" },
		"empty content":        func(e *memapi.Export) { e.Memories[5].Content = "" },
		"short id":             func(e *memapi.Export) { e.Memories[0].ID = "x" },
		"session no id":        func(e *memapi.Export) { e.Sessions[1].ID = "" },
		"session long dir":     func(e *memapi.Export) { e.Sessions[0].Directory = strings.Repeat("d", memapi.MaxPathBytes+1) },
		"session long summary": func(e *memapi.Export) { e.Sessions[0].Summary = strings.Repeat("s", memapi.MaxContentBytes+1) },
	} {
		var e memapi.Export
		if err := json.Unmarshal([]byte(jsonOf(t, ex)), &e); err != nil {
			t.Fatal(err)
		}
		mod(&e)
		b, _ := json.Marshal(e)
		if _, err := transfer.Of(dst).Import(ctx, c, "", b); !errors.Is(err, memapi.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if memorytest.Snapshot(t, dst, c) != before {
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
	res, err := transfer.Of(s).Import(ctx, c, "", data)
	if err != nil {
		t.Fatal(err)
	}
	if res != (memapi.ImportResult{Format: "engram", Memories: 3, Prompts: 2, Sessions: 2}) {
		t.Fatalf("import result %+v", res)
	}
	ex, _ := transfer.Of(s).Export(ctx, c, "")
	at := func(v string) time.Time {
		tm, err := time.Parse(time.DateTime, v)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	byTitle := map[string]memapi.Memory{}
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
	if tdt.Type != memapi.DefaultType || tdt.Project != "" || tdt.DeletedAt == nil || !tdt.DeletedAt.Equal(at("2026-03-03 08:00:00")) ||
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
	if r, _ := s.Search(ctx, c, memapi.SearchQuery{Query: "refresh", Filter: memapi.Filter{Project: "webapp"}}); r.Total != 2 {
		t.Errorf("search after import: %v", memorytest.HitIDs(r))
	}

	before := memorytest.Snapshot(t, s, c)
	res, err = transfer.Of(s).Import(ctx, c, "", data)
	if err != nil || res != (memapi.ImportResult{Format: "engram", Skipped: 7}) {
		t.Fatalf("second import: %+v %v", res, err)
	}
	if memorytest.Snapshot(t, s, c) != before {
		t.Fatal("a second engram import changed the state")
	}
}

func TestImportRejectsOtherBodies(t *testing.T) {
	s, _, c := openTest(t, "")
	memorytest.Save(t, s, c, memapi.SaveRequest{Content: "x"})
	before := memorytest.Snapshot(t, s, c)
	for _, body := range []string{``, `{}`, `null`, `[]`, `"mnemo-export"`, `{"format":"other","memories":[]}`,
		`{"format":"mnemo-export","memories":{}}`, `{"observations":[{"id":1,"content":"x","created_at":"yesterday"}]}`,
		`{"observations":[{"id":1,"content":"","created_at":"2026-01-01 00:00:00"}]}`, `{"format":"mnemo-export"} trailing`} {
		if _, err := transfer.Of(s).Import(context.Background(), c, "", []byte(body)); !errors.Is(err, memapi.ErrInvalid) {
			t.Errorf("body %q: %v", body, err)
		}
	}
	if memorytest.Snapshot(t, s, c) != before {
		t.Fatal("a rejected import changed the state")
	}
}

// TestExportImportRejects: the request checks of export and import (moved
// from node/memory's table of rejected requests) refuse without a write.
func TestExportImportRejects(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	memorytest.Save(t, s, c, memapi.SaveRequest{Content: "x"})
	tr := transfer.Of(s)
	before := memorytest.Snapshot(t, s, c)
	for name, call := range map[string]func() error{
		"export bad namespace": func() error { _, err := tr.Export(ctx, c, "a b"); return err },
		"import bad namespace": func() error {
			_, err := tr.Import(ctx, c, "a b", []byte(`{"format":"mnemo-export","memories":[]}`))
			return err
		},
		"import neither format": func() error { _, err := tr.Import(ctx, c, "", []byte(`{"memories":[]}`)); return err },
		"import not JSON":       func() error { _, err := tr.Import(ctx, c, "", []byte(`memories`)); return err },
	} {
		if err := call(); !errors.Is(err, memapi.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if memorytest.Snapshot(t, s, c) != before {
			t.Fatalf("%s: a rejected request changed the state", name)
		}
	}
}

// TestExportChecksRead: an export holds what the caller may read and
// nothing else; a namespace it may not read is refused by the policy.
func TestExportChecksRead(t *testing.T) {
	s, _, alice := openTest(t, "")
	ctx := context.Background()
	bob := memorytest.Agent("bob")
	memorytest.Create(t, s, "alice", "team://core")
	shared := memorytest.Save(t, s, alice, memapi.SaveRequest{Namespace: "team://core", Content: "shared"})
	memorytest.Save(t, s, alice, memapi.SaveRequest{Content: "alice's own"})
	if _, err := transfer.Of(s).Export(ctx, bob, "team://core"); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("export of an unreadable namespace: %v", err)
	}
	memorytest.Grant(t, s, "alice", "team://core", "agent://bob", "read")
	for _, ns := range []string{"team://core", ""} {
		ex, err := transfer.Of(s).Export(ctx, bob, ns)
		if err != nil {
			t.Fatal(err)
		}
		if got := memorytest.IDs(ex.Memories); !slices.Equal(got, []string{shared.ID}) {
			t.Errorf("bob's export of %q holds %v, want only %s", ns, got, shared.ID)
		}
	}
}
