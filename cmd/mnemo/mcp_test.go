package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node"
)

// mcpBinary is the binary TestMain built (e2e_test.go); the MCP tests
// drive it as an MCP client would.
func mcpBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the binary")
	}
	if binPath == "" {
		t.Fatal("no binary built")
	}
	return binPath
}

// mcpStderr collects a child's stderr for failure messages.
type mcpStderr struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *mcpStderr) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *mcpStderr) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mcpEnv keeps the child away from the user's MNEMO_* settings and ~/.mnemo.
func mcpEnv(t *testing.T) []string {
	env := []string{"HOME=" + t.TempDir()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MNEMO_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

type mcpProc struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *mcpStderr
	closed bool
}

// startMCP runs `mnemo mcp --data dir --agent agent` and connects the
// official Go SDK client to its stdio.
func startMCP(t *testing.T, bin, dir, agent string) *mcpProc {
	t.Helper()
	p := &mcpProc{stderr: &mcpStderr{}}
	p.cmd = exec.Command(bin, "mcp", "--data", dir, "--agent", agent)
	p.cmd.Stderr = p.stderr
	p.cmd.Env = mcpEnv(t)
	cl := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	cs, err := cl.Connect(t.Context(), &mcp.CommandTransport{Command: p.cmd}, nil)
	if err != nil {
		t.Fatalf("connect to mnemo mcp: %v\nstderr:\n%s", err, p.stderr)
	}
	p.cs = cs
	t.Cleanup(func() {
		if !p.closed {
			p.cs.Close()
		}
		if t.Failed() {
			t.Logf("stderr of mnemo mcp --agent %s:\n%s", agent, p.stderr)
		}
	})
	return p
}

// close ends the session by closing stdin; the process must exit cleanly.
func (p *mcpProc) close(t *testing.T) {
	t.Helper()
	p.closed = true
	if err := p.cs.Close(); err != nil {
		t.Fatalf("mnemo mcp did not exit cleanly: %v\nstderr:\n%s", err, p.stderr)
	}
}

func (p *mcpProc) call(t *testing.T, name string, args map[string]any, wantErr bool) *mcp.CallToolResult {
	t.Helper()
	res, err := p.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if res.IsError != wantErr {
		t.Fatalf("%s(%v): IsError=%v, want %v: %s", name, args, res.IsError, wantErr, resultText(res))
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func wantText(t *testing.T, res *mcp.CallToolResult, subs ...string) {
	t.Helper()
	txt := resultText(res)
	for _, s := range subs {
		if !strings.Contains(txt, s) {
			t.Errorf("result %q does not contain %q", txt, s)
		}
	}
}

func TestMCPStdio(t *testing.T) {
	bin := mcpBinary(t)
	dir := t.TempDir()
	p := startMCP(t, bin, dir, "t")

	if ins := p.cs.InitializeResult().Instructions; !strings.Contains(ins, "mem_compact") || !strings.Contains(ins, "namespace") {
		t.Errorf("instructions: %q", ins)
	}
	lt, err := p.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tool := range lt.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var s map[string]any
		json.Unmarshal(b, &s)
		schemas[tool.Name] = s
	}
	for _, name := range []string{"mem_save", "mem_update", "mem_delete", "mem_search", "mem_context",
		"mem_timeline", "mem_get_observation", "mem_suggest_topic_key", "mem_save_prompt",
		"mem_session_start", "mem_session_end", "mem_session_summary", "mem_stats", "mem_compact", "mem_progress",
		"mem_share", "mem_promote", "mem_edit", "mem_approve", "mem_audit",
		"mem_capsule_create", "mem_capsules", "mem_capsule_get", "mem_capsule_revoke", "mem_build_context",
		"mem_duplicates", "mem_merge_duplicates"} {
		if schemas[name] == nil {
			t.Errorf("tool %s missing", name)
		}
	}
	if len(schemas) != 27 {
		t.Errorf("%d tools, want 27", len(schemas))
	}
	required := func(tool string) []string {
		var out []string
		for _, r := range schemas[tool]["required"].([]any) {
			out = append(out, r.(string))
		}
		slices.Sort(out)
		return out
	}
	if got := required("mem_save"); !slices.Equal(got, []string{"content"}) {
		t.Errorf("mem_save required %v", got)
	}
	if got := required("mem_timeline"); !slices.Equal(got, []string{"observation_id"}) {
		t.Errorf("mem_timeline required %v", got)
	}
	if got := required("mem_progress"); !slices.Equal(got, []string{"content", "project"}) {
		t.Errorf("mem_progress required %v", got)
	}
	propType := func(tool, prop string) string {
		b, _ := json.Marshal(schemas[tool]["properties"].(map[string]any)[prop].(map[string]any)["type"])
		return string(b)
	}
	if got := propType("mem_search", "limit"); got != `"integer"` {
		t.Errorf("mem_search.limit type %s", got)
	}
	if got := propType("mem_compact", "compact_ids"); got != `["array","string"]` {
		t.Errorf("mem_compact.compact_ids type %s", got)
	}

	// Every tool, once.
	res := p.call(t, "mem_save", map[string]any{"title": "Use quokka ids", "type": "decision",
		"content": "Quokka ids sort by time.", "project": "demo", "topic_key": "arch/ids"}, false)
	wantText(t, res, "Saved memory", "(decision)", "agent://t")
	id := structured(t, res)["id"].(string)
	res = p.call(t, "mem_save", map[string]any{"title": "Use quokka ids v2", "type": "decision",
		"content": "Quokka ids sort by time, and are strings.", "project": "demo", "topic_key": "arch/ids"}, false)
	if structured(t, res)["id"] != id || structured(t, res)["upserted"] != true {
		t.Errorf("topic key save did not upsert: %s", resultText(res))
	}
	second := structured(t, p.call(t, "mem_save", map[string]any{"content": "Second quokka note", "project": "demo"}, false))["id"].(string)
	res = p.call(t, "mem_search", map[string]any{"query": "quokka", "limit": 5}, false)
	wantText(t, res, "1. [", "score", id, second)
	res = p.call(t, "mem_get_observation", map[string]any{"id": id}, false)
	wantText(t, res, "Quokka ids sort by time, and are strings.", "topic_key: arch/ids")
	// Both saves may fall in one millisecond, so the first can sit on either side.
	res = p.call(t, "mem_timeline", map[string]any{"observation_id": second, "before": 2, "after": 2}, false)
	wantText(t, res, ">> ", second, id)
	p.call(t, "mem_update", map[string]any{"id": second, "title": "Second note"}, false)
	wantText(t, p.call(t, "mem_context", map[string]any{"project": "demo", "max_tokens": 500}, false), "quokka")
	wantText(t, p.call(t, "mem_stats", nil, false), "2 live memories")
	wantText(t, p.call(t, "mem_suggest_topic_key", map[string]any{"type": "decision", "title": "Id format"}, false), "topic_key")
	p.call(t, "mem_session_start", map[string]any{"id": "s1", "project": "demo", "directory": dir}, false)
	p.call(t, "mem_save_prompt", map[string]any{"content": "make ids sortable", "session_id": "s1"}, false)
	p.call(t, "mem_session_summary", map[string]any{"content": "Decided on quokka ids.", "session_id": "s1", "project": "demo"}, false)
	p.call(t, "mem_session_end", map[string]any{"id": "s1", "summary": "done"}, false)
	wantText(t, p.call(t, "mem_progress", map[string]any{"project": "demo", "content": "ids done", "namespace": "sub/a"}, false), "agent://t/sub/a")
	wantText(t, p.call(t, "mem_compact", map[string]any{"older_than_days": 1}, false), "No live memories older than 1 days")
	res = p.call(t, "mem_compact", map[string]any{"compact_ids": []string{second}, "summary_title": "Quokka notes", "summary_content": "Quokka ids sort by time."}, false)
	wantText(t, res, "Compacted 1 memories into summary")
	p.call(t, "mem_delete", map[string]any{"id": id, "hard_delete": true}, false)

	// Errors come back as tool errors the model can act on, and the server lives on.
	wantText(t, p.call(t, "mem_compact", map[string]any{"older_than_days": 0}, true), "older_than_days must be > 0")
	wantText(t, p.call(t, "mem_get_observation", map[string]any{"id": "01NOSUCHID"}, true), "not found")
	wantText(t, p.call(t, "mem_get_observation", map[string]any{"id": id}, true), "not found")
	wantText(t, p.call(t, "mem_save", map[string]any{"title": "no content"}, true), "content")
	p.call(t, "mem_stats", nil, false)

	if _, err := node.ReadInfo(dir); err != nil {
		t.Errorf("in-process node published no node.json: %v", err)
	}
	p.close(t)
	if _, err := node.ReadInfo(dir); err == nil {
		t.Error("node.json left behind after a clean exit")
	}
}

// Two agents on one data directory: the second attaches to the node the
// first runs, both see each other's memories, and when the first exits the
// second takes the directory over.
func TestMCPTwoProcessesShareDir(t *testing.T) {
	bin := mcpBinary(t)
	dir := t.TempDir()
	a := startMCP(t, bin, dir, "t")
	b := startMCP(t, bin, dir, "t")
	info, err := node.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.PID != a.cmd.Process.Pid {
		t.Fatalf("node.json pid %d, want the first process %d", info.PID, a.cmd.Process.Pid)
	}
	if !strings.Contains(b.stderr.String(), "attached") {
		t.Errorf("second process did not attach; stderr:\n%s", b.stderr)
	}

	idA := structured(t, a.call(t, "mem_save", map[string]any{"content": "saved through A about wombats"}, false))["id"].(string)
	wantText(t, b.call(t, "mem_search", map[string]any{"query": "wombats"}, false), idA)
	idB := structured(t, b.call(t, "mem_save", map[string]any{"content": "saved through B about numbats"}, false))["id"].(string)
	wantText(t, a.call(t, "mem_search", map[string]any{"query": "numbats"}, false), idB)
	wantText(t, b.call(t, "mem_get_observation", map[string]any{"id": "01NOSUCHID"}, true), "not found")

	// A runs the node: its stdio tool calls count in the node's metrics as
	// /mcp's do; B's reach the node as HTTP requests, counted by route.
	tok, err := node.ReadToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	metrics := scrapeText(t, info.HTTP, tok)
	for _, series := range []string{
		`mnemo_mcp_tool_call_duration_seconds_count{outcome="ok",tool="mem_save"}`,
		`mnemo_mcp_tool_call_duration_seconds_count{outcome="ok",tool="mem_search"}`,
		`mnemo_http_request_duration_seconds_count{code="200",route="GET /v1/search"}`,
		`mnemo_http_request_duration_seconds_count{code="201",route="POST /v1/memories"}`,
	} {
		if !strings.Contains(metrics, "\n"+series+" 1\n") {
			t.Errorf("A's node does not count one %s:\n%s", series, metrics)
		}
	}
	if strings.Contains(metrics, `tool="mem_get_observation"`) {
		t.Error("B's call, made over HTTP, counted as a tool call of A's")
	}

	a.close(t)
	// B's next call finds the node gone and takes the directory over.
	res := b.call(t, "mem_search", map[string]any{"query": "wombats numbats"}, false)
	wantText(t, res, idA, idB)
	info, err = node.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.PID != b.cmd.Process.Pid {
		t.Errorf("after takeover node.json pid %d, want %d", info.PID, b.cmd.Process.Pid)
	}
	b.close(t)
}

// scrapeText is GET /metrics of the node at url, in the text format.
func scrapeText(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func TestMCPUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMCP(t.Context(), []string{"-h"}, strings.NewReader(""), &out, &errb); code != exitOK || !strings.Contains(out.String(), "--node URL") {
		t.Errorf("-h: code %d, out %q", code, out.String())
	}
	out.Reset()
	if code := runMCP(t.Context(), []string{"--bogus"}, strings.NewReader(""), &out, &errb); code != exitUsage || out.Len() != 0 {
		t.Errorf("--bogus: code %d, stdout %q", code, out.String())
	}
}
