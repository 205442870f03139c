package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

const testToken = "test-token-0123456789abcdef"

// tlog sends log lines to t.Log and keeps them for assertions.
type tlog struct {
	t   *testing.T
	buf *bytes.Buffer
}

func (l tlog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return l.buf.Write(p)
}

type fixture struct {
	t   *testing.T
	h   http.Handler
	svc *memory.Service
	log *bytes.Buffer
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	// Each reading of the clock is one second later, so saves are ordered
	// in time without the test waiting.
	var mu sync.Mutex
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	dd, err := dedup.New(dedup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := badgerkv.Open(t.TempDir(), badgerkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := memory.Open(memory.Config{KV: kv, Agent: namespace.MustParse("agent://alice"), Now: clock, Features: []memory.Feature{newSurgery(t), capsule.New(), dd, projview.New(), transfer.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	buf := &bytes.Buffer{}
	cfg := Config{Service: svc, Token: testToken, Logger: slog.New(slog.NewTextHandler(tlog{t, buf}, nil))}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, h: h, svc: svc, log: buf}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) errBody(t *testing.T) ErrorDetail {
	t.Helper()
	var eb ErrorBody
	if err := json.Unmarshal(a.body, &eb); err != nil || eb.Error.Code == "" {
		t.Fatalf("want an error body, got %d %q (%v)", a.status, a.body, err)
	}
	return eb.Error
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(a.body))
	dec.DisallowUnknownFields() // the answer has exactly the documented fields
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %q: %v", a.body, err)
	}
}

// do sends a request with the right token.
func (f *fixture) do(method, path, body string) answer {
	return f.doAuth(method, path, body, "Bearer "+testToken)
}

func (f *fixture) doAuth(method, path, body, auth string) answer {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return answer{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func (f *fixture) save(body string) memapi.SaveResult {
	f.t.Helper()
	a := f.do("POST", "/v1/memories", body)
	if a.status != http.StatusCreated && a.status != http.StatusOK {
		f.t.Fatalf("save %s: %d %s", body, a.status, a.body)
	}
	var res memapi.SaveResult
	a.decode(f.t, &res)
	return res
}

func wantStatus(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d; body %s", a.status, status, a.body)
	}
	if code != "" {
		if got := a.errBody(t).Code; got != code {
			t.Fatalf("code %q, want %q; body %s", got, code, a.body)
		}
	}
	if ct := a.header.Get("Content-Type"); status != http.StatusNoContent && !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
}

func TestNewValidates(t *testing.T) {
	svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://alice")})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for name, cfg := range map[string]Config{
		"no service":     {Token: testToken},
		"no token":       {Service: svc},
		"short token":    {Service: svc, Token: "short"},
		"negative limit": {Service: svc, Token: testToken, MaxBodyBytes: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func TestHealthzNeedsNoToken(t *testing.T) {
	f := newFixture(t, nil)
	a := f.doAuth("GET", "/healthz", "", "")
	wantStatus(t, a, http.StatusOK, "")
	var body map[string]string
	a.decode(t, &body)
	if body["status"] != "ok" || len(body) != 1 {
		t.Fatalf("healthz body %s", a.body)
	}
	wantStatus(t, f.doAuth("POST", "/healthz", "", ""), http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestAuth(t *testing.T) {
	f := newFixture(t, nil)
	for name, auth := range map[string]string{
		"missing":      "",
		"wrong token":  "Bearer not-the-token-0123456789",
		"other scheme": "Basic " + testToken,
		"empty bearer": "Bearer ",
		"prefix":       "Bearer " + testToken[:len(testToken)-1],
		"longer":       "Bearer " + testToken + "x",
		"no scheme":    testToken,
	} {
		t.Run(name, func(t *testing.T) {
			for _, rt := range []struct{ method, path string }{
				{"GET", "/v1/stats"},
				{"POST", "/v1/memories"},
				{"GET", "/v1/memories/x"},
				{"PUT", "/v1/memories"}, // 401 before 405
				{"GET", "/v1/no-such"},  // 401 before 404
				{"POST", "/v1/import"},
			} {
				a := f.doAuth(rt.method, rt.path, `{"type":"decision","content":"x"}`, auth)
				wantStatus(t, a, http.StatusUnauthorized, "unauthorized")
				if a.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: 401 without WWW-Authenticate", rt.method, rt.path)
				}
			}
		})
	}
	// The right token, any case of the scheme, passes.
	wantStatus(t, f.doAuth("GET", "/v1/stats", "", "bearer "+testToken), http.StatusOK, "")
	wantStatus(t, f.doAuth("GET", "/v1/stats", "", "Bearer "+testToken), http.StatusOK, "")
	// Nothing was written by the rejected requests.
	var st memapi.Stats
	f.do("GET", "/v1/stats", "").decode(t, &st)
	if st.Memories != 0 {
		t.Fatalf("rejected requests wrote %d memories", st.Memories)
	}
}

func TestMemoryLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	a := f.do("POST", "/v1/memories", `{"type":"decision","title":"Use Badger","content":"we store in badger","tags":["db","storage"],"topic_key":"storage/engine"}`)
	wantStatus(t, a, http.StatusCreated, "")
	var created memapi.SaveResult
	a.decode(t, &created)
	if created.ID == "" || created.Upserted || created.Type != "decision" || created.Title != "Use Badger" ||
		created.Namespace != "agent://alice" || created.Author != "agent://alice" {
		t.Fatalf("created %+v", created)
	}
	if !bytes.Contains(a.body, []byte(`"upserted":false`)) {
		t.Fatalf("save answer lacks upserted:false: %s", a.body)
	}

	// Same topic key: 200 and the same id.
	a = f.do("POST", "/v1/memories", `{"type":"decision","content":"we store in badger v4","topic_key":"storage/engine"}`)
	wantStatus(t, a, http.StatusOK, "")
	var up memapi.SaveResult
	a.decode(t, &up)
	if !up.Upserted || up.ID != created.ID || up.Content != "we store in badger v4" {
		t.Fatalf("upsert %+v, want upserted id %s", up, created.ID)
	}

	a = f.do("GET", "/v1/memories/"+created.ID, "")
	wantStatus(t, a, http.StatusOK, "")
	var got memapi.Memory
	a.decode(t, &got)
	if got.ID != created.ID || got.Content != "we store in badger v4" {
		t.Fatalf("get %+v", got)
	}

	a = f.do("PATCH", "/v1/memories/"+created.ID, `{"title":"Badger it is","importance":0.9}`)
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &got)
	if got.Title != "Badger it is" || got.Importance != 0.9 {
		t.Fatalf("patched %+v", got)
	}

	a = f.do("DELETE", "/v1/memories/"+created.ID, "")
	wantStatus(t, a, http.StatusNoContent, "")
	if len(a.body) != 0 {
		t.Fatalf("204 with body %q", a.body)
	}
	wantStatus(t, f.do("GET", "/v1/memories/"+created.ID, ""), http.StatusNotFound, "not_found")
	a = f.do("GET", "/v1/memories/"+created.ID+"?include_deleted=true", "")
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &got)
	if got.DeletedAt == nil {
		t.Fatalf("soft-deleted memory without deleted_at: %s", a.body)
	}

	wantStatus(t, f.do("DELETE", "/v1/memories/"+created.ID+"?hard=true", ""), http.StatusNoContent, "")
	wantStatus(t, f.do("GET", "/v1/memories/"+created.ID+"?include_deleted=true", ""), http.StatusNotFound, "not_found")
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, nil)
	id := f.save(`{"type":"decision","content":"x"}`).ID
	for _, tc := range []struct {
		name, method, path, body string
		want                     string // in the message
	}{
		{"malformed json", "POST", "/v1/memories", `{"type":`, "malformed JSON"},
		{"syntax error", "POST", "/v1/memories", `{"type" "x"}`, "malformed JSON at byte"},
		{"unknown field", "POST", "/v1/memories", `{"type":"decision","content":"c","bogus":1}`, `"bogus"`},
		{"wrong type", "POST", "/v1/memories", `{"type":"decision","content":5}`, `field "content"`},
		{"not an object", "POST", "/v1/memories", `[1,2]`, "expected an object"},
		{"trailing data", "POST", "/v1/memories", `{"type":"decision","content":"a"} {}`, "after the JSON object"},
		{"empty body", "POST", "/v1/memories", ``, "body is empty"},
		{"service validation", "POST", "/v1/memories", `{"type":"decision"}`, "content"},
		{"bad namespace", "POST", "/v1/memories", `{"type":"decision","content":"c","namespace":"agent://"}`, "agent://"},
		{"patch unknown field", "PATCH", "/v1/memories/" + id, `{"nope":1}`, `"nope"`},
		{"limit not int", "GET", "/v1/search?q=x&limit=abc", "", `"limit"`},
		{"limit negative", "GET", "/v1/search?limit=-1", "", `"limit"`},
		{"since garbage", "GET", "/v1/search?since=garbage", "", `"since"`},
		{"until garbage", "GET", "/v1/search?until=yesterday", "", `"until"`},
		{"until before since", "GET", "/v1/search?since=2025-02-01T00:00:00Z&until=2025-01-01T00:00:00Z", "", "until"},
		{"unknown param", "GET", "/v1/search?q=x&tag=a", "", `"tag"`},
		{"repeated param", "GET", "/v1/search?q=a&q=b", "", `"q" given 2 times`},
		{"bad query string", "GET", "/v1/search?q=%zz", "", "malformed query string"},
		{"include_deleted not bool", "GET", "/v1/memories/" + id + "?include_deleted=maybe", "", `"include_deleted"`},
		{"hard not bool", "DELETE", "/v1/memories/" + id + "?hard=yes", "", `"hard"`},
		{"timeline without id", "GET", "/v1/timeline", "", `"id" is required`},
		{"timeline before", "GET", "/v1/timeline?id=" + id + "&before=abc", "", `"before"`},
		{"timeline after", "GET", "/v1/timeline?id=" + id + "&after=-2", "", `"after"`},
		{"context max_tokens", "GET", "/v1/context?max_tokens=lots", "", `"max_tokens"`},
		{"stats unknown param", "GET", "/v1/stats?ns=x", "", `"ns"`},
		{"compact empty", "POST", "/v1/compact", `{}`, ""},
		{"summary session mismatch", "POST", "/v1/sessions/s1/summary", `{"session_id":"s2","content":"c"}`, "differs"},
		{"end session unknown field", "POST", "/v1/sessions/s1/end", `{"id":"s1"}`, `"id"`},
		{"import empty", "POST", "/v1/import", ``, "body is empty"},
		{"import garbage", "POST", "/v1/import", `not json`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(tc.method, tc.path, tc.body)
			wantStatus(t, a, http.StatusBadRequest, "invalid_request")
			if msg := a.errBody(t).Message; !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q does not mention %q", msg, tc.want)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	f := newFixture(t, nil)
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/v1/memories/no-such-id", ""},
		{"PATCH", "/v1/memories/no-such-id", `{"title":"t"}`},
		{"DELETE", "/v1/memories/no-such-id", ""},
		{"GET", "/v1/timeline?id=no-such-id", ""},
		{"GET", "/v1/no-such-route", ""},
		{"GET", "/nothing-here", ""},
	} {
		wantStatus(t, f.do(rt.method, rt.path, rt.body), http.StatusNotFound, "not_found")
	}
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/v1/memories", "POST"},
		{"GET", "/v1/memories", "POST"},
		{"POST", "/v1/memories/x", "DELETE, GET, HEAD, PATCH"},
		{"DELETE", "/v1/search", "GET, HEAD"},
		{"GET", "/v1/compact", "POST"},
		{"GET", "/v1/sessions/s1/end", "POST"},
	} {
		a := f.do(tc.method, tc.path, "")
		wantStatus(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := a.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestPermissionDenied(t *testing.T) {
	f := newFixture(t, nil)
	wantStatus(t, f.do("POST", "/v1/memories", `{"type":"decision","content":"c","namespace":"team://core"}`),
		http.StatusForbidden, "permission_denied")
	wantStatus(t, f.do("GET", "/v1/stats?namespace=agent://bob", ""), http.StatusForbidden, "permission_denied")
}

func TestConflict(t *testing.T) {
	f := newFixture(t, nil)
	id := f.save(`{"type":"observation","content":"c","subject_type":"file","subject_id":"a.go"}`).ID
	wantStatus(t, f.do("PATCH", "/v1/memories/"+id, `{"subject_id":"b.go"}`), http.StatusConflict, "conflict")
}

func TestTooLarge(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxBodyBytes = 4 << 10; c.MaxImportBytes = 64 << 10 })
	big := strings.Repeat("x", 8<<10)
	a := f.do("POST", "/v1/memories", `{"type":"decision","content":"`+big+`"}`)
	wantStatus(t, a, http.StatusRequestEntityTooLarge, "too_large")
	if msg := a.errBody(t).Message; !strings.Contains(msg, "4096") {
		t.Fatalf("413 message %q does not give the limit", msg)
	}
	wantStatus(t, f.do("PATCH", "/v1/memories/x", `{"content":"`+big+`"}`), http.StatusRequestEntityTooLarge, "too_large")
	wantStatus(t, f.do("POST", "/v1/compact", `{"compact_ids":["`+big+`"]}`), http.StatusRequestEntityTooLarge, "too_large")

	// Imports have their own, larger limit: 8 KiB passes it (and fails later
	// as a bad export), 128 KiB does not.
	wantStatus(t, f.do("POST", "/v1/import", `{"format":"`+big+`"}`), http.StatusBadRequest, "invalid_request")
	huge := strings.Repeat("x", 128<<10)
	wantStatus(t, f.do("POST", "/v1/import", `{"format":"`+huge+`"}`), http.StatusRequestEntityTooLarge, "too_large")

	// The service's own limit (content over memapi.MaxContentBytes) is 413 too.
	g := newFixture(t, nil)
	content := strings.Repeat("y", memapi.MaxContentBytes+1)
	wantStatus(t, g.do("POST", "/v1/memories", `{"type":"decision","content":"`+content+`"}`), http.StatusRequestEntityTooLarge, "too_large")
}

func TestQueriesShapes(t *testing.T) {
	f := newFixture(t, nil)
	var ids []string
	for i := range 5 {
		ids = append(ids, f.save(fmt.Sprintf(`{"type":"decision","title":"badger tuning %d","content":"memtable size %d","tags":["db"],"project":"mnemo"}`, i, i)).ID)
	}
	f.save(`{"type":"observation","content":"unrelated note about lunch"}`)

	a := f.do("GET", "/v1/search?q=badger&type=decision&tags=db&project=mnemo&limit=3", "")
	wantStatus(t, a, http.StatusOK, "")
	var sr memapi.SearchResult
	a.decode(t, &sr)
	if len(sr.Results) != 3 || sr.Total != 5 {
		t.Fatalf("search: %d results, total %d; want 3 of 5: %s", len(sr.Results), sr.Total, a.body)
	}
	for _, h := range sr.Results {
		if h.Memory.Type != "decision" || h.Score <= 0 {
			t.Fatalf("hit %+v", h)
		}
	}
	// The answer is sent with its length, and is what encoding/json writes.
	if cl := a.header.Get("Content-Length"); cl != strconv.Itoa(len(a.body)) {
		t.Fatalf("Content-Length %q for %d bytes", cl, len(a.body))
	}
	if want, _ := json.Marshal(sr); string(a.body) != string(want)+"\n" {
		t.Fatalf("search answer\n%s\nwant\n%s", a.body, want)
	}
	a = f.do("GET", "/v1/search?q=nothingmatchesthis", "")
	wantStatus(t, a, http.StatusOK, "")
	if !bytes.Contains(a.body, []byte(`"results":[]`)) {
		t.Fatalf("empty search should give results:[], got %s", a.body)
	}

	a = f.do("GET", "/v1/timeline?id="+ids[2]+"&before=1&after=1", "")
	wantStatus(t, a, http.StatusOK, "")
	var tl memapi.Timeline
	a.decode(t, &tl)
	if tl.Center.ID != ids[2] || len(tl.Before) != 1 || tl.Before[0].ID != ids[1] || len(tl.After) != 1 || tl.After[0].ID != ids[3] {
		t.Fatalf("timeline %s", a.body)
	}

	a = f.do("GET", "/v1/context?max_tokens=500&project=mnemo", "")
	wantStatus(t, a, http.StatusOK, "")
	var cr memapi.ContextResult
	a.decode(t, &cr)
	if cr.MaxTokens != 500 || len(cr.Memories) == 0 || !strings.Contains(cr.Text, "badger") {
		t.Fatalf("context %s", a.body)
	}

	a = f.do("GET", "/v1/stats", "")
	wantStatus(t, a, http.StatusOK, "")
	var st memapi.Stats
	a.decode(t, &st)
	if st.Memories != 6 || st.ByType["decision"] != 5 {
		t.Fatalf("stats %s", a.body)
	}

	a = f.do("POST", "/v1/compact", `{"older_than_days":1}`)
	wantStatus(t, a, http.StatusOK, "")
	var cp memapi.CompactResult
	a.decode(t, &cp)
	if cp.Mode != "identify" {
		t.Fatalf("compact identify %s", a.body)
	}
	a = f.do("POST", "/v1/compact", `{"compact_ids":["`+ids[0]+`","`+ids[1]+`"],"summary_title":"badger","summary_content":"tuned"}`)
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &cp)
	if cp.Mode != "execute" || cp.Compacted != 2 || cp.SummaryID == "" {
		t.Fatalf("compact execute %s", a.body)
	}
	wantStatus(t, f.do("GET", "/v1/memories/"+ids[0], ""), http.StatusNotFound, "not_found")
}

func TestSessionsPromptsProgress(t *testing.T) {
	f := newFixture(t, nil)
	a := f.do("POST", "/v1/sessions", `{"id":"s1","project":"mnemo"}`)
	wantStatus(t, a, http.StatusCreated, "")
	var s memapi.Session
	a.decode(t, &s)
	if s.ID != "s1" || s.Namespace != "agent://alice" {
		t.Fatalf("session %s", a.body)
	}
	a = f.do("POST", "/v1/prompts", `{"session_id":"s1","content":"how do we store things?"}`)
	wantStatus(t, a, http.StatusCreated, "")
	var sr memapi.SaveResult
	a.decode(t, &sr)
	if sr.Type != "prompt" {
		t.Fatalf("prompt %s", a.body)
	}
	a = f.do("POST", "/v1/progress", `{"project":"mnemo","content":"step 1"}`)
	wantStatus(t, a, http.StatusCreated, "")
	a = f.do("POST", "/v1/progress", `{"project":"mnemo","content":"step 2"}`)
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &sr)
	if !sr.Upserted || sr.Content != "step 2" {
		t.Fatalf("progress upsert %s", a.body)
	}
	a = f.do("POST", "/v1/sessions/s1/summary", `{"content":"we decided on badger"}`)
	wantStatus(t, a, http.StatusCreated, "")
	a.decode(t, &sr)
	if sr.Type != "summary" || sr.SessionID != "s1" {
		t.Fatalf("summary %s", a.body)
	}
	a = f.do("POST", "/v1/sessions/s1/end", "")
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &s)
	if s.EndedAt == nil {
		t.Fatalf("ended session %s", a.body)
	}
	wantStatus(t, f.do("POST", "/v1/sessions/s1/end", `{"summary":"done"}`), http.StatusOK, "")
}

