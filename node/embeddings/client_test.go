package embeddings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/similarity"
)

func TestEmbeddingsClient(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "m" {
			http.Error(w, "bad request", 400)
			return
		}
		var data []map[string]any
		for i, in := range req.Input {
			v := []float64{1, 0}
			if strings.Contains(in, "cat") {
				v = []float64{0.99, 0.1}
			}
			if strings.Contains(in, "stock") {
				v = []float64{0, 1}
			}
			data = append([]map[string]any{{"index": i, "embedding": v}}, data...) // out of order on purpose
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	cl := &Client{BaseURL: srv.URL + "/v1/", Model: "m", APIKey: "k", HTTP: srv.Client()}
	vecs, err := cl.Embed(context.Background(), []string{"a dog", "a cat", "stock prices"})
	if err != nil {
		t.Fatal(err)
	}
	if gotAuth != "Bearer k" || len(vecs) != 3 || similarity.Cosine(vecs[0], vecs[1]) < 0.9 || similarity.Cosine(vecs[0], vecs[2]) > 0.1 {
		t.Fatalf("vectors %v auth %q", vecs, gotAuth)
	}
	for name, h := range map[string]http.HandlerFunc{
		"500":     func(w http.ResponseWriter, r *http.Request) { http.Error(w, "model overloaded", 500) },
		"garbage": func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>not json") },
		"count":   func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) },
		"dims": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`)
		},
	} {
		bad := httptest.NewServer(h)
		_, err := (&Client{BaseURL: bad.URL, Model: "m", HTTP: bad.Client()}).Embed(context.Background(), []string{"x", "y"})
		bad.Close()
		if !errors.Is(err, ErrEndpoint) {
			t.Errorf("%s: %v", name, err)
		}
		if name == "500" && (err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "model overloaded")) {
			t.Errorf("500 error unclear: %v", err)
		}
	}
}

func TestExcerpt(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  two\nlines\t here ", 20, "two lines here"},
		{"héllo wörld", 5, "héllo…"},
		{"abc def", 4, "abc…"}, // the cut's trailing space goes
	} {
		if got := excerpt(c.in, c.n); got != c.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	for name, raw := range map[string]string{
		"repeated index": `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`,
		"index too big":  `{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[1]}]}`,
		"negative index": `{"data":[{"index":-1,"embedding":[1]},{"index":1,"embedding":[1]}]}`,
		"empty vector":   `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}`,
	} {
		if _, err := decode([]byte(raw), 2, "u"); !errors.Is(err, ErrEndpoint) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
