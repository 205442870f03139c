package mcptools_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// mcpPost sends one JSON-RPC message to an MCP endpoint as principal (the
// X-Principal header of the test backend) and returns the status and the
// session id the server answered with.
func mcpPost(t *testing.T, url, principal, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Principal", principal)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// The session bounds hold per principal and in total, the least recently
// used session goes first, and a closed session answers 404.
func TestSessionLimits(t *testing.T) {
	clk := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	svc := openService(t, clk)
	h, err := mcptools.NewHTTPHandler(func(r *http.Request) (mcptools.Backend, string) {
		p := namespace.MustParse("agent://" + r.Header.Get("X-Principal"))
		return mcpservice.New(svc, memapi.Caller{Principal: p}), p.String()
	}, mcptools.HTTPOptions{MaxSessions: 5, MaxSessionsPerPrincipal: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	open := func(p string) string {
		t.Helper()
		code, id := mcpPost(t, srv.URL, p, "", initializeBody)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize as %s: %d, session %q", p, code, id)
		}
		return id
	}
	ping := func(p, id string) int {
		t.Helper()
		code, _ := mcpPost(t, srv.URL, p, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		return code
	}

	bob := open("bob")
	var alice []string
	for range 40 {
		alice = append(alice, open("alice"))
		if n := h.Sessions(); n > 4 {
			t.Fatalf("%d live sessions with alice capped at 3 and bob holding 1", n)
		}
	}
	if ping("bob", bob) != http.StatusOK {
		t.Fatal("alice's flood closed bob's session: the per-principal bound did not hold")
	}
	if ping("alice", alice[0]) != http.StatusNotFound || ping("alice", alice[36]) != http.StatusNotFound {
		t.Fatal("an evicted session still answers")
	}
	// Use alice's oldest live session: it becomes the most recent, so the
	// next eviction takes the one after it.
	if ping("alice", alice[37]) != http.StatusOK {
		t.Fatal("a live session does not answer")
	}
	alice = append(alice, open("alice"))
	if ping("alice", alice[37]) != http.StatusOK || ping("alice", alice[38]) != http.StatusNotFound {
		t.Fatal("eviction did not take the least recently used session")
	}

	// The total bound: carol and dave fill it, and the least recently
	// used of all goes — alice[39], idle since it opened, not bob, who
	// pinged since.
	open("carol")
	open("dave")
	if n := h.Sessions(); n != 5 {
		t.Fatalf("%d live sessions, want the total bound 5", n)
	}
	if ping("alice", alice[39]) != http.StatusNotFound || ping("bob", bob) != http.StatusOK {
		t.Fatal("the total bound evicted someone other than the least recently used")
	}
	if got := h.Evicted(); got != 40+1-3+1 {
		t.Fatalf("evicted %d, want %d", got, 40+1-3+1)
	}

	if _, err := mcptools.NewHTTPHandler(nil, mcptools.HTTPOptions{MaxSessions: -1}); err == nil {
		t.Fatal("a negative bound was accepted")
	}
}