func TestExportImport(t *testing.T) {
	f := newFixture(t, nil)
	f.save(`{"type":"decision","title":"one","content":"first"}`)
	f.save(`{"type":"decision","title":"two","content":"second"}`)
	a := f.do("GET", "/v1/export", "")
	wantStatus(t, a, http.StatusOK, "")
	var ex memapi.Export
	a.decode(t, &ex)
	if ex.Format != "mnemo-export" || len(ex.Memories) != 2 {
		t.Fatalf("export %s", a.body)
	}
	g := newFixture(t, nil)
	b := g.do("POST", "/v1/import", string(a.body))
	wantStatus(t, b, http.StatusOK, "")
	var ir memapi.ImportResult
	b.decode(t, &ir)
	if ir.Memories != 2 || ir.Format != "mnemo-export" {
		t.Fatalf("import %s", b.body)
	}
	b = g.do("POST", "/v1/import", string(a.body)) // again: all skipped
	b.decode(t, &ir)
	if ir.Memories != 0 || ir.Skipped != 2 {
		t.Fatalf("re-import %s", b.body)
	}
}

func TestInternalErrorIsGeneric(t *testing.T) {
	f := newFixture(t, nil)
	f.svc.Close() // every later call fails inside the store
	a := f.do("POST", "/v1/memories", `{"type":"decision","content":"c"}`)
	wantStatus(t, a, http.StatusInternalServerError, "internal")
	if msg := a.errBody(t).Message; strings.Contains(strings.ToLower(msg), "closed") {
		t.Fatalf("500 leaks its cause: %q", msg)
	}
	if !strings.Contains(f.log.String(), "request failed") {
		t.Fatalf("500 not logged; log: %s", f.log.String())
	}
}

func TestClassify(t *testing.T) {
	var mbe error = &http.MaxBytesError{Limit: 1}
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("x: %w", memapi.ErrInvalid), 400, "invalid_request"},
		{fmt.Errorf("x: %w", namespace.ErrInvalid), 400, "invalid_request"},
		{fmt.Errorf("x: %w", memapi.ErrNotFound), 404, "not_found"},
		{fmt.Errorf("x: %w", acl.ErrDenied), 403, "permission_denied"},
		{fmt.Errorf("x: %w", memapi.ErrConflict), 409, "conflict"},
		{fmt.Errorf("x: %w", memapi.ErrTooLarge), 413, "too_large"},
		{fmt.Errorf("x: %w", mbe), 413, "too_large"},
		{fmt.Errorf("x: %w", context.Canceled), 503, "unavailable"},
		{errors.New("disk on fire"), 500, "internal"},
	} {
		status, code := classify(tc.err)
		if status != tc.status || code != tc.code {
			t.Errorf("classify(%v) = %d %s, want %d %s", tc.err, status, code, tc.status, tc.code)
		}
	}
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
