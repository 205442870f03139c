package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/memapi"
)

// withBearer adds a bearer token (and optionally a session key) to every
// request of an HTTP client.
type withBearer struct {
	token, session string
}

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.session != "" {
		r.Header.Set("X-Mnemo-Session", b.session)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// apiAs calls the API with token and a session key.
func (p *nodeProc) apiAs(method, path, token, session, body string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequestWithContext(p.t.Context(), method, p.url+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: withBearer{token, session}}).Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// mcpAs opens an MCP session over the node's /mcp as token.
func (p *nodeProc) mcpAs(token string) *mcp.ClientSession {
	p.t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := cl.Connect(p.t.Context(), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp",
		HTTPClient: &http.Client{Transport: withBearer{token: token}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		p.t.Fatalf("MCP connect: %v", err)
	}
	p.t.Cleanup(func() { cs.Close() })
	return cs
}

// toolText calls a tool and returns its text and structured content as
// one string, and whether it was a tool error.
func toolText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		sb.Write(b)
	}
	return sb.String(), res.IsError
}

// TestE2EIsolation: a token bound to agent://bob cannot read
// agent://alice's private memory by any endpoint or MCP tool, and can once
// alice grants bob read on her namespace; alice's grant, acl listing,
// namespaces and key files through the real binary and CLI.
func TestE2EIsolation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "alice")
	a := startNode(t, dir, "alice")
	const secret = "zebracorn launch codes are 0000"

	code, body := a.api("POST", "/v1/memories", a.token, fmt.Sprintf(`{"type":"decision","content":%q}`, secret))
	if code != 201 {
		t.Fatalf("save: %d %s", code, body)
	}
	var saved memapi.SaveResult
	json.Unmarshal(body, &saved)
	id := saved.ID

	// Identity and token files.
	for _, f := range []string{node.KeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v", f, err, st.Mode().Perm())
		}
	}
	bobTok := strings.TrimSpace(a.mnemo("", "token", "issue", "--principal", "agent://bob").stdout)
	if len(bobTok) < 32 {
		t.Fatalf("token issue printed %q", bobTok)
	}
	st, err := os.Stat(filepath.Join(dir, node.TokensFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("tokens.json: %v %v", err, st)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, node.TokensFile)); strings.Contains(string(b), bobTok) || !strings.Contains(string(b), "agent://bob") {
		t.Fatalf("tokens.json stores the token itself, or not its principal:\n%s", b)
	}
	if code, body := a.apiAs("POST", "/v1/tokens", bobTok, "", `{"principal":"agent://alice"}`); code != 403 || !strings.Contains(body, "permission_denied") {
		t.Fatalf("bob issued a token: %d %s", code, body)
	}

	q := url.QueryEscape
	type probe struct {
		name, method, path string
	}
	// Reads that name alice's namespace are refused with 403; reads by id
	// answer 404 (not revealing the id exists); default reads leave it out.
	named := []probe{
		{"search ns", "GET", "/v1/search?q=zebracorn&namespace=" + q("agent://alice")},
		{"context ns", "GET", "/v1/context?namespace=" + q("agent://alice")},
		{"export ns", "GET", "/v1/export?namespace=" + q("agent://alice")},
		{"stats ns", "GET", "/v1/stats?namespace=" + q("agent://alice")},
		{"acl", "GET", "/v1/grants?namespace=" + q("agent://alice")},
	}
	byID := []probe{
		{"get", "GET", "/v1/memories/" + id},
		{"timeline", "GET", "/v1/timeline?id=" + id},
	}
	defaults := []probe{
		{"search", "GET", "/v1/search?q=zebracorn"},
		{"context", "GET", "/v1/context"},
		{"export", "GET", "/v1/export"},
		{"stats", "GET", "/v1/stats"},
		{"namespaces", "GET", "/v1/namespaces"},
	}
	// The session header does not widen a bound token.
	for _, session := range []string{"", "alice", "agent:alice:main"} {
		for _, pr := range named {
			code, body := a.apiAs(pr.method, pr.path, bobTok, session, "")
			if code != 403 || !strings.Contains(body, "permission_denied") || !strings.Contains(body, "read") {
				t.Errorf("bob %s (session %q): %d %s", pr.name, session, code, body)
			}
		}
		for _, pr := range byID {
			code, body := a.apiAs(pr.method, pr.path, bobTok, session, "")
			if code != 404 || strings.Contains(body, "zebracorn") {
				t.Errorf("bob %s (session %q): %d %s", pr.name, session, code, body)
			}
		}
		for _, pr := range defaults {
			code, body := a.apiAs(pr.method, pr.path, bobTok, session, "")
			if code != 200 || strings.Contains(body, "zebracorn") || strings.Contains(body, id) || strings.Contains(body, "agent://alice") {
				t.Errorf("bob %s (session %q): %d %s", pr.name, session, code, body)
			}
		}
	}
	// Writes into alice's namespace, and verbs on her memory, are refused too.
	for _, pr := range []struct{ method, path, body string }{
		{"POST", "/v1/memories", `{"namespace":"agent://alice","content":"bob was here"}`},
		{"PATCH", "/v1/memories/" + id, `{"title":"bob was here"}`},
		{"DELETE", "/v1/memories/" + id, ""},
		{"POST", "/v1/retract", `{"id":"` + id + `"}`},
		{"POST", "/v1/share", `{"id":"` + id + `","namespace":"agent://bob"}`},
		{"POST", "/v1/grants", `{"namespace":"agent://alice","principal":"agent://bob","permissions":["read"]}`},
	} {
		if code, body := a.apiAs(pr.method, pr.path, bobTok, "", pr.body); code < 400 || code >= 500 || strings.Contains(body, "zebracorn") {
			t.Errorf("bob %s %s: %d %s", pr.method, pr.path, code, body)
		}
	}
	// MCP over /mcp with bob's token.
	bobMCP := a.mcpAs(bobTok)
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"mem_search", map[string]any{"query": "zebracorn"}},
		{"mem_search", map[string]any{"query": "zebracorn", "namespace": "agent://alice"}},
		{"mem_get_observation", map[string]any{"id": id}},
		{"mem_timeline", map[string]any{"observation_id": id}},
		{"mem_context", map[string]any{}},
		{"mem_context", map[string]any{"namespace": "agent://alice"}},
		{"mem_stats", map[string]any{}},
		{"mem_stats", map[string]any{"namespace": "agent://alice"}},
	} {
		// The secret's words other than the query, and its id where the
		// call did not name it, must not appear.
		if text, _ := toolText(t, bobMCP, call.name, call.args); strings.Contains(text, "launch codes") || strings.Contains(text, id) && call.args["id"] == nil && call.args["observation_id"] == nil {
			t.Errorf("bob's MCP %s %v: %s", call.name, call.args, text)
		}
	}
	// Bob cannot ride an MCP session the owner token opened.
	ownerMCP := a.mcpAs(a.token)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", a.url+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mem_get_observation","arguments":{"id":"`+id+`"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", ownerMCP.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := (&http.Client{Transport: withBearer{token: bobTok}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hijack, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || strings.Contains(string(hijack), "launch codes") {
		t.Errorf("bob on the owner's MCP session: %d %s", resp.StatusCode, hijack)
	}
	if text, isErr := toolText(t, ownerMCP, "mem_get_observation", map[string]any{"id": id}); isErr || !strings.Contains(text, "launch codes") {
		t.Errorf("the owner's own MCP session: %s", text)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Alice grants bob read on her namespace, through the CLI.
	out := a.mnemo("", "grant", "agent://alice", "agent://bob", "read").stdout
	if !strings.Contains(out, "agent://bob now holds read on agent://alice") {
		t.Fatalf("grant printed %q", out)
	}
	out = a.mnemo("", "acl", "agent://alice").stdout
	if !strings.Contains(out, "agent://bob") || !strings.Contains(out, "grant") {
		t.Fatalf("acl:\n%s", out)
	}
	for _, pr := range append(append(named[:4:4], byID...), defaults...) {
		code, body := a.apiAs(pr.method, pr.path, bobTok, "", "")
		if code != 200 || (pr.name != "stats" && pr.name != "stats ns" && pr.name != "namespaces" && !strings.Contains(body, "zebracorn")) ||
			(strings.HasPrefix(pr.name, "stats") || pr.name == "namespaces") && !strings.Contains(body, "agent://alice") {
			t.Errorf("after the grant, bob %s: %d %s", pr.name, code, body)
		}
	}
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"mem_search", map[string]any{"query": "zebracorn"}},
		{"mem_get_observation", map[string]any{"id": id}},
		{"mem_timeline", map[string]any{"observation_id": id}},
		{"mem_context", map[string]any{"namespace": "agent://alice"}},
	} {
		if text, isErr := toolText(t, bobMCP, call.name, call.args); isErr || !strings.Contains(text, "launch codes") {
			t.Errorf("after the grant, bob's MCP %s: %s", call.name, text)
		}
	}
	// Read is not write.
	if code, body := a.apiAs("POST", "/v1/memories", bobTok, "", `{"namespace":"agent://alice","content":"bob was here"}`); code != 403 || !strings.Contains(body, "lacks write") {
		t.Errorf("bob writes alice's namespace: %d %s", code, body)
	}
	// Revoke: isolation again.
	a.mnemo("", "revoke", "agent://alice", "agent://bob", "read")
	if code, _ := a.apiAs("GET", "/v1/memories/"+id, bobTok, "", ""); code != 404 {
		t.Errorf("after the revoke, bob get: %d", code)
	}

	// Team namespaces through the CLI: create, 409 on a second create,
	// grant, share, and a 400 naming an unknown permission.
	a.mnemo("", "ns", "create", "team://backend")
	r := cli(t, "", nil, "ns", "create", "team://backend", "--data", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("second create: %d %s", r.code, r.stderr)
	}
	if code, body := a.api("POST", "/v1/grants", a.token, `{"namespace":"team://backend","principal":"agent://bob","permissions":["fly"]}`); code != 400 || !strings.Contains(string(body), `unknown permission \"fly\"`) {
		t.Fatalf("unknown permission: %d %s", code, body)
	}
	if code, body := a.api("POST", "/v1/grants", a.token, `{"namespace":"team:/backend","principal":"agent://bob","permissions":["read"]}`); code != 400 || !strings.Contains(string(body), "team:/backend") {
		t.Fatalf("malformed address: %d %s", code, body)
	}
	a.mnemo("", "grant", "team://backend", "agent://bob", "member")
	out = a.mnemo("", "share", id, "team://backend").stdout
	if !strings.Contains(out, "shared "+id) {
		t.Fatalf("share printed %q", out)
	}
	code, sbody := a.apiAs("GET", "/v1/search?q=zebracorn", bobTok, "", "")
	if code != 200 || !strings.Contains(sbody, "team://backend") || strings.Contains(sbody, `"namespace":"agent://alice"`) {
		t.Fatalf("bob's search after the share: %d %s", code, sbody)
	}
	out = a.mnemo("", "ns", "ls").stdout
	if !strings.Contains(out, "team://backend") || !strings.Contains(out, "agent://alice") {
		t.Fatalf("ns ls:\n%s", out)
	}
}
