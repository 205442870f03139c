package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/transfer"
)

// FuzzRequest sends arbitrary query strings and bodies to every route. Bad
// input from a client must get a 4xx with the JSON error shape: never a
// panic, never a 500.
func FuzzRequest(f *testing.F) {
	routes := []struct{ method, path string }{
		{"POST", "/v1/memories"},
		{"GET", "/v1/memories/x"},
		{"PATCH", "/v1/memories/x"},
		{"DELETE", "/v1/memories/x"},
		{"GET", "/v1/search"},
		{"GET", "/v1/timeline"},
		{"GET", "/v1/context"},
		{"POST", "/v1/compact"},
		{"GET", "/v1/stats"},
		{"GET", "/v1/export"},
		{"POST", "/v1/import"},
		{"POST", "/v1/sessions"},
		{"POST", "/v1/sessions/s/end"},
		{"POST", "/v1/sessions/s/summary"},
		{"POST", "/v1/prompts"},
		{"POST", "/v1/progress"},
	}
	f.Add(uint8(0), "", `{"type":"decision","content":"c","tags":["a"]}`)
	f.Add(uint8(0), "", `{"type":"decision","content":"c","importance":2}`)
	f.Add(uint8(2), "", `{"title":"t"}`)
	f.Add(uint8(4), "q=a&limit=5&since=2025-01-01T00:00:00Z&tags=a,b", "")
	f.Add(uint8(5), "id=x&before=3", "")
	f.Add(uint8(6), "max_tokens=99999999", "")
	f.Add(uint8(7), "", `{"older_than_days":-1}`)
	f.Add(uint8(10), "namespace=team://x", `{"format":"mnemo-export","version":1,"memories":[{"id":"a","type":"decision","content":"c"}]}`)
	f.Add(uint8(10), "", `{"sessions":[{"id":"s"}],"observations":[{"type":"x","content":"y"}],"prompts":[{"content":"p"}]}`)
	f.Add(uint8(11), "", `{"id":"s1"}`)
	f.Add(uint8(15), "", `{"project":"p","content":"c"}`)

	svc, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://alice"), Features: []memory.Feature{transfer.New()}})
	if err != nil {
		f.Fatal(err)
	}
	defer svc.Close()
	h, err := New(Config{Service: svc, Token: testToken, Logger: slog.New(slog.DiscardHandler), MaxImportBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, route uint8, query, body string) {
		rt := routes[int(route)%len(routes)]
		req := httptest.NewRequest(rt.method, "/", strings.NewReader(body))
		req.URL.Path = rt.path
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s %q: %d %s", rt.method, rt.path, query, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var eb ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("%d without the error shape: %q", rec.Code, rec.Body)
			}
		} else if rec.Code != http.StatusNoContent && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%d with invalid JSON: %q", rec.Code, rec.Body)
		}
	})
}
