package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node/memapi"
)

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.rt.RoundTrip(r)
}

// The node serves the MCP tools at /mcp behind the same token as /v1.
func TestMCPOverHTTP(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	ctx := context.Background()

	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem_save", Arguments: map[string]any{
		"title": "Badger tuning", "content": "small memtables for the sidecar", "type": "decision"}})
	if err != nil || res.IsError {
		t.Fatalf("mem_save over HTTP: %v %+v", err, res)
	}
	got, err := f.svc.Search(ctx, callerOf(f), searchFor("memtables"))
	if err != nil || got.Total != 1 {
		t.Fatalf("the save over /mcp did not reach the service: %+v %v", got, err)
	}

	_, err = cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"wrong", http.DefaultTransport}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Fatal("connected to /mcp with a wrong token")
	}
}

func callerOf(f *fixture) memapi.Caller { return memapi.Caller{Principal: f.svc.Owner()} }

func searchFor(q string) memapi.SearchQuery { return memapi.SearchQuery{Query: q} }
