package metrics

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Two Metrics keep apart (no global registry), and what one records is
// what its handler serves, with the fixed label values.
func TestMetricsAreThePerNodeRegistrys(t *testing.T) {
	a, b := New(), New()
	a.HTTPRequest("", 301, time.Millisecond)
	a.MemoryOperation("save", time.Millisecond, errors.New("refused"))
	a.DeltaApplied(true, -time.Second) // the author's clock ahead
	got, other := serve(t, a), serve(t, b)
	for _, want := range []string{
		`mnemo_http_request_duration_seconds_count{code="301",route="unmatched"} 1`,
		`mnemo_memory_operation_duration_seconds_count{op="save",outcome="error"} 1`,
		`mnemo_replication_lag_seconds_bucket{path="live",le="0.001"} 1`,
		"go_goroutines ",
		"go_memstats_heap_inuse_bytes ",
		"go_gc_heap_live_bytes ", // the soak's figure of a heap that grows
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(other, "mnemo_http_request_duration_seconds_count") {
		t.Error("a second node's registry shows the first's requests")
	}
}

func serve(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// BenchmarkHTTPRequest is what instrumenting one request costs.
func BenchmarkHTTPRequest(b *testing.B) {
	m := New()
	for b.Loop() {
		m.HTTPRequest("GET /v1/search", 200, 300*time.Microsecond)
	}
}
