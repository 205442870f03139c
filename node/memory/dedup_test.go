package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/similarity"
)

func TestFindDuplicatesAcrossNamespaces(t *testing.T) {
	s, _ := openAccess(t, "", 0)
	ctx := context.Background()
	accCreate(t, s, "alice", "team://backend")
	accGrant(t, s, "alice", "team://backend", "agent://bob", "read,write")
	text := "Never use the ORM for the payments ledger: lazy loading issued one query per row and reconciliation took four hours."
	a, _ := s.Save(ctx, accAgent("alice"), SaveRequest{Content: text})
	b, _ := s.Save(ctx, accAgent("bob"), SaveRequest{Namespace: "team://backend", Content: text + " Use plain SQL."})
	s.Save(ctx, accAgent("alice"), SaveRequest{Content: "lunch is at noon on fridays in the big room"})
	res, err := s.FindDuplicates(ctx, accAgent("alice"), DuplicateQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 1 || !slices.Contains([]string{res.Pairs[0].A.ID, res.Pairs[0].B.ID}, a.ID) ||
		!slices.Contains([]string{res.Pairs[0].A.ID, res.Pairs[0].B.ID}, b.ID) || !res.Pairs[0].Independent || res.Pairs[0].Method != "minhash" {
		t.Fatalf("pairs %+v", res)
	}
	// Bob cannot read alice's namespace: no pair for him.
	if r, _ := s.FindDuplicates(ctx, accAgent("bob"), DuplicateQuery{}); len(r.Pairs) != 0 {
		t.Fatalf("bob sees %+v", r.Pairs)
	}
	if r, _ := s.FindDuplicates(ctx, accAgent("alice"), DuplicateQuery{Threshold: 0.99}); len(r.Pairs) != 0 {
		t.Fatalf("threshold ignored: %+v", r.Pairs)
	}
}

func TestMergeDuplicates(t *testing.T) {
	s, _ := openAccess(t, "", 0)
	ctx := context.Background()
	accCreate(t, s, "alice", "team://backend")
	accGrant(t, s, "alice", "team://backend", "agent://bob", "read,write")
	accGrant(t, s, "alice", "team://backend", "agent://carol", "read")
	conf := 0.9
	a, _ := s.Save(ctx, accAgent("alice"), SaveRequest{Namespace: "team://backend", Content: "retry payments with backoff", Confidence: &conf})
	b, _ := s.Save(ctx, accAgent("bob"), SaveRequest{Namespace: "team://backend", Content: "retry payments with backoff."})
	own, _ := s.Save(ctx, accAgent("bob"), SaveRequest{Content: "retry payments with exponential backoff"})
	req := MergeRequest{IDs: []string{a.ID, b.ID, own.ID}, Namespace: "team://backend"}
	if _, err := s.MergeDuplicates(ctx, accAgent("carol"), req); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("merge with read only: %v", err)
	}
	if _, err := s.MergeDuplicates(ctx, accAgent("alice"), req); !errors.Is(err, ErrNotFound) {
		t.Fatalf("merge with an unreadable id: %v", err)
	}
	res, err := s.MergeDuplicates(ctx, accAgent("bob"), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Memory.ID != a.ID || !res.Independent || res.ConfidenceAfter != 1 || res.Memory.Confidence != 1 {
		t.Fatalf("survivor %+v", res)
	}
	for _, p := range []string{"author:agent://alice", "author:agent://bob", "source:" + b.ID, "source:" + own.ID} {
		if !slices.Contains(res.Memory.Provenance, p) {
			t.Errorf("provenance %v lacks %s", res.Memory.Provenance, p)
		}
	}
	if !slices.Equal(res.Merged, []string{b.ID}) || !slices.Equal(res.Contributors, []string{own.ID}) {
		t.Fatalf("merged %v contributors %v", res.Merged, res.Contributors)
	}
	gone, err := s.Get(ctx, accAgent("bob"), b.ID, true)
	if err != nil || gone.DeletedAt == nil || gone.Lineage != a.ID {
		t.Fatalf("merged memory %+v %v", gone, err)
	}
	if m, _ := s.Get(ctx, accAgent("bob"), own.ID, false); m.DeletedAt != nil {
		t.Fatal("a memory outside the shared namespace was deleted")
	}
}

func TestMergeConfidenceRules(t *testing.T) {
	s, _ := openAccess(t, "", 0)
	ctx := context.Background()
	accCreate(t, s, "alice", "team://backend")
	low := 0.5
	a, _ := s.Save(ctx, accAgent("alice"), SaveRequest{Namespace: "team://backend", Content: "x one", Confidence: &low})
	b, _ := s.Save(ctx, accAgent("alice"), SaveRequest{Namespace: "team://backend", Content: "x one."})
	// Same author: not independent, no boost.
	res, err := s.MergeDuplicates(ctx, accAgent("alice"), MergeRequest{IDs: []string{a.ID, b.ID}, Namespace: "team://backend"})
	if err != nil || res.Independent || res.ConfidenceAfter != 0.5 {
		t.Fatalf("same author %+v %v", res, err)
	}
	// A shared copy of one's own memory is not independent either.
	accGrant(t, s, "alice", "team://backend", "agent://bob", "read,write")
	c, _ := s.Save(ctx, accAgent("alice"), SaveRequest{Content: "y two"})
	cp, err := s.Share(ctx, accAgent("alice"), ShareRequest{ID: c.ID, Namespace: "team://backend"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Save(ctx, accAgent("bob"), SaveRequest{Namespace: "team://backend", Content: "y two.", Confidence: &low})
	res, err = s.MergeDuplicates(ctx, accAgent("bob"), MergeRequest{IDs: []string{d.ID, cp.Memory.ID, c.ID}, Namespace: "team://backend"})
	if err == nil {
		t.Fatal("bob merged with alice's private memory")
	}
	res, err = s.MergeDuplicates(ctx, accAgent("bob"), MergeRequest{IDs: []string{d.ID, cp.Memory.ID}, Namespace: "team://backend"})
	if err != nil || !res.Independent || res.ConfidenceAfter != 0.7 {
		t.Fatalf("bob + alice's copy %+v %v", res, err)
	}
	if _, err := s.MergeDuplicates(ctx, accAgent("bob"), MergeRequest{IDs: []string{d.ID}, Namespace: "team://backend"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("one id: %v", err)
	}
}

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
	cl := &EmbeddingsClient{BaseURL: srv.URL + "/v1/", Model: "m", APIKey: "k", HTTP: srv.Client()}
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
		_, err := (&EmbeddingsClient{BaseURL: bad.URL, Model: "m", HTTP: bad.Client()}).Embed(context.Background(), []string{"x", "y"})
		bad.Close()
		if !errors.Is(err, ErrEmbeddings) {
			t.Errorf("%s: %v", name, err)
		}
		if name == "500" && (err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "model overloaded")) {
			t.Errorf("500 error unclear: %v", err)
		}
	}
}

func TestFindDuplicatesWithEmbeddings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		var data []map[string]any
		for i, in := range req.Input {
			v := []float64{0, 1}
			if strings.Contains(in, "ledger") {
				v = []float64{1, 0.05}
			}
			data = append(data, map[string]any{"index": i, "embedding": v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	clk := &fakeClock{}
	s, err := Open(Config{Agent: accAgent("alice").Principal, Now: clk.now,
		Dedup: DedupConfig{Embeddings: EmbeddingsConfig{Enabled: true, BaseURL: srv.URL, Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Save(ctx, accAgent("alice"), SaveRequest{Content: "the ledger is append-only"})
	s.Save(ctx, accAgent("alice"), SaveRequest{Namespace: "agent://alice/notes", Content: "never rewrite ledger rows"})
	res, err := s.FindDuplicates(ctx, accAgent("alice"), DuplicateQuery{})
	if err != nil || len(res.Pairs) != 1 || res.Pairs[0].Method != "embeddings" || res.Warning != "" {
		t.Fatalf("%+v %v", res, err)
	}
	srv.Close()
	s.dd.vecs = nil
	s.Save(ctx, accAgent("alice"), SaveRequest{Content: "new text forces a call"})
	if res, err := s.FindDuplicates(ctx, accAgent("alice"), DuplicateQuery{}); err != nil || res.Warning == "" {
		t.Fatalf("a dead endpoint gives no warning: %+v %v", res, err)
	}
}
