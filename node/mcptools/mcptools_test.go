package mcptools_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

var allTools = []string{
	"mem_save", "mem_update", "mem_delete", "mem_search", "mem_context", "mem_timeline",
	"mem_get_observation", "mem_suggest_topic_key", "mem_save_prompt", "mem_session_start",
	"mem_session_end", "mem_session_summary", "mem_stats", "mem_compact", "mem_progress",
	"mem_share", "mem_promote",
	"mem_edit", "mem_approve", "mem_audit",
	"mem_capsule_create", "mem_capsules", "mem_capsule_get", "mem_capsule_revoke", "mem_build_context",
	"mem_duplicates", "mem_merge_duplicates",
}

// fakeClock is the Service's wall clock, moved by the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openService(t *testing.T, clk *fakeClock) *memory.Service {
	t.Helper()
	svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://t"), Now: clk.Now, Features: []memory.Feature{newSurgery(t), capsule.New()}})
	if err != nil {
		t.Fatalf("memory.Open: %v", err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// connect serves mcptools.NewServer over an in-memory transport and returns a
// client session of the official Go SDK.
func connect(t *testing.T, b mcptools.Backend) *mcp.ClientSession {
	t.Helper()
	ctx := t.Context()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcptools.NewServer(b, mcptools.Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newSession(t *testing.T) (*mcp.ClientSession, *fakeClock) {
	clk := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	svc := openService(t, clk)
	return connect(t, mcpservice.New(svc, memapi.Caller{Principal: svc.Owner()})), clk
}

// call invokes a tool; wantErr says whether the result must be a tool error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, wantErr bool) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", name, args, err)
	}
	if res.IsError != wantErr {
		t.Fatalf("%s(%v): IsError=%v, want %v: %s", name, args, res.IsError, wantErr, textOf(res))
	}
	return res
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// out decodes the structured content into v.
func out[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not contain %q", what, got, w)
		}
	}
}

func TestListTools(t *testing.T) {
	cs, _ := newSession(t)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too thin for a model: %q", tool.Name, tool.Description)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = s
	}
	var names []string
	for n := range schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	want := slices.Clone(allTools)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	for _, tc := range []struct {
		tool     string
		required []string
	}{
		{"mem_save", []string{"content"}},
		{"mem_update", []string{"id"}},
		{"mem_delete", []string{"id"}},
		{"mem_search", []string{"query"}},
		{"mem_timeline", []string{"observation_id"}},
		{"mem_get_observation", []string{"id"}},
		{"mem_save_prompt", []string{"content"}},
		{"mem_session_start", []string{"id"}},
		{"mem_session_end", []string{"id"}},
		{"mem_session_summary", []string{"content"}},
		{"mem_progress", []string{"project", "content"}},
		{"mem_compact", nil},
		{"mem_stats", nil},
		{"mem_context", nil},
	} {
		s := schemas[tc.tool]
		var got []string
		if r, ok := s["required"].([]any); ok {
			for _, x := range r {
				got = append(got, x.(string))
			}
		}
		slices.Sort(got)
		slices.Sort(tc.required)
		if !slices.Equal(got, tc.required) {
			t.Errorf("%s: required = %v, want %v", tc.tool, got, tc.required)
		}
	}
	prop := func(tool, name string) map[string]any {
		p, _ := schemas[tool]["properties"].(map[string]any)[name].(map[string]any)
		if p == nil {
			t.Fatalf("%s has no property %s", tool, name)
		}
		if d, _ := p["description"].(string); d == "" {
			t.Errorf("%s.%s has no description", tool, name)
		}
		return p
	}
	typeOf := func(tool, name string) string {
		b, _ := json.Marshal(prop(tool, name)["type"])
		return string(b)
	}
	for _, tc := range []struct{ tool, prop, typ string }{
		{"mem_save", "title", `"string"`},
		{"mem_save", "importance", `["null","number"]`},
		{"mem_save", "tags", `["null","array"]`},
		{"mem_search", "limit", `"integer"`},
		{"mem_timeline", "before", `"integer"`},
		{"mem_delete", "hard_delete", `"boolean"`},
		{"mem_compact", "older_than_days", `"integer"`},
		{"mem_compact", "compact_ids", `["array","string"]`},
	} {
		if got := typeOf(tc.tool, tc.prop); got != tc.typ {
			t.Errorf("%s.%s type = %s, want %s", tc.tool, tc.prop, got, tc.typ)
		}
	}
	for _, tool := range []string{"mem_save", "mem_search", "mem_context", "mem_timeline", "mem_compact", "mem_save_prompt", "mem_session_summary", "mem_progress", "mem_stats", "mem_session_start"} {
		prop(tool, "namespace")
	}
}

