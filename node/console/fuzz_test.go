package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
)

// FuzzPagesAndForms sends arbitrary query strings and form bodies, as bob
// (a principal-bound session), to every page and action: none may fail
// with a 500, and none may change alice's private memory.
func FuzzPagesAndForms(f *testing.F) {
	f.Add(uint8(0), "q=zebra&tags=a,,b&include_quarantined=on", "")
	f.Add(uint8(3), "", "namespace=agent://alice&type=decision&content=x&importance=2")
	f.Add(uint8(5), "", "op=amend&reason=r&text=t&importance=NaN")
	f.Add(uint8(9), "", "namespace=team://x&principal=agent://bob&permission=admin&permissions=all")
	f.Add(uint8(1), "namespace=%zz&scope=\x00", "title=%ff&tags=%")
	fx := newFixture(f, nil)
	alice := save(f, fx.svc, "alice", memapi.SaveRequest{Type: "decision", Title: "alice secret", Content: "secret"})
	bob := fx.c.sessions.create(memorytest.Agent("bob").Principal, false, fx.clk.Now())
	routes := []struct{ method, path string }{
		{"GET", "/ui/memories"}, {"GET", "/ui/memories/" + alice.ID}, {"GET", "/ui/governance"},
		{"POST", "/ui/memories"}, {"POST", "/ui/memories/" + alice.ID + "/update"}, {"POST", "/ui/memories/" + alice.ID + "/edits"},
		{"POST", "/ui/memories/" + alice.ID + "/delete"}, {"GET", "/ui/namespaces"}, {"POST", "/ui/revocations"},
		{"POST", "/ui/grants"}, {"GET", "/ui/cluster"}, {"GET", "/ui/projections"}, {"POST", "/ui/edits/x/approve"},
		{"POST", "/ui/capsules/x/revoke"}, {"POST", "/ui/signin"}, {"POST", "/ui/view-as"},
	}
	f.Fuzz(func(t *testing.T, route uint8, query, body string) {
		rt := routes[int(route)%len(routes)]
		if rt.method == "POST" {
			body += "&csrf=" + bob.csrf
		}
		req := httptest.NewRequest(rt.method, "http://127.0.0.1/ui/", strings.NewReader(body))
		req.URL.Path = rt.path
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: CookieName, Value: bob.id})
		w := httptest.NewRecorder()
		fx.c.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s?%s body %q: %d %s", rt.method, rt.path, query, body, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "alice secret") {
			t.Fatalf("%s %s?%s shows alice's memory to bob", rt.method, rt.path, query)
		}
		m, err := fx.svc.GetFor(context.Background(), memorytest.Agent("alice"), alice.ID, memapi.GetOptions{IncludeDeleted: true, IncludeQuarantined: true})
		if err != nil || m.Content != "secret" || m.DeletedAt != nil {
			t.Fatalf("bob's %s %s changed alice's memory: %+v %v", rt.method, rt.path, m, err)
		}
	})
}
