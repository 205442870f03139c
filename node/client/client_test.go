package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/httpapi"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

const token = "client-test-token-0123456789"

func newClient(t *testing.T) *client.Client {
	t.Helper()
	return newClientWith(t, transfer.New())
}

// newClientWith serves a node of agent://alice with the given features.
func newClientWith(t *testing.T, features ...memory.Feature) *client.Client {
	t.Helper()
	var mu sync.Mutex
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	kv, err := badgerkv.Open(t.TempDir(), badgerkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := memory.Open(memory.Config{
		KV:       kv,
		Agent:    namespace.MustParse("agent://alice"),
		Features: features,
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Second)
			return now
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	h, err := httpapi.New(httpapi.Config{Service: svc, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL+"/", token) // a trailing slash is tolerated
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:7070", "ftp://x", "http://"} {
		if _, err := client.New(u, token); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	imp := 0.9
	var ids []string
	for _, title := range []string{"badger tuning", "badger memtables", "lunch"} {
		res, err := c.Save(ctx, memapi.SaveRequest{Type: "decision", Title: title, Content: title + " notes",
			Tags: []string{"db"}, Project: "mnemo", Importance: &imp})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	sr, err := c.Search(ctx, memapi.SearchQuery{Query: "badger", Filter: memapi.Filter{
		Type: "decision", Tags: []string{"db"}, Project: "mnemo",
		Since: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}, Limit: 5})
	if err != nil || sr.Total != 2 || len(sr.Results) != 2 {
		t.Fatalf("search: %+v, %v", sr, err)
	}
	tl, err := c.Timeline(ctx, memapi.TimelineQuery{ID: ids[1], Before: 1, After: 1})
	if err != nil || tl.Center.ID != ids[1] || len(tl.Before) != 1 || len(tl.After) != 1 {
		t.Fatalf("timeline: %+v, %v", tl, err)
	}
	cr, err := c.Context(ctx, memapi.ContextQuery{MaxTokens: 300})
	if err != nil || cr.MaxTokens != 300 {
		t.Fatalf("context: %+v, %v", cr, err)
	}
	title := "renamed"
	m, err := c.Update(ctx, ids[2], memapi.UpdateRequest{Title: &title})
	if err != nil || m.Title != "renamed" {
		t.Fatalf("update: %+v, %v", m, err)
	}
	if err := c.Delete(ctx, ids[2], false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, ids[2], false); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("get deleted: %v, want memapi.ErrNotFound", err)
	}
	if m, err := c.Get(ctx, ids[2], true); err != nil || m.DeletedAt == nil {
		t.Fatalf("get include deleted: %+v, %v", m, err)
	}
	st, err := c.Stats(ctx, "")
	if err != nil || st.Memories != 2 || st.Deleted != 1 {
		t.Fatalf("stats: %+v, %v", st, err)
	}
	cp, err := c.Compact(ctx, memapi.CompactRequest{CompactIDs: ids[:2], SummaryTitle: "badger", SummaryContent: "tuned"})
	if err != nil || cp.Compacted != 2 {
		t.Fatalf("compact: %+v, %v", cp, err)
	}
	if _, err := c.StartSession(ctx, memapi.SessionStart{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SavePrompt(ctx, memapi.PromptRequest{SessionID: "s1", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Progress(ctx, memapi.ProgressRequest{Project: "mnemo", Content: "half way"}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.SessionSummary(ctx, memapi.SessionSummaryRequest{SessionID: "s1", Content: "done"}); err != nil || r.SessionID != "s1" {
		t.Fatalf("summary: %+v, %v", r, err)
	}
	if s, err := c.EndSession(ctx, memapi.SessionEnd{ID: "s1", Summary: "bye"}); err != nil || s.EndedAt == nil {
		t.Fatalf("end: %+v, %v", s, err)
	}
	ex, err := c.Export(ctx, "")
	if err != nil || ex.Format != "mnemo-export" || len(ex.Memories) == 0 {
		t.Fatalf("export: %+v, %v", ex, err)
	}

	c2 := newClient(t)
	raw, err := c.Raw(ctx, "GET", "/v1/export", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ir, err := c2.Import(ctx, raw, memapi.ImportOptions{})
	if err != nil || ir.Memories != len(ex.Memories) {
		t.Fatalf("import: %+v, %v (exported %d)", ir, err, len(ex.Memories))
	}
}

func TestErrorsUnwrap(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	_, err := c.Save(ctx, memapi.SaveRequest{Type: "decision"})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != "invalid_request" || !errors.Is(err, memapi.ErrInvalid) {
		t.Fatalf("save without content: %#v", err)
	}
	if _, err := c.Save(ctx, memapi.SaveRequest{Type: "decision", Content: "x", Namespace: "team://core"}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("save to team: %v, want acl.ErrDenied", err)
	}
	if _, err := c.Save(ctx, memapi.SaveRequest{Type: "decision", Content: strings.Repeat("x", memapi.MaxContentBytes+1)}); !errors.Is(err, memapi.ErrTooLarge) {
		t.Fatalf("huge save: %v, want memapi.ErrTooLarge", err)
	}
	res, err := c.Save(ctx, memapi.SaveRequest{Type: "observation", Content: "c", SubjectType: "file", SubjectID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	other := "b"
	if _, err := c.Update(ctx, res.ID, memapi.UpdateRequest{SubjectID: &other}); !errors.Is(err, memapi.ErrConflict) {
		t.Fatalf("subject change: %v, want memapi.ErrConflict", err)
	}

	bad, _ := client.New(c.URL(), "wrong-token-0123456789")
	if _, err := bad.Stats(ctx, ""); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Code != "unauthorized" {
		t.Fatalf("wrong token: %v", err)
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	dead, _ := client.New(srv.URL, token)
	srv.Close()
	if err := dead.Health(ctx); !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("closed server: %v, want ErrUnreachable", err)
	}
}
