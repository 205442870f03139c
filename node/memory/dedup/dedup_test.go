package dedup_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
)

// openTest opens a Service owned by alice on which every agent of
// memorytest.Principals is local, with the dedup feature of cfg attached.
func openTest(t *testing.T, cfg dedup.Config) (*memory.Service, *dedup.Dedup) {
	t.Helper()
	d, err := dedup.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal, Features: []memory.Feature{d}})
	if dedup.Of(s) != d {
		t.Fatal("Of does not find the attached feature")
	}
	return s, d
}

var agent = memorytest.Agent

func TestFindDuplicatesAcrossNamespaces(t *testing.T) {
	s, d := openTest(t, dedup.Config{OnSave: manualOnly})
	ctx := context.Background()
	memorytest.Create(t, s, "alice", "team://backend")
	memorytest.Grant(t, s, "alice", "team://backend", "agent://bob", "read,write")
	text := "Never use the ORM for the payments ledger: lazy loading issued one query per row and reconciliation took four hours."
	a, _ := s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: text})
	b, _ := s.Save(ctx, agent("bob"), memapi.SaveRequest{Namespace: "team://backend", Content: text + " Use plain SQL."})
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: "lunch is at noon on fridays in the big room"})
	res, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 1 || !slices.Contains([]string{res.Pairs[0].A.ID, res.Pairs[0].B.ID}, a.ID) ||
		!slices.Contains([]string{res.Pairs[0].A.ID, res.Pairs[0].B.ID}, b.ID) || !res.Pairs[0].Independent || res.Pairs[0].Method != "minhash" {
		t.Fatalf("pairs %+v", res)
	}
	// Bob cannot read alice's namespace: no pair for him.
	if r, _ := d.Find(ctx, agent("bob"), memapi.DuplicateQuery{}); len(r.Pairs) != 0 {
		t.Fatalf("bob sees %+v", r.Pairs)
	}
	if r, _ := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{Threshold: 0.99}); len(r.Pairs) != 0 {
		t.Fatalf("threshold ignored: %+v", r.Pairs)
	}
}

func TestMergeDuplicates(t *testing.T) {
	s, d := openTest(t, dedup.Config{OnSave: manualOnly})
	ctx := context.Background()
	memorytest.Create(t, s, "alice", "team://backend")
	memorytest.Grant(t, s, "alice", "team://backend", "agent://bob", "read,write")
	memorytest.Grant(t, s, "alice", "team://backend", "agent://carol", "read")
	conf := 0.9
	a, _ := s.Save(ctx, agent("alice"), memapi.SaveRequest{Namespace: "team://backend", Content: "retry payments with backoff", Confidence: &conf})
	b, _ := s.Save(ctx, agent("bob"), memapi.SaveRequest{Namespace: "team://backend", Content: "retry payments with backoff."})
	own, _ := s.Save(ctx, agent("bob"), memapi.SaveRequest{Content: "retry payments with exponential backoff"})
	req := memapi.MergeRequest{IDs: []string{a.ID, b.ID, own.ID}, Namespace: "team://backend"}
	if _, err := d.Merge(ctx, agent("carol"), req); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("merge with read only: %v", err)
	}
	if _, err := d.Merge(ctx, agent("alice"), req); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("merge with an unreadable id: %v", err)
	}
	res, err := d.Merge(ctx, agent("bob"), req)
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
	gone, err := s.Get(ctx, agent("bob"), b.ID, true)
	if err != nil || gone.DeletedAt == nil || gone.Lineage != a.ID {
		t.Fatalf("merged memory %+v %v", gone, err)
	}
	if m, _ := s.Get(ctx, agent("bob"), own.ID, false); m.DeletedAt != nil {
		t.Fatal("a memory outside the shared namespace was deleted")
	}
}

