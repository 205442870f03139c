package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/transfer"
)

// TestNoTransferFeatureNoRoutes: a node whose memory service has no
// transfer feature answers the export and import routes 404, whatever the
// query and body, while its other routes keep working; with the feature
// attached the same requests are served.
func TestNoTransferFeatureNoRoutes(t *testing.T) {
	serve := func(features ...memory.Feature) func(method, path, body string) int {
		svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://alice"), Features: features})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		h, err := New(Config{Service: svc, Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		return func(method, path, body string) int {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(rec, req)
			return rec.Code
		}
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/export", ""}, {"GET", "/v1/export?namespace=team://core", ""},
		{"POST", "/v1/import", `{"format":"mnemo-export","version":1,"memories":[],"sessions":[]}`},
		{"POST", "/v1/import?preserve_provenance=true", `{"observations":[]}`},
	}
	without := serve(capsule.New())
	for _, r := range routes {
		if code := without(r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("without the feature, %s %s: status %d, want 404", r.method, r.path, code)
		}
	}
	if code := without("GET", "/v1/stats", ""); code != http.StatusOK {
		t.Fatalf("stats without transfer: status %d", code)
	}
	with := serve(transfer.New())
	for _, r := range routes {
		if code := with(r.method, r.path, r.body); code == http.StatusNotFound {
			t.Errorf("with the feature, %s %s: status 404", r.method, r.path)
		}
	}
}