func TestInitializeInstructions(t *testing.T) {
	cs, _ := newSession(t)
	ir := cs.InitializeResult()
	mustContain(t, "instructions", ir.Instructions, "mem_save", "mem_search", "namespace", "compact_ids", "summary_content")
	if ir.ServerInfo.Name != "mnemo" {
		t.Errorf("server name %q", ir.ServerInfo.Name)
	}
}

func TestRoundTrip(t *testing.T) {
	cs, clk := newSession(t)

	// Two old memories, one fresh; a sub-agent's memory under its namespace.
	res := call(t, cs, "mem_save", map[string]any{"title": "Chose Badger for storage", "type": "decision",
		"content": "Badger gives us an embedded LSM with transactions; sqlite was too slow for deltas.",
		"project": "mnemo", "tags": []string{"storage"}}, false)
	old1 := out[memapi.SaveResult](t, res)
	mustContain(t, "save text", textOf(res), "Saved memory "+old1.ID, "(decision)", "agent://t")
	if old1.Type != "decision" || old1.Namespace != "agent://t" || old1.Upserted {
		t.Fatalf("saved %+v", old1)
	}
	clk.Advance(time.Minute)
	old2 := out[memapi.SaveResult](t, call(t, cs, "mem_save", map[string]any{"title": "Badger value log GC",
		"content": "Run value log GC hourly; badger files grow otherwise.", "project": "mnemo"}, false))
	if old2.Type != "observation" {
		t.Errorf("default type = %q, want observation", old2.Type)
	}
	clk.Advance(40 * 24 * time.Hour)
	sub := out[memapi.SaveResult](t, call(t, cs, "mem_save", map[string]any{"title": "Sub-agent found a flaky test",
		"content": "The badger reopen test is flaky under -race.", "project": "mnemo", "namespace": "subagent/task-1"}, false))
	if sub.Namespace != "agent://t/subagent/task-1" {
		t.Errorf("sub-agent namespace = %q", sub.Namespace)
	}

	// Search: numbered hits with ids, scores and snippets.
	res = call(t, cs, "mem_search", map[string]any{"query": "badger", "project": "mnemo"}, false)
	sr := out[memapi.SearchResult](t, res)
	if len(sr.Results) != 3 {
		t.Fatalf("search found %d, want 3: %s", len(sr.Results), textOf(res))
	}
	mustContain(t, "search text", textOf(res), "1. ["+sr.Results[0].Memory.ID+"]", "score", "mem_get_observation")
	// Namespace scoping: only the sub-agent's memory.
	sr = out[memapi.SearchResult](t, call(t, cs, "mem_search", map[string]any{"query": "badger", "namespace": "subagent/task-1"}, false))
	if len(sr.Results) != 1 || sr.Results[0].Memory.ID != sub.ID {
		t.Errorf("namespaced search = %+v", sr.Results)
	}

	// Get, update, timeline, context, stats, topic key, progress.
	res = call(t, cs, "mem_get_observation", map[string]any{"id": old1.ID}, false)
	mustContain(t, "get text", textOf(res), "Chose Badger for storage", "sqlite was too slow", "id: "+old1.ID)
	res = call(t, cs, "mem_update", map[string]any{"id": old1.ID, "tags": []string{"storage", "db"}}, false)
	if m := out[memapi.Memory](t, res); !slices.Equal(m.Tags, []string{"db", "storage"}) && !slices.Equal(m.Tags, []string{"storage", "db"}) {
		t.Errorf("updated tags = %v", m.Tags)
	}
	res = call(t, cs, "mem_timeline", map[string]any{"observation_id": old2.ID, "before": 1, "after": 1}, false)
	tl := out[memapi.Timeline](t, res)
	if tl.Center.ID != old2.ID || len(tl.Before) != 1 || tl.Before[0].ID != old1.ID || len(tl.After) != 1 {
		t.Errorf("timeline = %s", textOf(res))
	}
	mustContain(t, "timeline text", textOf(res), ">> ", old2.ID)
	res = call(t, cs, "mem_context", map[string]any{"project": "mnemo"}, false)
	mustContain(t, "context text", textOf(res), "Badger", "tokens")
	res = call(t, cs, "mem_stats", map[string]any{}, false)
	if st := out[memapi.Stats](t, res); st.Memories != 3 {
		t.Errorf("stats = %+v", st)
	}
	mustContain(t, "stats text", textOf(res), "3 live memories")
	res = call(t, cs, "mem_suggest_topic_key", map[string]any{"type": "architecture", "title": "Auth model"}, false)
	type suggestResult struct {
		TopicKey string `json:"topic_key"`
	}
	if k := out[suggestResult](t, res).TopicKey; k == "" {
		t.Error("empty topic key")
	}
	p1 := out[memapi.SaveResult](t, call(t, cs, "mem_progress", map[string]any{"project": "mnemo", "content": "step 1 done"}, false))
	p2 := out[memapi.SaveResult](t, call(t, cs, "mem_progress", map[string]any{"project": "mnemo", "content": "step 2 done"}, false))
	if p1.ID != p2.ID || !p2.Upserted || !strings.HasPrefix(p2.TopicKey, "progress/") {
		t.Errorf("progress not upserted: %+v then %+v", p1, p2)
	}

	// Sessions and prompts.
	call(t, cs, "mem_session_start", map[string]any{"id": "s1", "project": "mnemo", "directory": "/src/mnemo"}, false)
	call(t, cs, "mem_save_prompt", map[string]any{"content": "please make storage faster", "session_id": "s1", "project": "mnemo"}, false)
	sum := out[memapi.SaveResult](t, call(t, cs, "mem_session_summary", map[string]any{"content": "Tuned badger.", "session_id": "s1", "project": "mnemo"}, false))
	if sum.Type != "summary" {
		t.Errorf("session summary type %q", sum.Type)
	}
	if se := out[memapi.Session](t, call(t, cs, "mem_session_end", map[string]any{"id": "s1", "summary": "done"}, false)); se.EndedAt == nil {
		t.Errorf("session not ended: %+v", se)
	}

	// Compaction: identify, then execute with compact_ids as engram's JSON string.
	res = call(t, cs, "mem_compact", map[string]any{"older_than_days": 30, "project": "mnemo"}, false)
	cr := out[memapi.CompactResult](t, res)
	if cr.Mode != "identify" || len(cr.Candidates) != 2 {
		t.Fatalf("identify = %s", textOf(res))
	}
	mustContain(t, "identify text", textOf(res), old1.ID, old2.ID, "Nothing was changed", "compact_ids")
	ids, _ := json.Marshal([]string{old1.ID, old2.ID})
	res = call(t, cs, "mem_compact", map[string]any{"compact_ids": string(ids), "project": "mnemo",
		"summary_title": "Badger notes", "summary_content": "Badger chosen; run value log GC hourly."}, false)
	cr = out[memapi.CompactResult](t, res)
	if cr.Mode != "execute" || cr.Compacted != 2 || cr.SummaryID == "" {
		t.Fatalf("execute = %s", textOf(res))
	}
	mustContain(t, "execute text", textOf(res), "Compacted 2 memories", cr.SummaryID)
	if m := out[memapi.Memory](t, call(t, cs, "mem_get_observation", map[string]any{"id": cr.SummaryID}, false)); m.Type != "compaction_summary" {
		t.Errorf("summary type %q", m.Type)
	}
	sr = out[memapi.SearchResult](t, call(t, cs, "mem_search", map[string]any{"query": "badger", "type": "decision"}, false))
	if len(sr.Results) != 0 {
		t.Errorf("compacted memory still found: %+v", sr.Results)
	}

	// Delete: soft, then hard.
	call(t, cs, "mem_delete", map[string]any{"id": sub.ID}, false)
	call(t, cs, "mem_get_observation", map[string]any{"id": sub.ID}, true)
	call(t, cs, "mem_get_observation", map[string]any{"id": sub.ID, "include_deleted": true}, false)
	res = call(t, cs, "mem_delete", map[string]any{"id": sub.ID, "hard_delete": true}, false)
	mustContain(t, "retract text", textOf(res), "Retracted")
	call(t, cs, "mem_get_observation", map[string]any{"id": sub.ID, "include_deleted": true}, true)
}

