package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResidentMemoryMCPFlood measures a real `mnemo node` process before
// and after a flood of MCP initialize calls that never close their
// sessions (MNEMO_MCP_FLOOD calls, default 2500, all with the owner token,
// so one principal). The node keeps at most its per-principal bound of
// sessions (16), so the flood costs a bounded, small amount of memory
// whatever its length. It runs only with MNEMO_RSS_TEST=1:
//
//	MNEMO_RSS_TEST=1 go test -run TestResidentMemoryMCPFlood -v ./cmd/mnemo/
func TestResidentMemoryMCPFlood(t *testing.T) {
	if os.Getenv("MNEMO_RSS_TEST") != "1" {
		t.Skip("set MNEMO_RSS_TEST=1 to measure a node process's resident memory")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: ", err)
	}
	flood := 2500
	if v, err := strconv.Atoi(os.Getenv("MNEMO_MCP_FLOOD")); err == nil && v > 0 {
		flood = v
	}
	p := startNode(t, filepath.Join(t.TempDir(), "data"), "rss")
	p.healthz()
	p.settled(5 * time.Second)
	rows := []string{p.rssRow("default", "idle, before the flood")}
	var ids []string
	for i := range flood {
		ids = append(ids, p.mcpInitialize(i))
		if i == flood/2 {
			rows = append(rows, p.rssRow("default", fmt.Sprintf("during, after %d initialize", i+1)))
		}
	}
	rows = append(rows, p.rssRow("default", fmt.Sprintf("after %d initialize", flood)))
	p.settled(15 * time.Second)
	rows = append(rows, p.rssRow("default", "then idle until settled"))
	live := p.metric("mnemo_mcp_sessions")
	t.Logf("live MCP sessions after the flood: %s (evicted %s)", live, p.metric("mnemo_mcp_sessions_evicted_total"))
	if live != "16" {
		t.Errorf("live sessions %q, want the per-principal bound 16", live)
	}
	if code := p.mcpPing(ids[0]); code != http.StatusNotFound {
		t.Errorf("the first session answers %d, want 404", code)
	}
	p.stop(syscall.SIGTERM)
	fmt.Printf("%-8s %-34s %9s %9s %9s %9s\n", "limit", "state", "VmRSS", "RssAnon", "RssFile", "VmHWM")
	for _, r := range rows {
		fmt.Println(r)
		t.Log(r)
	}
}

func (p *nodeProc) mcpPost(session, body string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequestWithContext(p.t.Context(), "POST", p.url+"/mcp", strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

func (p *nodeProc) mcpInitialize(i int) string {
	p.t.Helper()
	code, id := p.mcpPost("", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood-%d","version":"1"}}}`, i))
	if code != http.StatusOK || id == "" {
		p.t.Fatalf("initialize %d: %d, session %q", i, code, id)
	}
	return id
}

func (p *nodeProc) mcpPing(session string) int {
	p.t.Helper()
	code, _ := p.mcpPost(session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	return code
}

// metric is one unlabelled figure of GET /metrics, "" if absent.
func (p *nodeProc) metric(name string) string {
	p.t.Helper()
	_, body := p.api("GET", "/metrics", p.token, "")
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}
