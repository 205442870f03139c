package semantic_test

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/semantic"
	"github.com/mnemohq/mnemo/node/store"
)

// concepts is what the fake model "knows": words that mean the same share
// a dimension, so a paraphrase without a common word lands near.
var concepts = map[string]string{
	"car": "vehicle", "sedan": "vehicle", "automobile": "vehicle", "vehicle": "vehicle",
	"drive": "drive", "drives": "drive", "driving": "drive", "commute": "drive",
}

// bagOfConcepts is a deterministic embedding: each word (or its concept)
// hashed into one of 64 dimensions.
func bagOfConcepts(text string) []float64 {
	v := make([]float64, 64)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
		if c, ok := concepts[w]; ok {
			w = c
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%64]++
	}
	v[63] += 0.01 // never the zero vector
	return v
}

// fakeEmbedder embeds with bagOfConcepts; while gate is set it blocks
// every call until the gate closes (or ctx ends). It counts the texts it
// embedded.
type fakeEmbedder struct {
	mu    sync.Mutex
	gate  chan struct{}
	texts atomic.Int64
}

func (f *fakeEmbedder) block() {
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeEmbedder) release() {
	f.mu.Lock()
	close(f.gate)
	f.gate = nil
	f.mu.Unlock()
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	f.mu.Lock()
	g := f.gate
	f.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.texts.Add(int64(len(texts)))
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = bagOfConcepts(t)
	}
	return out, nil
}

var alice = memorytest.Agent("alice")

func open(t *testing.T, kv store.KV, cfg semantic.Config) (*memory.Service, *semantic.Semantic) {
	t.Helper()
	sem, err := semantic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := memorytest.Open(t, memory.Config{KV: kv, IsLocal: memorytest.AllLocal, Features: []memory.Feature{sem}})
	if semantic.Of(s) != sem {
		t.Fatal("Of does not find the attached feature")
	}
	return s, sem
}

func sync_(t testing.TB, sem *semantic.Semantic) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang detector, not a timing
	defer cancel()
	if err := sem.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

var corpus = []memapi.SaveRequest{
	{Title: "Commute", Content: "My sedan is a red Tesla, parked in bay 4."},
	{Title: "Lunch", Content: "Lunch is at noon on Fridays in the big room."},
	{Title: "Database", Content: "The postgres migration failed twice on the ledger table."},
	{Title: "Deploys", Content: "Deploys are frozen during the quarter close."},
}

const paraphrase = "what automobile do I own"

func TestHybridFindsWhatLexicalMisses(t *testing.T) {
	emb := &fakeEmbedder{}
	s, sem := open(t, nil, semantic.Config{Enabled: true, Model: "fake", Embedder: emb})
	for _, r := range corpus {
		memorytest.Save(t, s, alice, r)
	}
	sync_(t, sem)
	if st := sem.Stats(); st.Indexed != len(corpus) || st.Embedded != int64(len(corpus)) {
		t.Fatalf("after sync: %+v", st)
	}
	res, err := s.Search(context.Background(), alice, memapi.SearchQuery{Query: paraphrase})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].Memory.Title != "Commute" {
		t.Fatalf("hybrid search for %q: %v", paraphrase, memorytest.HitIDs(res))
	}

	// The same corpus without the feature: lexical search has nothing.
	plain, _ := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal})
	for _, r := range corpus {
		memorytest.Save(t, plain, alice, r)
	}
	if res, _ := plain.Search(context.Background(), alice, memapi.SearchQuery{Query: paraphrase}); len(res.Results) != 0 {
		t.Fatalf("lexical search found %v: the test's paraphrase shares a word", memorytest.HitIDs(res))
	}
}

func TestSavesDoNotWaitForTheEmbedder(t *testing.T) {
	emb := &fakeEmbedder{}
	emb.block()
	s, sem := open(t, nil, semantic.Config{Enabled: true, Model: "fake", Embedder: emb, Queue: 2, Batch: 2})
	for i := range 12 {
		r := corpus[i%len(corpus)]
		r.Content += strings.Repeat(" again", i) // distinct texts
		memorytest.Save(t, s, alice, r)          // returns although nothing can be embedded
	}
	if st := sem.Stats(); st.Dropped == 0 || st.Indexed != 0 {
		t.Fatalf("with the embedder blocked and a queue of 2: %+v", st)
	}
	emb.release()
	sync_(t, sem)
	if st := sem.Stats(); st.Indexed != 12 {
		t.Fatalf("after the embedder answered, the rescan should have caught up: %+v", st)
	}
}

