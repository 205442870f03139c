package node

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads GET /metrics of n in the Prometheus text format and parses
// it with the Prometheus text parser.
func scrape(t *testing.T, n *Node) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", n.Addr()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+n.Token())
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sampleCount sums the observation counts of histogram name over the series
// whose labels include every pair of want (label, value, label, value…).
func sampleCount(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) uint64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	if f.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("%s is a %v, want a histogram", name, f.GetType())
	}
	var n uint64
	for _, m := range f.Metric {
		if hasLabels(m, want) {
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// labelValues lists the distinct values label takes in family name.
func labelValues(fams map[string]*dto.MetricFamily, name, label string) map[string]bool {
	out := map[string]bool{}
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == label {
				out[l.GetValue()] = true
			}
		}
	}
	return out
}

// value is the value of the gauge or counter series of name whose labels
// include want; false if there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		if hasLabels(m, want) {
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			}
		}
	}
	return 0, false
}

// api sends a request with n's owner token and returns the status and body.
func api(t *testing.T, n *Node, method, path, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, n.Addr()+path, r)
	req.Header.Set("Authorization", "Bearer "+n.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// eventually polls cond until it holds, or fails the test after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func openReplicating(t *testing.T, agent string, key []byte, join ...string) *Node {
	t.Helper()
	cfg, _ := testConfig(t, t.TempDir())
	cfg.Agent, cfg.ClusterKey, cfg.Join = agent, key, join
	n := mustOpen(t, cfg)
	go n.Serve(t.Context())
	return n
}

