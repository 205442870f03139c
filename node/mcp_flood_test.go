package node

import (
	"bufio"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// metricValue reads one unlabelled figure from GET /metrics.
func metricValue(t *testing.T, n *Node, name string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", n.Addr()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+n.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			x, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return x
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// mcpCall posts one JSON-RPC message to the node's /mcp with the owner
// token and returns the status and the session id answered.
func mcpCall(t *testing.T, n *Node, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", n.Addr()+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+n.Token())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
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

const floodInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// liveHeap is the heap in use after a full collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // a second cycle frees what the first one's finalizers released
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// 2,000 initialize calls that never close their sessions leave the node
// holding its per-principal bound of sessions (16 for one principal), not
// 2,000: the live count never passes it, the oldest sessions answer 404,
// the newest still work, and the live heap does not grow with the flood.
func TestMCPInitializeFlood(t *testing.T) {
	cfg, _ := testConfig(t, t.TempDir())
	n := mustOpen(t, cfg)
	go n.Serve(t.Context())
	const limit, warm = 16, 100
	flood := 2000
	if raceEnabled {
		flood = 500 // each call is ~6x slower; still 30 times the bound
	}
	var ids []string
	var heap0 uint64
	for i := range flood {
		if i == warm { // the bound is reached, the schemas are cached
			heap0 = liveHeap()
		}
		code, id := mcpCall(t, n, "", floodInitialize)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize %d: %d, session %q", i, code, id)
		}
		ids = append(ids, id)
		if i%100 == 99 {
			if live := metricValue(t, n, "mnemo_mcp_sessions"); live != limit {
				t.Fatalf("after %d initialize calls: %d live sessions, want %d", i+1, live, limit)
			}
		}
	}
	// A session kept costs some 30 KiB: 400 kept would be 12 MiB.
	if grew := int64(liveHeap()) - int64(heap0); grew > 8<<20 {
		t.Errorf("the live heap grew %d KiB over %d initialize calls", grew>>10, flood-warm)
	}
	if got := metricValue(t, n, "mnemo_mcp_sessions_evicted_total"); got != flood-limit {
		t.Fatalf("evicted %d sessions, want %d", got, flood-limit)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code, _ := mcpCall(t, n, ids[0], ping); code != http.StatusNotFound {
		t.Fatalf("the first session answers %d after the flood, want 404", code)
	}
	if code, _ := mcpCall(t, n, ids[flood-limit-1], ping); code != http.StatusNotFound {
		t.Fatalf("the newest evicted session answers %d, want 404", code)
	}
	if code, _ := mcpCall(t, n, ids[flood-1], ping); code != http.StatusOK {
		t.Fatalf("the newest session answers %d, want 200", code)
	}
}
