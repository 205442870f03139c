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

// What else an index holds does not change which neighbours the session
// context reaches: documents of another namespace written between a
// session's memories (as on a node that also holds that namespace) leave
// the ranking as it is, though they outnumber the walk's bound. (Scores
// differ: N and avgdl count every document the index holds.)
func TestSessionContextIgnoresOtherNamespaces(t *testing.T) {
	own := []Doc{
		{ID: "ask", Namespace: "a", Content: "how was the sailing club?", CreatedAt: 1000, SessionID: "chat"},
		{ID: "reply", Namespace: "a", Content: "we won the race by a minute", CreatedAt: 3000, SessionID: "chat"},
		{ID: "elsewhere", Namespace: "a", Content: "race day", CreatedAt: 5000},
	}
	alone, crowded := New(), New()
	for _, d := range own {
		alone.Put(d)
		crowded.Put(d)
	}
	for i := range 2 * contextScan {
		crowded.Put(Doc{ID: "b" + string(rune('A'+i)), Namespace: "b", Content: "unrelated note", CreatedAt: int64(1001 + i), SessionID: "chat"})
	}
	f := Filter{Namespaces: []string{"a"}}
	ids := func(hits []Hit) (out []string) {
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	wantHits, _ := alone.Search("sailing race", f, 10)
	gotHits, _ := crowded.Search("sailing race", f, 10)
	got, want := ids(gotHits), ids(wantHits)
	if !slices.Equal(got, want) || !slices.Equal(want, []string{"ask", "reply", "elsewhere"}) {
		t.Fatalf("with another namespace between: %v; alone: %v (reply second)", got, want)
	}
}
