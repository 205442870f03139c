package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
)

// BenchmarkSaveSearchHTTP is one save (POST /v1/memories) and one search
// (GET /v1/search) per operation, over a real loopback connection, on a
// service whose store is in memory: the fixed cost of the HTTP path (routing,
// auth, JSON, instrumentation) is as large a share of an operation as it gets,
// so this is where that cost shows. Compare builds side by side:
//
//	go test -c -o new.test ./node/httpapi   (and old.test at the other commit)
//	for i in 1 2 3 4 5 6; do for b in old new; do ./$b.test -test.run '^$' -test.bench SaveSearchHTTP -test.benchtime 3000x; done; done
func BenchmarkSaveSearchHTTP(b *testing.B) {
	svc, err := memory.Open(memory.Config{KV: store.NewMemKV(), Agent: namespace.MustParse("agent://bench")})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	h, err := New(Config{Service: svc, Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	do := func(req *http.Request, want int) {
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode)
		}
	}
	words := []string{"quic", "badger", "gossip", "schema", "tokens", "deploy", "retry", "cache"}
	i := 0
	for b.Loop() {
		w := words[i%len(words)]
		body := fmt.Sprintf(`{"title":"note %d about %s","content":"decided to keep %s bounded, run %d","type":"decision"}`, i, w, w, i)
		req, _ := http.NewRequest("POST", srv.URL+"/v1/memories", strings.NewReader(body))
		do(req, http.StatusCreated)
		req, _ = http.NewRequest("GET", srv.URL+"/v1/search?q="+url.QueryEscape(w+" bounded")+"&limit=5", nil)
		do(req, http.StatusOK)
		i++
	}
}
