package search

import (
	"slices"
	"testing"
)

func TestWithinMatchesAsSearchFilters(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "a", Namespace: "agent://bob", Type: "decision", Title: "one", CreatedAt: 1})
	ix.Put(Doc{ID: "b", Namespace: "agent://bob/x", Type: "note", Title: "one", CreatedAt: 2})
	ix.Put(Doc{ID: "c", Namespace: "team://t", Type: "decision", Title: "one", CreatedAt: 3})
	ix.Put(Doc{ID: "d", Namespace: "agent://bob", Type: "decision", Title: "one", CreatedAt: 4})
	ix.Delete("d")
	for _, f := range []Filter{
		{},
		{Namespaces: []string{"agent://bob"}, Subtree: true},
		{Namespaces: []string{"agent://bob"}},
		{Types: []string{"decision"}},
		{Types: []string{"nothing"}},
		{Accept: func(id string) bool { return id != "a" }},
	} {
		hits, _ := ix.Search("one", f, 0)
		var want []string
		for _, h := range hits {
			want = append(want, h.ID)
		}
		var got []string
		ix.Within(f, func(match func(string) bool) {
			for _, id := range []string{"a", "b", "c", "d", "zz"} {
				if match(id) {
					got = append(got, id)
				}
			}
		})
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("filter %+v: Within matched %v, Search found %v", f, got, want)
		}
	}
}
