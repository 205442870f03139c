package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
)

func TestCapsuleRoutes(t *testing.T) {
	f := newFixture(t, nil)
	m := f.save(`{"type":"fact","content":"Jack has the elevated support tier","subject_type":"user","subject_id":"jack"}`)
	wantStatus(t, f.do("POST", "/v1/capsules", `{"subject_type":"user","audience":["agent://bob"],"ids":["`+m.ID+`"]}`), http.StatusBadRequest, "")
	wantStatus(t, f.do("POST", "/v1/capsules", `{"subject_type":"user","subject_id":"jack","audience":["agent://bob"],"ids":["NOPE"]}`), http.StatusNotFound, "")
	a := f.do("POST", "/v1/capsules", fmt.Sprintf(`{"subject_type":"user","subject_id":"jack","audience":["agent://bob"],"ids":[%q],"ttl_days":3,"risks":["open complaint"]}`, m.ID))
	wantStatus(t, a, http.StatusCreated, "")
	var created memapi.CapsuleCreated
	a.decode(t, &created)
	if created.CapsuleID == "" || created.ItemCount != 1 || created.Audience[0] != "agent://bob" {
		t.Fatalf("created %+v", created)
	}
	a = f.do("GET", "/v1/capsules?subject_type=user&subject_id=jack", "")
	wantStatus(t, a, http.StatusOK, "")
	var list memapi.CapsuleList
	a.decode(t, &list)
	if len(list.Capsules) != 1 || list.Capsules[0].Status != memapi.CapsuleActive {
		t.Fatalf("list %+v", list)
	}
	a = f.do("GET", "/v1/capsules/"+created.CapsuleID, "")
	wantStatus(t, a, http.StatusOK, "")
	var c memapi.Capsule
	a.decode(t, &c)
	if len(c.Items) != 1 || c.Items[0].Lineage != m.ID {
		t.Fatalf("get %+v", c)
	}
	wantStatus(t, f.do("GET", "/v1/capsules?bogus=1", ""), http.StatusBadRequest, "")
	wantStatus(t, f.do("DELETE", "/v1/capsules/"+created.CapsuleID, ""), http.StatusOK, "")
	a = f.do("GET", "/v1/capsules/"+created.CapsuleID, "")
	c = memapi.Capsule{}
	a.decode(t, &c)
	if c.Status != memapi.CapsuleRevoked || len(c.Items) != 0 {
		t.Fatalf("after revoke %+v", c)
	}
	wantStatus(t, f.do("GET", "/v1/capsules/unknown", ""), http.StatusNotFound, "")
}

func TestBundleAndDuplicatesRoutes(t *testing.T) {
	f := newFixture(t, nil)
	f.save(`{"type":"decision","scope":"policy","content":"PII stays in the EU"}`)
	f.save(`{"type":"note","content":"the ledger is append-only","session_id":"s1"}`)
	a := f.do("POST", "/v1/context/bundle", `{"session_id":"s1","max_tokens":500}`)
	wantStatus(t, a, http.StatusOK, "")
	var b memapi.BundleResult
	a.decode(t, &b)
	if len(b.Decisions) != 1 || len(b.Recent) != 1 || b.Budget.Total > 500 || b.Budget.MaxTokens != 500 {
		t.Fatalf("bundle %+v", b)
	}
	wantStatus(t, f.do("POST", "/v1/context/bundle", `{"max_tokens":-1}`), http.StatusBadRequest, "")
	wantStatus(t, f.do("POST", "/v1/context/bundle", ``), http.StatusOK, "")
	a = f.do("GET", "/v1/duplicates?threshold=0.9", "")
	wantStatus(t, a, http.StatusOK, "")
	var d memapi.DuplicatesResult
	a.decode(t, &d)
	wantStatus(t, f.do("GET", "/v1/duplicates?threshold=2", ""), http.StatusBadRequest, "")
	wantStatus(t, f.do("POST", "/v1/duplicates/merge", `{"ids":["a","b"],"namespace":"team://core"}`), http.StatusForbidden, "")
}

// TestNoCapsuleFeatureNoRoutes: a node whose memory service has no capsule
// feature attached answers the capsule routes 404 and still builds context
// bundles (without capsules).
func TestNoCapsuleFeatureNoRoutes(t *testing.T) {
	do := serveWith(t)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/capsules", `{}`}, {"GET", "/v1/capsules", ""}, {"GET", "/v1/capsules/x", ""}, {"DELETE", "/v1/capsules/x", ""},
	} {
		if code, _ := do(r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", r.method, r.path, code)
		}
	}
	if code, body := do("POST", "/v1/context/bundle", `{"max_tokens":500}`); code != http.StatusOK {
		t.Fatalf("bundle without capsules: status %d: %s", code, body)
	}
}

// serveWith serves the API over a fresh in-memory service owned by alice
// with only features attached; the returned func makes one authorised
// JSON request and returns its status and body.
func serveWith(t *testing.T, features ...memory.Feature) func(method, path, body string) (int, string) {
	t.Helper()
	svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://alice"), Features: features})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	h, err := New(Config{Service: svc, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	return func(method, path, body string) (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
}
