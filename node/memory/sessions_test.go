package memory

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestSessionsLifecycle(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	start := clk.t
	ss, err := s.StartSession(ctx, c, SessionStart{ID: "s1", Project: "mnemo", Directory: "/src/mnemo"})
	if err != nil || ss.ID != "s1" || ss.Namespace != "agent://alice" || !ss.StartedAt.Equal(start) || ss.EndedAt != nil {
		t.Fatalf("start: %+v %v", ss, err)
	}
	clk.advance(time.Hour)
	again, err := s.StartSession(ctx, c, SessionStart{ID: "s1", Project: "other"})
	if err != nil || again != ss {
		t.Fatalf("starting again changed the session: %+v %v", again, err)
	}
	end := clk.t
	ended, err := s.EndSession(ctx, c, SessionEnd{ID: "s1", Summary: "did things"})
	if err != nil || ended.EndedAt == nil || !ended.EndedAt.Equal(end) || ended.Summary != "did things" || ended.Project != "mnemo" {
		t.Fatalf("end: %+v %v", ended, err)
	}
	sub, err := s.StartSession(ctx, c, SessionStart{ID: "s2", Namespace: "subagent/w"})
	if err != nil || sub.Namespace != "agent://alice/subagent/w" {
		t.Fatalf("sub-agent session: %+v %v", sub, err)
	}
	if st, _ := s.Stats(ctx, c, ""); st.Sessions != 2 || st.Memories != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st, _ := s.Stats(ctx, c, "subagent/w"); st.Sessions != 1 {
		t.Fatalf("sub-namespace stats %+v", st)
	}

	clk.advance(time.Hour)
	sum, err := s.SessionSummary(ctx, c, SessionSummaryRequest{SessionID: "s2", Namespace: "subagent/w", Content: "wrapped up"})
	if err != nil || sum.Type != "summary" || sum.Scope != "session" || sum.Title != "Session summary: s2" ||
		sum.SessionID != "s2" || sum.Namespace != "agent://alice/subagent/w" {
		t.Fatalf("session summary: %+v %v", sum, err)
	}
	ex, _ := dump(s, c, "subagent/w")
	if len(ex.Sessions) != 1 || ex.Sessions[0].Summary != "wrapped up" || ex.Sessions[0].EndedAt == nil {
		t.Fatalf("session summary did not close the session: %+v", ex.Sessions)
	}
	// A summary for a session nobody started is still saved.
	if r, err := s.SessionSummary(ctx, c, SessionSummaryRequest{SessionID: "ghost", Title: "Ghost", Content: "x"}); err != nil || r.Title != "Ghost" {
		t.Fatalf("summary of an unknown session: %+v %v", r, err)
	}
	if _, err := s.EndSession(ctx, c, SessionEnd{ID: "ghost"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ending an unknown session: %v", err)
	}
}

func TestPromptAndProgress(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	p, err := s.SavePrompt(ctx, c, PromptRequest{SessionID: "s1", Project: "mnemo", Content: "please add tests\nfor memory"})
	if err != nil || p.Type != "prompt" || p.Scope != "session" || p.SessionID != "s1" || p.Project != "mnemo" || p.Title != "please add tests" {
		t.Fatalf("prompt: %+v %v", p, err)
	}
	a, err := s.Progress(ctx, c, ProgressRequest{Project: "mnemo", Content: "20% done"})
	if err != nil || a.Upserted || a.Type != "progress" || a.TopicKey != "progress/agent://alice/mnemo" || a.Title != "Progress: mnemo" {
		t.Fatalf("progress: %+v %v", a, err)
	}
	b, err := s.Progress(ctx, c, ProgressRequest{Project: "mnemo", Content: "60% done"})
	if err != nil || !b.Upserted || b.ID != a.ID || b.Content != "60% done" {
		t.Fatalf("progress upsert: %+v %v", b, err)
	}
	other, _ := s.Progress(ctx, c, ProgressRequest{Project: "other", Content: "started"})
	sub, _ := s.Progress(ctx, c, ProgressRequest{Namespace: "subagent/w", Project: "mnemo", Content: "sub started"})
	if other.ID == a.ID || sub.ID == a.ID || sub.TopicKey != "progress/agent://alice/subagent/w/mnemo" || sub.Namespace != "agent://alice/subagent/w" {
		t.Fatalf("progress keys: other %+v sub %+v", other, sub)
	}
	if ProgressKey(c.Principal, "x") != "progress/agent://alice/x" {
		t.Fatal(ProgressKey(c.Principal, "x"))
	}
}

func TestStats(t *testing.T) {
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	first := clk.t
	mustSave(t, s, c, SaveRequest{Type: "fact", Content: "one", Project: "b"})
	clk.advance(time.Hour)
	mustSave(t, s, c, SaveRequest{Type: "fact", Content: "two", Project: "a", Namespace: "subagent/x"})
	clk.advance(time.Hour)
	gone := mustSave(t, s, c, SaveRequest{Type: "note", Content: "three", Project: "c"})
	last := clk.t
	if err := s.Delete(ctx, c, gone.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSession(ctx, c, SessionStart{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Memories != 2 || st.Deleted != 1 || st.Sessions != 1 || st.ByType["fact"] != 2 || st.ByType["note"] != 0 ||
		st.ByNamespace["agent://alice"] != 1 || st.ByNamespace["agent://alice/subagent/x"] != 1 ||
		!slices.Equal(st.Projects, []string{"a", "b"}) || !st.Oldest.Equal(first) || !st.Newest.Equal(first.Add(time.Hour)) {
		t.Fatalf("stats %+v (last %v)", st, last)
	}
	sub, _ := s.Stats(ctx, c, "subagent/x")
	if sub.Memories != 1 || sub.Sessions != 0 {
		t.Fatalf("sub-namespace stats %+v", sub)
	}
	bob := Caller{Principal: c.Principal}
	bob.Principal.Name = "bob"
	if other, _ := s.Stats(ctx, bob, ""); other.Memories != 0 || other.Sessions != 0 {
		t.Fatalf("bob sees alice's stats: %+v", other)
	}
}
