package memory

import (
	"context"
	"fmt"
	"sync"
	"testing"
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
