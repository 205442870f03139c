package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// TestConcurrentSaveAndSearch runs writers and readers at once (meant for
// -race); every save that was acknowledged must be found afterwards.
func TestConcurrentSaveAndSearch(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	const writers, perWriter, readers = 8, 40, 4
	type saved struct{ id, token string }
	acked := make(chan saved, writers*perWriter)
	var wg, rg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, writers+readers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				token := fmt.Sprintf("tok%dx%d", w, i)
				req := SaveRequest{Content: "concurrent note " + token, Tags: []string{fmt.Sprintf("w%d", w)}}
				if i%5 == 0 {
					req.TopicKey = fmt.Sprintf("topic/%d", w) // upserts race with plain saves
					req.Content = "topic note " + token
				}
				r, err := s.Save(ctx, c, req)
				if err != nil {
					errs <- err
					return
				}
				if req.TopicKey == "" {
					acked <- saved{r.ID, token}
				}
			}
		})
	}
	for range readers {
		rg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := s.Search(ctx, c, SearchQuery{Query: "concurrent note", Limit: 20}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Context(ctx, c, ContextQuery{MaxTokens: 500}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Stats(ctx, c, ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(acked)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := 0
	for a := range acked {
		n++
		res, err := s.Search(ctx, c, SearchQuery{Query: a.token})
		if err != nil || len(res.Results) != 1 || res.Results[0].Memory.ID != a.id {
			t.Fatalf("acknowledged save %s (%s) not found: %+v %v", a.id, a.token, res, err)
		}
	}
	st, _ := s.Stats(ctx, c, "")
	if want := n + writers; st.Memories != want {
		t.Fatalf("%d memories, want %d plain saves plus one per topic key", st.Memories, want)
	}
}

// TestConcurrentSavesAckedIffDurable cuts the power while many writers
// save (their saves share commits): after a restart the store holds
// exactly the saves that were acknowledged — none lost, none kept that
// its writer was told had failed.
func TestConcurrentSavesAckedIffDurable(t *testing.T) {
	mem := store.NewMemKV()
	agent := namespace.MustParse("agent://alice")
	s, err := Open(Config{KV: mem, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	c := Caller{Principal: agent}
	ctx := context.Background()
	const writers, perWriter, cutAfter = 16, 30, 100
	var acked sync.Map // id → token
	var nAcked atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				token := fmt.Sprintf("tok%dx%d", w, i)
				r, err := s.Save(ctx, c, SaveRequest{Content: "note " + token})
				if err != nil {
					continue // refused: must not be stored
				}
				acked.Store(r.ID, token)
				if nAcked.Add(1) == cutAfter {
					mem.PowerCut()
				}
			}
		})
	}
	wg.Wait()
	s2, err := Open(Config{KV: mem.Restart(), Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	want := 0
	acked.Range(func(id, token any) bool {
		want++
		m, err := s2.Get(ctx, c, id.(string), false)
		if err != nil || !strings.HasSuffix(m.Content, token.(string)) {
			t.Errorf("acknowledged save %s lost: %+v %v", id, m, err)
		}
		return true
	})
	st, err := s2.Stats(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Memories != want || want < cutAfter || want == writers*perWriter {
		t.Fatalf("%d memories stored after the cut, %d acknowledged (cut after %d of %d)", st.Memories, want, cutAfter, writers*perWriter)
	}
}

// stallObserver holds, once, the reindex of a memory whose content holds
// match: after the write committed, before the search index has it.
type stallObserver struct {
	match         string
	held, release chan struct{}
	once          sync.Once
}

func (o *stallObserver) Attach(c *Core) { c.Register(o) }

func (o *stallObserver) ObserveMemory(_, _ string, rec *crdt.Record) {
	if strings.Contains(schema.Str(rec, schema.FieldContent), o.match) {
		o.once.Do(func() {
			close(o.held)
			<-o.release
		})
	}
}

// TestSearchIndexKeepsTheLastWrite: two updates of one memory commit in
// order, but the first one's reindex runs last. The index must hold what
// the second left, not the first's older record.
func TestSearchIndexKeepsTheLastWrite(t *testing.T) {
	obs := &stallObserver{match: "aardvark", held: make(chan struct{}), release: make(chan struct{})}
	agent := namespace.MustParse("agent://alice")
	s, err := Open(Config{Agent: agent, Features: []Feature{obs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := Caller{Principal: agent}
	ctx := context.Background()
	r, err := s.Save(ctx, c, SaveRequest{Content: "the original note"})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		content := "first edit mentions aardvark"
		_, err := s.Update(ctx, c, r.ID, UpdateRequest{Content: &content})
		first <- err
	}()
	<-obs.held // the first update is committed; its reindex waits
	second := "second edit mentions zebra"
	if _, err := s.Update(ctx, c, r.ID, UpdateRequest{Content: &second}); err != nil {
		t.Fatal(err)
	}
	close(obs.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if m, err := s.Get(ctx, c, r.ID, false); err != nil || m.Content != second {
		t.Fatalf("stored: %+v %v", m, err)
	}
	if res, err := s.Search(ctx, c, SearchQuery{Query: "aardvark"}); err != nil || res.Total != 0 {
		t.Fatalf("search finds the overwritten content: %+v %v", res, err)
	}
	if res, err := s.Search(ctx, c, SearchQuery{Query: "zebra"}); err != nil || res.Total != 1 || res.Results[0].Memory.Content != second {
		t.Fatalf("search misses the last write: %+v %v", res, err)
	}
}

// stallViewer titles every memory with its current label. Once, viewing a
// memory whose content holds match, it reads the label and then waits
// before it returns the view made with it.
type stallViewer struct {
	match         string
	label         atomic.Value // string
	held, release chan struct{}
	stalled       atomic.Bool
	core          *Core
}

func (v *stallViewer) Attach(c *Core) { v.core = c; c.Register(v) }

func (v *stallViewer) View(_, _ string, m Memory, _ *viewFlags) Memory {
	label := v.label.Load().(string)
	if strings.Contains(m.Content, v.match) && v.stalled.CompareAndSwap(false, true) {
		close(v.held)
		<-v.release
	}
	m.Title = label
	return m
}

// TestSearchIndexKeepsTheLastView: a save's view is made before the index
// lock; when a feature changes what views depend on and re-views the
// memory (Core.Reindex) while that view is being made, the index must
// hold the new view, not the one made before the change.
func TestSearchIndexKeepsTheLastView(t *testing.T) {
	v := &stallViewer{match: "aardvark", held: make(chan struct{}), release: make(chan struct{})}
	v.label.Store("walrus")
	agent := namespace.MustParse("agent://alice")
	s, err := Open(Config{Agent: agent, Features: []Feature{v}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := Caller{Principal: agent}
	ctx := context.Background()
	saved := make(chan SaveResult, 1)
	go func() {
		r, err := s.Save(ctx, c, SaveRequest{Content: "a note on the aardvark"})
		if err != nil {
			t.Error(err)
		}
		saved <- r
	}()
	<-v.held // committed; its view for the index is made with "walrus" and waits
	v.label.Store("narwhal")
	if n := s.ix.Len(); n != 0 {
		t.Fatalf("%d memories indexed before the save's view was made", n)
	}
	id := ""
	if err := s.st.Scan("", func(ns, rid string, _ *crdt.Record) error {
		if ns == agent.String() {
			id = rid
		}
		return nil
	}); err != nil || id == "" {
		t.Fatalf("the save is not stored: %v", err)
	}
	v.core.Reindex(agent.String(), id)
	close(v.release)
	<-saved
	if res, err := s.Search(ctx, c, SearchQuery{Query: "walrus"}); err != nil || res.Total != 0 {
		t.Fatalf("search finds the view made before the change: %+v %v", res, err)
	}
	if res, err := s.Search(ctx, c, SearchQuery{Query: "narwhal"}); err != nil || res.Total != 1 {
		t.Fatalf("search misses the view after the change: %+v %v", res, err)
	}
}

// countingViewer counts the views made and titles each memory with the
// number of the view that made it.
type countingViewer struct{ n atomic.Int64 }

func (v *countingViewer) Attach(c *Core) { c.Register(v) }

func (v *countingViewer) View(_, _ string, m Memory, _ *viewFlags) Memory {
	m.Title = fmt.Sprint("view ", v.n.Add(1))
	return m
}

// TestSaveAnswersWithTheIndexedView: a save views its memory once, for the
// index, and answers with that view.
func TestSaveAnswersWithTheIndexedView(t *testing.T) {
	v := &countingViewer{}
	agent := namespace.MustParse("agent://alice")
	s, err := Open(Config{Agent: agent, Features: []Feature{v}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := Caller{Principal: agent}
	ctx := context.Background()
	before := v.n.Load()
	r, err := s.Save(ctx, c, SaveRequest{Content: "a note on the narwhal"})
	if err != nil {
		t.Fatal(err)
	}
	if n := v.n.Load() - before; n != 1 {
		t.Fatalf("a save made %d views, want 1", n)
	}
	res, err := s.Search(ctx, c, SearchQuery{Query: "narwhal"})
	if err != nil || res.Total != 1 || res.Results[0].Memory.ID != r.ID {
		t.Fatalf("search: %+v %v", res, err)
	}
	want := fmt.Sprint("view ", before+1)
	if r.Title != want {
		t.Fatalf("the save answered with %q, want the indexed view %q", r.Title, want)
	}
}