func TestToolErrors(t *testing.T) {
	cs, _ := newSession(t)
	id := out[memapi.SaveResult](t, call(t, cs, "mem_save", map[string]any{"content": "something"}, false)).ID
	for _, tc := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"mem_compact", map[string]any{"older_than_days": 0}, []string{"older_than_days must be > 0"}},
		{"mem_compact", map[string]any{}, []string{"older_than_days must be > 0"}},
		{"mem_compact", map[string]any{"compact_ids": "[]"}, []string{"compact_ids is empty"}},
		{"mem_compact", map[string]any{"compact_ids": []string{}}, []string{"compact_ids is empty"}},
		{"mem_compact", map[string]any{"compact_ids": "1,2,3"}, []string{"compact_ids must be an array"}},
		{"mem_compact", map[string]any{"compact_ids": []string{id}, "summary_content": "x"}, []string{"summary_title"}},
		{"mem_compact", map[string]any{"older_than_days": 3, "summary_title": "x"}, []string{"execute mode"}},
		{"mem_compact", map[string]any{"compact_ids": []string{"nope"}}, []string{"nope"}},
		{"mem_get_observation", map[string]any{"id": "01NOSUCHID"}, []string{"not found", "ids are strings"}},
		{"mem_get_observation", map[string]any{}, []string{"id"}},
		{"mem_get_observation", map[string]any{"id": 42}, []string{"id"}},
		{"mem_save", map[string]any{"title": "no content"}, []string{"content"}},
		{"mem_save", map[string]any{"content": "x", "bogus": 1}, []string{"bogus"}},
		{"mem_save", map[string]any{"content": "x", "importance": 7}, []string{"importance"}},
		{"mem_save", map[string]any{"content": "x", "namespace": "team://"}, []string{"namespace"}},
		{"mem_save", map[string]any{"content": "x", "namespace": "agent://someone-else"}, []string{"permission denied"}},
		{"mem_search", map[string]any{"query": "x", "since": "yesterday"}, []string{"since", "YYYY-MM-DD"}},
		{"mem_update", map[string]any{"id": id}, []string{"nothing to change"}},
		{"mem_update", map[string]any{"id": "01NOSUCHID", "title": "t"}, []string{"not found"}},
		{"mem_delete", map[string]any{"id": "01NOSUCHID"}, []string{"not found"}},
		{"mem_timeline", map[string]any{"observation_id": "01NOSUCHID"}, []string{"not found"}},
		{"mem_suggest_topic_key", map[string]any{"type": "decision"}, []string{"title"}},
		{"mem_progress", map[string]any{"content": "x"}, []string{"project"}},
		{"mem_session_end", map[string]any{"id": "never-started"}, []string{"not found"}},
	} {
		res := call(t, cs, tc.tool, tc.args, true)
		mustContain(t, tc.tool, textOf(res), tc.want...)
	}
	// The session survives every error.
	call(t, cs, "mem_get_observation", map[string]any{"id": id}, false)
}

