package httpapi

import (
	"net/http"
	"testing"

	"github.com/mnemohq/mnemo/node/memory/capsule"
)

// TestNoDedupFeatureNoRoutes: a node whose memory service has no dedup
// feature attached answers the duplicates routes 404, whatever the method
// and body, while its other features keep their routes.
func TestNoDedupFeatureNoRoutes(t *testing.T) {
	do := serveWith(t, capsule.New())
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/duplicates", ""}, {"GET", "/v1/duplicates?threshold=0.9", ""},
		{"POST", "/v1/duplicates/merge", `{"ids":["a","b"],"namespace":"team://core"}`},
	} {
		if code, _ := do(r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", r.method, r.path, code)
		}
	}
	if code, _ := do("GET", "/v1/capsules", ""); code != http.StatusOK {
		t.Fatalf("capsules without dedup: status %d", code)
	}
}