// A real node scraped over loopback, after a save, a search, MCP tool
// calls and replication to a second node, carries the histograms of each,
// with counts where the action happened; the Go runtime and process
// collectors; the per-peer figures. A hundred requests to distinct unknown
// paths add no route label: routes are the mux's patterns.
func TestMetricsScrape(t *testing.T) {
	raw := make([]byte, 32)
	rand.Read(raw)
	key := []byte(base64.StdEncoding.EncodeToString(raw))
	alice := openReplicating(t, "alice", key)
	bob := openReplicating(t, "bob", key, alice.Cluster().GossipAddr())
	eventually(t, "two members seeing each other", func() bool {
		return len(alice.Cluster().Status(false).Peers) == 1 && len(bob.Cluster().Status(false).Peers) == 1
	})

	// a team namespace bob may read and write, and a memory in it
	if code, b := api(t, alice, "POST", "/v1/namespaces", `{"namespace":"team://metrics"}`); code != http.StatusCreated {
		t.Fatalf("create team: %d %s", code, b)
	}
	if code, b := api(t, alice, "POST", "/v1/grants", `{"namespace":"team://metrics","principal":"agent://bob","permissions":["read","write"]}`); code/100 != 2 {
		t.Fatalf("grant: %d %s", code, b)
	}
	save := func(content string) string {
		code, b := api(t, alice, "POST", "/v1/memories", fmt.Sprintf(`{"namespace":"team://metrics","content":%q}`, content))
		if code != http.StatusCreated {
			t.Fatalf("save: %d %s", code, b)
		}
		var m struct{ ID string }
		_ = json.Unmarshal(b, &m)
		return m.ID
	}
	has := func(n *Node, id string) bool {
		code, _ := api(t, n, "GET", "/v1/memories/"+id, "")
		return code == http.StatusOK
	}
	first := save("histograms have buckets")
	eventually(t, "the first team memory on bob", func() bool { return has(bob, first) })
	// bob reads the team now: the next save reaches it as a live delta
	second := save("quantiles come from buckets")
	eventually(t, "the second team memory on bob", func() bool { return has(bob, second) })
	// and a sync bob asks for, answered by alice
	if code, b := api(t, bob, "POST", "/v1/sync", `{}`); code != http.StatusAccepted {
		t.Fatalf("sync: %d %s", code, b)
	}
	eventually(t, "bob's sync answered", func() bool {
		return sampleCount(t, scrape(t, bob), "mnemo_sync_duration_seconds") > 0
	})

	if code, b := api(t, alice, "GET", "/v1/search?q=buckets", ""); code != http.StatusOK || !strings.Contains(string(b), first) {
		t.Fatalf("search: %d %s", code, b)
	}

	// MCP tool calls: one that works, one that answers a tool error, one
	// naming no tool
	ctx := context.Background()
	cl := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: alice.Addr() + "/mcp",
		HTTPClient: &http.Client{Transport: bearerAuth{alice.Token()}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem_search", Arguments: map[string]any{"query": "buckets"}}); err != nil || res.IsError {
		t.Fatalf("mem_search: %v %+v", err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem_get_observation", Arguments: map[string]any{"id": "01NOSUCHID"}}); err != nil || !res.IsError {
		t.Fatalf("mem_get_observation of no memory: %v %+v", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool_42", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool answered")
	}

	// a hundred distinct paths nobody routes
	for i := range 100 {
		if code, _ := api(t, alice, "GET", fmt.Sprintf("/v1/nothing-%d", i), ""); code != http.StatusNotFound {
			t.Fatalf("unknown path: %d", code)
		}
	}

	a := scrape(t, alice)
	for _, c := range []struct {
		what string
		n    uint64
	}{
		{"POST /v1/memories 201", sampleCount(t, a, "mnemo_http_request_duration_seconds", "route", "POST /v1/memories", "code", "201")},
		{"GET /v1/search 200", sampleCount(t, a, "mnemo_http_request_duration_seconds", "route", "GET /v1/search", "code", "200")},
		{"/mcp", sampleCount(t, a, "mnemo_http_request_duration_seconds", "route", "/mcp")},
		{"saves", sampleCount(t, a, "mnemo_memory_operation_duration_seconds", "op", "save", "outcome", "ok")},
		{"searches (HTTP and MCP)", sampleCount(t, a, "mnemo_memory_operation_duration_seconds", "op", "search", "outcome", "ok") / 2},
		{"mem_search", sampleCount(t, a, "mnemo_mcp_tool_call_duration_seconds", "tool", "mem_search", "outcome", "ok")},
		{"a tool error", sampleCount(t, a, "mnemo_mcp_tool_call_duration_seconds", "tool", "mem_get_observation", "outcome", "error")},
		{"an unknown tool", sampleCount(t, a, "mnemo_mcp_tool_call_duration_seconds", "tool", "unknown", "outcome", "error")},
	} {
		if c.n == 0 {
			t.Errorf("alice: no observation of %s", c.what)
		}
	}
	if got := sampleCount(t, a, "mnemo_http_request_duration_seconds", "route", "/", "code", "404"); got < 100 {
		t.Errorf("the catch-all route counted %d of the 100 unknown paths", got)
	}
	routes := labelValues(a, "mnemo_http_request_duration_seconds", "route")
	for r := range routes {
		if strings.Contains(r, "nothing") {
			t.Errorf("a raw path became a route label: %q", r)
		}
	}
	if len(routes) > 12 {
		t.Errorf("%d route labels after a dozen kinds of request: %v", len(routes), routes)
	}
	if tools := labelValues(a, "mnemo_mcp_tool_call_duration_seconds", "tool"); tools["no_such_tool_42"] || len(tools) != 3 {
		t.Errorf("tool labels %v, want mem_search, mem_get_observation and unknown", tools)
	}
	bobID := string(bob.NodeID())
	if v, ok := value(a, "mnemo_peer_deltas_sent_total", "peer", bobID); !ok || v < 1 {
		t.Errorf("alice's deltas sent to bob: %v %v", v, ok)
	}
	if _, ok := value(a, "mnemo_peer_queue_depth", "peer", bobID); !ok {
		t.Error("alice has no queue depth for bob")
	}
	if v, _ := value(a, "mnemo_replication_frame_bytes_total", "direction", "sent", "kind", "deltas"); v <= 0 {
		t.Errorf("alice sent %v bytes of delta frames", v)
	}
	if v, ok := value(a, "mnemo_memories"); !ok || v < 2 {
		t.Errorf("mnemo_memories %v %v", v, ok)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_gc_duration_seconds"} {
		if a[name] == nil {
			t.Errorf("no Go runtime metric %s", name)
		}
	}
	if runtime.GOOS == "linux" && a["process_resident_memory_bytes"] == nil {
		t.Error("no process metrics")
	}

	b := scrape(t, bob)
	if n := sampleCount(t, b, "mnemo_replication_lag_seconds", "path", "live"); n == 0 {
		t.Error("bob: no live delta's lag observed")
	}
	if n, m := sampleCount(t, b, "mnemo_sync_duration_seconds"), sampleCount(t, b, "mnemo_sync_received_bytes"); n == 0 || n != m {
		t.Errorf("bob: %d sync durations, %d sync sizes", n, m)
	}
	if v, _ := value(b, "mnemo_replication_frame_bytes_total", "direction", "received", "kind", "sync-reply"); v <= 0 {
		t.Errorf("bob received %v bytes of sync answers", v)
	}

	// Between them the two scrapes hold every family the node exports:
	// the dashboard may query only those.
	all := map[string]*dto.MetricFamily{}
	for _, fams := range []map[string]*dto.MetricFamily{a, b} {
		for name, f := range fams {
			all[name] = f
		}
	}
	checkDashboard(t, all)
}

type bearerAuth struct{ token string }

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
