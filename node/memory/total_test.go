package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/search"
)

// TestSearchTotalPastExact checks what a search's total means to a caller:
// exact below memapi.SearchTotalExact matches, and past it at least that
// many, shown as a bound ("1000+"), while the hits are still the best.
func TestSearchTotalPastExact(t *testing.T) {
	if search.ExactTotal != memapi.SearchTotalExact {
		t.Fatalf("search.ExactTotal %d, memapi.SearchTotalExact %d: the API documents the index's threshold", search.ExactTotal, memapi.SearchTotalExact)
	}
	s, _, c := openTest(t, "")
	ctx := context.Background()
	n := memapi.SearchTotalExact + 200
	for i := range n {
		content := fmt.Sprintf("common word number %d", i)
		if i%100 == 0 {
			content += " rare rare rare"
		}
		mustSave(t, s, c, SaveRequest{Type: "fact", Content: content})
	}
	res, err := s.Search(ctx, c, SearchQuery{Query: "rare", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != n/100 || res.TotalText() != fmt.Sprint(n/100) || len(res.Results) != 5 {
		t.Fatalf("rare: total %d (%s), %d hits; want %d exactly and 5 hits", res.Total, res.TotalText(), len(res.Results), n/100)
	}
	res, err = s.Search(ctx, c, SearchQuery{Query: "common rare", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total < memapi.SearchTotalExact || res.Total > n || !strings.HasSuffix(res.TotalText(), "+") {
		t.Fatalf("common rare: total %d (%s); want between %d and %d, shown as a bound", res.Total, res.TotalText(), memapi.SearchTotalExact, n)
	}
	for _, h := range res.Results {
		if !strings.Contains(h.Memory.Content, "rare") {
			t.Fatalf("common rare: hit %q lacks the rare word that ranks first", h.Memory.Content)
		}
	}
}
