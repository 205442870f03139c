package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
)

// TestNoDedupFeatureNoRoutes: a node whose memory service has no dedup
// feature attached answers the duplicates routes 404, whatever the method
// and body, while its other features keep their routes.
func TestNoDedupFeatureNoRoutes(t *testing.T) {
	svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://alice"), Features: []memory.Feature{capsule.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	h, err := New(Config{Service: svc, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/duplicates", ""}, {"GET", "/v1/duplicates?threshold=0.9", ""},
		{"POST", "/v1/duplicates/merge", `{"ids":["a","b"],"namespace":"team://core"}`},
	} {
		if code := do(r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", r.method, r.path, code)
		}
	}
	if code := do("GET", "/v1/capsules", ""); code != http.StatusOK {
		t.Fatalf("capsules without dedup: status %d", code)
	}
}