func TestHTTPHandler(t *testing.T) {
	clk := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	svc := openService(t, clk)
	var asked int
	var mu sync.Mutex
	h, err := mcptools.NewHTTPHandler(func(r *http.Request) (mcptools.Backend, string) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if r.Header.Get("X-Test-Deny") != "" {
			return nil, ""
		}
		return mcpservice.New(svc, memapi.Caller{Principal: svc.Owner()}), svc.Owner().String()
	}, mcptools.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	ctx := t.Context()
	cl := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	saved := out[memapi.SaveResult](t, call(t, cs, "mem_save", map[string]any{"content": "HTTP transport works for quokkas"}, false))
	sr := out[memapi.SearchResult](t, call(t, cs, "mem_search", map[string]any{"query": "quokkas"}, false))
	if len(sr.Results) != 1 || sr.Results[0].Memory.ID != saved.ID {
		t.Fatalf("search over HTTP = %+v", sr)
	}
	call(t, cs, "mem_compact", map[string]any{"older_than_days": 0}, true)
	mu.Lock()
	if asked == 0 {
		t.Error("getBackend never asked")
	}
	mu.Unlock()

	// A refused backend refuses the session.
	denied := &http.Client{Transport: headerRT{http.DefaultTransport, "X-Test-Deny", "1"}}
	if _, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: denied, MaxRetries: -1, DisableStandaloneSSE: true}, nil); err == nil {
		t.Error("session opened although getBackend returned nil")
	}
}

type headerRT struct {
	rt   http.RoundTripper
	k, v string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return h.rt.RoundTrip(r)
}

// newSurgery is the surgery feature without approval rules.
func newSurgery(t testing.TB) *surgery.Surgery {
	t.Helper()
	s, err := surgery.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
