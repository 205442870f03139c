package httpapi

import (
	"net/http"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
)

func TestProjectionRoutes(t *testing.T) {
	f := newFixture(t, nil)
	f.save(`{"type":"decision","content":"tokens rotate hourly","tags":["auth"]}`)
	f.save(`{"type":"decision","content":"invoices round half even","tags":["billing"]}`)
	wantStatus(t, f.do("POST", "/v1/projections", `{"source":"agent://alice","target":"agent://bob","level":"L7"}`), http.StatusBadRequest, "")
	wantStatus(t, f.do("POST", "/v1/projections", `{"source":"agent://alice","target":"agent://alice","level":"L2"}`), http.StatusBadRequest, "")
	a := f.do("POST", "/v1/projections", `{"source":"agent://alice","target":"agent://bob","filter":{"tags":["auth"]},"level":"L2"}`)
	wantStatus(t, a, http.StatusCreated, "")
	var created memapi.ProjectionInfo
	a.decode(t, &created)
	if created.ID == "" || created.Memories != 1 || !created.Live || created.View != "agent://bob/.inbox/alice/proj-"+created.ID {
		t.Fatalf("created %+v", created)
	}
	var info ProjectionsAnswer
	a = f.do("GET", "/v1/projections", "")
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &info)
	if len(info.Projections) != 1 || info.Projections[0].ID != created.ID || info.Projections[0].Memories != 1 {
		t.Fatalf("list %+v", info)
	}
	wantStatus(t, f.do("GET", "/v1/projections?bogus=1", ""), http.StatusBadRequest, "")
	wantStatus(t, f.do("DELETE", "/v1/projections/"+created.ID, ""), http.StatusNoContent, "")
	wantStatus(t, f.do("DELETE", "/v1/projections/"+created.ID, ""), http.StatusNotFound, "")
	a = f.do("GET", "/v1/projections", "")
	info = ProjectionsAnswer{}
	a.decode(t, &info)
	if len(info.Projections) != 0 {
		t.Fatalf("list after delete %+v", info)
	}
}

// TestNoProjectionFeatureNoRoutes: a node whose memory service has no
// projection-view feature attached answers the projection routes 404.
func TestNoProjectionFeatureNoRoutes(t *testing.T) {
	do := serveWith(t)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/projections", `{"source":"agent://alice","target":"agent://bob","level":"L2"}`},
		{"GET", "/v1/projections", ""}, {"DELETE", "/v1/projections/x", ""},
	} {
		if code, _ := do(r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", r.method, r.path, code)
		}
	}
}
