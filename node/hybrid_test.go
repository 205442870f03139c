package node

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/semantic"
)

// embeddingStub is an OpenAI-compatible /v1/embeddings server with a
// deterministic model: a bag of hashed words in 64 dimensions, where words
// of one meaning share a dimension, so a paraphrase without a common word
// still lands near. While blocked it holds every request until released.
type embeddingStub struct {
	srv       *httptest.Server
	mu        sync.Mutex
	gate      chan struct{}
	documents atomic.Int64 // texts embedded that are not queries ("q: …")
}

var stubConcepts = map[string]string{
	"car": "vehicle", "sedan": "vehicle", "automobile": "vehicle", "vehicle": "vehicle",
}

func stubVector(text string) []float64 {
	v := make([]float64, 64)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		if c, ok := stubConcepts[w]; ok {
			w = c
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%64]++
	}
	v[63] += 0.01
	return v
}

func newEmbeddingStub(t *testing.T) *embeddingStub {
	st := &embeddingStub{}
	st.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "stub-model" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		st.mu.Lock()
		g := st.gate
		st.mu.Unlock()
		if g != nil {
			select {
			case <-g:
			case <-r.Context().Done():
				return
			}
		}
		data := make([]map[string]any, len(req.Input))
		for i, in := range req.Input {
			if !strings.HasPrefix(in, "q: ") {
				st.documents.Add(1)
			}
			data[i] = map[string]any{"index": i, "embedding": stubVector(in)}
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(st.srv.Close)
	return st
}

func (st *embeddingStub) block() {
	st.mu.Lock()
	st.gate = make(chan struct{})
	st.mu.Unlock()
}

func (st *embeddingStub) release() {
	st.mu.Lock()
	if st.gate != nil {
		close(st.gate)
		st.gate = nil
	}
	st.mu.Unlock()
}

func syncVectors(t *testing.T, n *Node) semantic.Stats {
	t.Helper()
	sem := semantic.Of(n.Service())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // detects a hang; asserts no time
	defer cancel()
	if err := sem.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return sem.Stats()
}

// serve opens a node on cfg and serves it until the test ends or Close.
func serve(t *testing.T, cfg Config) (*Node, *client.Client) {
	t.Helper()
	n := mustOpen(t, cfg)
	go n.Serve(t.Context())
	c, err := client.New(n.Addr(), n.Token())
	if err != nil {
		t.Fatal(err)
	}
	return n, c
}

func TestHybridSearchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	stub := newEmbeddingStub(t)
	t.Cleanup(stub.release) // before the server closes (cleanups run last first)
	corpus := []memapi.SaveRequest{
		{Title: "Commute", Content: "My sedan is a red Tesla, parked in bay 4."},
		{Title: "Lunch", Content: "Lunch is at noon on Fridays in the big room."},
		{Title: "Database", Content: "The postgres migration failed twice on the ledger table."},
	}
	const paraphrase = "which automobile do I own"

	// 1. A node without hybrid search: memories saved, the paraphrase missed.
	cfg, _ := testConfig(t, dir)
	n, c := serve(t, cfg)
	for _, r := range corpus {
		if _, err := c.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := c.Search(ctx, memapi.SearchQuery{Query: paraphrase}); err != nil || len(res.Results) != 0 {
		t.Fatalf("lexical search for %q: %v %v", paraphrase, res, err)
	}
	n.Close()

	// 2. Restarted with hybrid search (config.json) while the model is
	// stuck: the start-up backfill waits on it, saves do not.
	settings := `{"hybrid_search": {"enabled": true, "base_url": "` + stub.srv.URL + `/v1", "model": "stub-model", "query_prefix": "q: ", "queue": 2}}`
	if err := os.WriteFile(filepath.Join(dir, SettingsFile), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	stub.block()
	n, c = serve(t, cfg)
	for i := range 5 {
		if _, err := c.Save(ctx, memapi.SaveRequest{Content: "note " + strings.Repeat("x", i+2) + " about the weekly sync"}); err != nil {
			t.Fatalf("save while the embedder is stuck: %v", err)
		}
	}
	if st := semantic.Of(n.Service()).Stats(); st.Indexed != 0 {
		t.Fatalf("vectors indexed while the embedder is stuck: %+v", st)
	}
	stub.release()
	if st := syncVectors(t, n); st.Indexed != len(corpus)+5 {
		t.Fatalf("after the embedder answered: %+v (want every memory, the full queue's rescanned)", st)
	}
	res, err := c.Search(ctx, memapi.SearchQuery{Query: paraphrase})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].Memory.Title != "Commute" {
		var got []string
		for _, h := range res.Results {
			got = append(got, h.Memory.Title)
		}
		t.Fatalf("hybrid search for %q: %v", paraphrase, got)
	}
	n.Close()

	// 3. Restarted again (flags instead of config.json): the stored vectors
	// are loaded, no memory is embedded again.
	os.Remove(filepath.Join(dir, SettingsFile))
	before := stub.documents.Load()
	cfg.EmbeddingsURL, cfg.EmbeddingsModel = stub.srv.URL+"/v1", "stub-model"
	n, _ = serve(t, cfg)
	if st := syncVectors(t, n); st.Indexed != len(corpus)+5 || stub.documents.Load() != before {
		t.Fatalf("after a restart: %+v, %d texts embedded again", st, stub.documents.Load()-before)
	}
}

func TestHybridSearchConfigRefused(t *testing.T) {
	cfg, _ := testConfig(t, t.TempDir())
	cfg.EmbeddingsURL = "http://127.0.0.1:1/v1" // no model
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "model") {
		t.Fatalf("an endpoint without a model: %v", err)
	}
	cfg.EmbeddingsURL, cfg.EmbeddingsModel = "ftp://x", "m"
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Fatalf("a non-http endpoint: %v", err)
	}
}
