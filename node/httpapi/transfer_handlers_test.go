package httpapi

import (
	"net/http"
	"testing"

	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/transfer"
)

// TestNoTransferFeatureNoRoutes: a node whose memory service has no
// transfer feature answers the export and import routes 404, whatever the
// query and body, while its other routes keep working; with the feature
// attached the same requests are served.
func TestNoTransferFeatureNoRoutes(t *testing.T) {
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/export", ""}, {"GET", "/v1/export?namespace=team://core", ""},
		{"POST", "/v1/import", `{"format":"mnemo-export","version":1,"memories":[],"sessions":[]}`},
		{"POST", "/v1/import?preserve_provenance=true", `{"observations":[]}`},
	}
	without := serveWith(t, capsule.New())
	for _, r := range routes {
		if code, _ := without(r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("without the feature, %s %s: status %d, want 404", r.method, r.path, code)
		}
	}
	if code, _ := without("GET", "/v1/stats", ""); code != http.StatusOK {
		t.Fatalf("stats without transfer: status %d", code)
	}
	with := serveWith(t, transfer.New())
	for _, r := range routes {
		if code, _ := with(r.method, r.path, r.body); code == http.StatusNotFound {
			t.Errorf("with the feature, %s %s: status 404", r.method, r.path)
		}
	}
}