func TestMergeConfidenceRules(t *testing.T) {
	s, d := openTest(t, dedup.Config{OnSave: manualOnly})
	ctx := context.Background()
	memorytest.Create(t, s, "alice", "team://backend")
	low := 0.5
	a, _ := s.Save(ctx, agent("alice"), memapi.SaveRequest{Namespace: "team://backend", Content: "x one", Confidence: &low})
	b, _ := s.Save(ctx, agent("alice"), memapi.SaveRequest{Namespace: "team://backend", Content: "x one."})
	// Same author: not independent, no boost.
	res, err := d.Merge(ctx, agent("alice"), memapi.MergeRequest{IDs: []string{a.ID, b.ID}, Namespace: "team://backend"})
	if err != nil || res.Independent || res.ConfidenceAfter != 0.5 {
		t.Fatalf("same author %+v %v", res, err)
	}
	// A shared copy of one's own memory is not independent either.
	memorytest.Grant(t, s, "alice", "team://backend", "agent://bob", "read,write")
	c, _ := s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: "y two"})
	cp, err := s.Share(ctx, agent("alice"), memapi.ShareRequest{ID: c.ID, Namespace: "team://backend"})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := s.Save(ctx, agent("bob"), memapi.SaveRequest{Namespace: "team://backend", Content: "y two.", Confidence: &low})
	res, err = d.Merge(ctx, agent("bob"), memapi.MergeRequest{IDs: []string{e.ID, cp.Memory.ID, c.ID}, Namespace: "team://backend"})
	if err == nil {
		t.Fatal("bob merged with alice's private memory")
	}
	res, err = d.Merge(ctx, agent("bob"), memapi.MergeRequest{IDs: []string{e.ID, cp.Memory.ID}, Namespace: "team://backend"})
	if err != nil || !res.Independent || res.ConfidenceAfter != 0.7 {
		t.Fatalf("bob + alice's copy %+v %v", res, err)
	}
	if _, err := d.Merge(ctx, agent("bob"), memapi.MergeRequest{IDs: []string{e.ID}, Namespace: "team://backend"}); !errors.Is(err, memapi.ErrInvalid) {
		t.Fatalf("one id: %v", err)
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
	s, d := openTest(t, dedup.Config{Embeddings: dedup.EmbeddingsConfig{Enabled: true, BaseURL: srv.URL, Model: "m"}, OnSave: manualOnly})
	ctx := context.Background()
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: "the ledger is append-only"})
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Namespace: "agent://alice/notes", Content: "never rewrite ledger rows"})
	res, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{})
	if err != nil || len(res.Pairs) != 1 || res.Pairs[0].Method != "embeddings" || res.Warning != "" {
		t.Fatalf("%+v %v", res, err)
	}
	srv.Close()
	d.ForgetVectors()
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: "new text forces a call"})
	if res, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{}); err != nil || res.Warning == "" {
		t.Fatalf("a dead endpoint gives no warning: %+v %v", res, err)
	}
}

// fakeEmbedder maps texts containing a word to a vector; it counts calls.
type fakeEmbedder struct {
	calls int
	err   error
	short bool // answer one vector too few
}

func (f *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]float64, 0, len(texts))
	for _, t := range texts {
		v := []float64{0, 1}
		if strings.Contains(t, "ledger") {
			v = []float64{1, 0.05}
		}
		out = append(out, v)
	}
	if f.short {
		out = out[1:]
	}
	return out, nil
}

// TestFindDuplicatesWithAnEmbedder: an Embedder passed in the
// configuration is used without any endpoint configured, with the default
// threshold; vectors are cached by content; a failing or short answer
// skips the pass with a warning.
func TestFindDuplicatesWithAnEmbedder(t *testing.T) {
	emb := &fakeEmbedder{}
	s, d := openTest(t, dedup.Config{Embedder: emb, OnSave: manualOnly})
	if d.Config().Embeddings.Threshold != dedup.DefaultEmbeddingsThreshold {
		t.Fatalf("threshold %v", d.Config().Embeddings.Threshold)
	}
	ctx := context.Background()
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: "the ledger is append-only"})
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Namespace: "agent://alice/notes", Content: "never rewrite ledger rows"})
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Namespace: "agent://alice/other", Content: "lunch at noon"})
	res, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{})
	if err != nil || len(res.Pairs) != 1 || res.Pairs[0].Method != "embeddings" || res.Warning != "" || emb.calls != 1 {
		t.Fatalf("%+v %v calls=%d", res, err, emb.calls)
	}
	if _, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{}); err != nil || emb.calls != 1 {
		t.Fatalf("cached vectors asked for again: calls=%d %v", emb.calls, err)
	}
	s.Save(ctx, agent("alice"), memapi.SaveRequest{Content: "a new text"})
	emb.err = errors.New("boom")
	if res, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{}); err != nil || !strings.Contains(res.Warning, "boom") {
		t.Fatalf("failing embedder: %+v %v", res, err)
	}
	emb.err, emb.short = nil, true
	if res, err := d.Find(ctx, agent("alice"), memapi.DuplicateQuery{}); err != nil || !strings.Contains(res.Warning, "0 vectors for 1 texts") {
		t.Fatalf("short answer: %+v %v", res, err)
	}
}

// TestNewBuildsTheClientOnce: New builds the endpoint's client; a
// configuration New already filled keeps its client when built again (the
// node validates settings once and attaches what New returned).
func TestNewBuildsTheClientOnce(t *testing.T) {
	d, err := dedup.New(dedup.Config{Embeddings: dedup.EmbeddingsConfig{Enabled: true, BaseURL: "http://127.0.0.1:1/v1", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	first := d.Config().Embedder
	if first == nil {
		t.Fatal("no client built from an enabled endpoint")
	}
	if again, err := dedup.New(d.Config()); err != nil || again.Config().Embedder != first {
		t.Fatalf("a second New replaced the client: %v", err)
	}
	if off, err := dedup.New(dedup.Config{}); err != nil || off.Config().Embedder != nil {
		t.Fatal("an embedder without configuration")
	}
	if _, err := dedup.New(dedup.Config{Embeddings: dedup.EmbeddingsConfig{Enabled: true, BaseURL: "ftp://x", Model: "m"}}); !errors.Is(err, memapi.ErrInvalid) {
		t.Fatal("bad base URL accepted")
	}
}
