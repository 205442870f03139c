package search

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestExpand(t *testing.T) {
	if Expand(nil) != nil || Expand([]FeedbackDoc{{Score: 0, Text: "zero score"}}) != nil {
		t.Fatal("no positive score: want no expansion")
	}
	docs := []FeedbackDoc{
		{Score: 3, Text: "Caroline adopted a puppy from the shelter"},
		{Score: 1, Text: "The shelter puppy sleeps all day"},
	}
	exp := Expand(docs)
	var sum float64
	for _, e := range exp {
		sum += e.Weight
	}
	if math.Abs(sum-(1-feedbackQueryWeight)) > 1e-12 {
		t.Errorf("weights sum to %v, want %v", sum, 1-feedbackQueryWeight)
	}
	// Terms of both documents weigh most; then the better document's.
	if got := []string{exp[0].Text, exp[1].Text}; !slices.Equal(got, []string{"puppi", "shelter"}) {
		t.Errorf("heaviest terms %v, want puppi and shelter (both docs)", exp)
	}
	if i := slices.IndexFunc(exp, func(e Term) bool { return e.Text == "sleep" }); i < 0 || exp[i].Weight >= exp[2].Weight {
		t.Errorf("a term of the weaker doc only must weigh less than one of the stronger: %v", exp)
	}
	if again := Expand(slices.Clone(docs)); !slices.Equal(again, exp) {
		t.Errorf("not deterministic: %v then %v", exp, again)
	}
	var many string
	for i := range 50 {
		many += fmt.Sprintf(" word%c%c", 'a'+i/26, 'a'+i%26)
	}
	if n := len(Expand([]FeedbackDoc{{Score: 1, Text: many}})); n != feedbackTerms {
		t.Errorf("%d expansion terms, want at most %d", n, feedbackTerms)
	}
}

// TestSearchExpanded: expansion reorders the documents the query matches,
// never adds one, and leaves the total alone.
func TestSearchExpanded(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "pet", Content: "Caroline adopted a puppy from the shelter", CreatedAt: 1})
	ix.Put(Doc{ID: "walk", Content: "the puppy loves long walks at the shelter", CreatedAt: 2})
	ix.Put(Doc{ID: "car", Content: "Caroline bought a red car", CreatedAt: 3})
	ix.Put(Doc{ID: "other", Content: "shelter volunteers met on Friday", CreatedAt: 4})
	for i := range 20 {
		ix.Put(Doc{ID: fmt.Sprint("filler", i), Content: fmt.Sprintf("unrelated note number %d about cooking", i), CreatedAt: int64(10 + i)})
	}
	plain, total := ix.Search("Caroline puppy", Filter{}, 10)
	if got := ids(plain); !slices.Equal(got, []string{"pet", "car", "walk"}) && !slices.Equal(got, []string{"pet", "walk", "car"}) {
		t.Fatalf("plain: %v", got)
	}
	fb := []FeedbackDoc{{Score: plain[0].Score, Text: "Caroline adopted a puppy from the shelter"}}
	hits, total2 := ix.SearchExpanded("Caroline puppy", Expand(fb), Filter{}, 10)
	if total2 != total || !slices.Equal(ids(hits), []string{"pet", "walk", "car"}) {
		t.Errorf("expanded: %v total %d; want pet, walk (shares shelter), car; total %d", ids(hits), total2, total)
	}
	if plain2, _ := ix.SearchExpanded("Caroline puppy", nil, Filter{}, 10); !slices.Equal(plain2, plain) {
		t.Errorf("no expansion: %v, want Search's %v", plain2, plain)
	}
}
