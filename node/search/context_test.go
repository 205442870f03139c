package search

import (
	"slices"
	"testing"
)

// The reply saved right after a matched memory of its session ranks above
// an equally matching memory elsewhere; without a session it does not;
// a neighbour that matches no query term is not returned.
func TestSessionContext(t *testing.T) {
	docs := func(session string) []Doc {
		return []Doc{
			{ID: "ask", Namespace: "a", Content: "how was the sailing club?", CreatedAt: 1, SessionID: session},
			{ID: "other-session", Namespace: "a", Content: "the deploy failed again", CreatedAt: 2, SessionID: "other"},
			{ID: "reply", Namespace: "a", Content: "we won the race by a minute", CreatedAt: 3, SessionID: session},
			{ID: "aside", Namespace: "a", Content: "sunny today", CreatedAt: 4, SessionID: session},
			{ID: "elsewhere", Namespace: "a", Content: "race day", CreatedAt: 5},
			{ID: "other-namespace", Namespace: "b", Content: "sailing race", CreatedAt: 6, SessionID: session},
		}
	}
	for _, tc := range []struct {
		session string
		want    []string
	}{
		{"chat", []string{"ask", "reply", "elsewhere"}},
		{"", []string{"ask", "elsewhere", "reply"}},
	} {
		ix := New()
		for _, d := range docs(tc.session) {
			ix.Put(d)
		}
		hits, total := ix.Search("sailing race", Filter{Namespaces: []string{"a"}}, 10)
		var got []string
		for _, h := range hits {
			got = append(got, h.ID)
		}
		if !slices.Equal(got, tc.want) || total != 3 {
			t.Errorf("session %q: got %v (total %d), want %v (total 3)", tc.session, got, total, tc.want)
		}
	}
}