func TestRetractedAndEditedMemories(t *testing.T) {
	emb := &fakeEmbedder{}
	s, sem := open(t, nil, semantic.Config{Enabled: true, Model: "fake", Embedder: emb})
	var ids []string
	for _, r := range corpus {
		ids = append(ids, memorytest.Save(t, s, alice, r).ID)
	}
	sync_(t, sem)
	ctx := context.Background()
	if err := s.Delete(ctx, alice, ids[0], true); err != nil {
		t.Fatal(err)
	}
	// Even before the worker forgets its vector, a retracted memory is
	// never a result: the ranking is filtered by the search index.
	res, _ := s.Search(ctx, alice, memapi.SearchQuery{Query: paraphrase})
	for _, h := range res.Results {
		if h.Memory.ID == ids[0] {
			t.Fatal("a retracted memory came back from hybrid search")
		}
	}
	sync_(t, sem)
	if st := sem.Stats(); st.Indexed != len(corpus)-1 {
		t.Fatalf("after a retract: %+v", st)
	}
	before := emb.texts.Load()
	newText := "We drive a blue automobile to the office now."
	if _, err := s.Update(ctx, alice, ids[1], memapi.UpdateRequest{Content: &newText}); err != nil {
		t.Fatal(err)
	}
	lunch := "Lunch"
	if _, err := s.Update(ctx, alice, ids[2], memapi.UpdateRequest{Title: &lunch}); err != nil { // title change: re-embedded
		t.Fatal(err)
	}
	imp := 0.9
	if _, err := s.Update(ctx, alice, ids[3], memapi.UpdateRequest{Importance: &imp}); err != nil { // text unchanged: not
		t.Fatal(err)
	}
	sync_(t, sem)
	if n := emb.texts.Load() - before; n != 2 {
		t.Fatalf("re-embedded %d texts after changing two texts and one importance", n)
	}
	res, _ = s.Search(ctx, alice, memapi.SearchQuery{Query: paraphrase})
	if len(res.Results) == 0 || res.Results[0].Memory.ID != ids[1] {
		t.Fatalf("the edited memory should now answer %q: %v", paraphrase, memorytest.HitIDs(res))
	}
}

func TestRestartLoadsVectorsAndBackfills(t *testing.T) {
	kv := store.NewMemKV()
	emb := &fakeEmbedder{}
	cfg := semantic.Config{Enabled: true, Model: "fake", Embedder: emb}
	s, sem := open(t, kv, cfg)
	for _, r := range corpus {
		memorytest.Save(t, s, alice, r)
	}
	sync_(t, sem)
	s.Close()

	// Reopened: the stored vectors are loaded, nothing is embedded again.
	kv = kv.Restart()
	emb2 := &fakeEmbedder{}
	cfg.Embedder = emb2
	s, sem = open(t, kv, cfg)
	sync_(t, sem)
	if st := sem.Stats(); st.Indexed != len(corpus) || emb2.texts.Load() != 0 {
		t.Fatalf("after a restart: %+v, %d texts embedded", st, emb2.texts.Load())
	}
	s.Close()

	// Memories saved while hybrid search was off are embedded at the next
	// start with it on; another model's vectors are not used.
	kv = kv.Restart()
	s, _ = open(t, kv, semantic.Config{})
	tyres := memorytest.Save(t, s, alice, memapi.SaveRequest{Content: "The vehicle needs new tyres before winter."}).ID
	s.Close()
	kv = kv.Restart()
	emb3 := &fakeEmbedder{}
	cfg.Embedder = emb3
	s, sem = open(t, kv, cfg)
	sync_(t, sem)
	if st := sem.Stats(); st.Indexed != len(corpus)+1 || emb3.texts.Load() != 1 {
		t.Fatalf("backfill after a restart: %+v, %d texts embedded", st, emb3.texts.Load())
	}
	s.Close()

	// A memory retracted while hybrid search was off loses its vector, on
	// disk too, at the next start with it on.
	kv = kv.Restart()
	s, _ = open(t, kv, semantic.Config{})
	if err := s.Delete(context.Background(), alice, tyres, true); err != nil {
		t.Fatal(err)
	}
	s.Close()
	kv = kv.Restart()
	s, sem = open(t, kv, cfg)
	sync_(t, sem)
	stored := 0
	s.Store().ScanSide("emb:fake", func(string, []byte) error { stored++; return nil })
	if st := sem.Stats(); st.Indexed != len(corpus) || stored != len(corpus) {
		t.Fatalf("after a retract while off: %+v, %d stored vectors", st, stored)
	}
	s.Close()
	kv = kv.Restart()
	emb4 := &fakeEmbedder{}
	s, sem = open(t, kv, semantic.Config{Enabled: true, Model: "other", Embedder: emb4})
	sync_(t, sem)
	if emb4.texts.Load() != int64(len(corpus)) {
		t.Fatalf("a new model should embed everything again: %d texts", emb4.texts.Load())
	}
}

func TestEmbedderDownKeepsSearchLexical(t *testing.T) {
	s, sem := open(t, nil, semantic.Config{Enabled: true, Model: "fake", Embedder: failing{}, Retry: time.Nanosecond})
	memorytest.Save(t, s, alice, corpus[2])
	sync_(t, sem)
	if st := sem.Stats(); st.Failures == 0 || st.Indexed != 0 {
		t.Fatalf("with a failing embedder: %+v", st)
	}
	res, err := s.Search(context.Background(), alice, memapi.SearchQuery{Query: "postgres migration"})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("lexical search with the embedder down: %v %v", res, err)
	}
}

type failing struct{}

func (failing) Embed(context.Context, []string) ([][]float64, error) {
	return nil, errors.New("connection refused")
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []semantic.Config{
		{Enabled: true, BaseURL: "ftp://x", Model: "m"},
		{Enabled: true, BaseURL: "http://x"},
		{Enabled: true, BaseURL: "http://x", Model: "m", RRFK: -1},
		{Enabled: true, BaseURL: "http://x", Model: "m", Queue: 1 << 30},
		{Enabled: true, BaseURL: "http://x", Model: "m", Batch: 100000},
	} {
		if _, err := semantic.New(c); !errors.Is(err, memapi.ErrInvalid) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	sem, err := semantic.New(semantic.Config{Enabled: true, BaseURL: "http://127.0.0.1:11434/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if c := sem.Config(); c.RRFK != 60 || c.Queue != semantic.DefaultQueue || c.Embedder == nil {
		t.Fatalf("defaults: %+v", c)
	}
}
