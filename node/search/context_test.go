package search

import (
	"math"
	"math/rand/v2"
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

// TestOwnScoresAnyOrder checks the pruned search's on-demand scores,
// asked in ascending order (as the session context asks), in random
// order and again, against each slot's score summed from its terms'
// whole lists: the cursors it keeps between questions must not miss a
// posting behind them.
func TestOwnScoresAnyOrder(t *testing.T) {
	ix, c := buildIndex(3000, 5)
	rng := rand.New(rand.NewPCG(5, 6))
	avgdl := float64(ix.totalLen) / float64(ix.live)
	for range 30 {
		terms := slices.Compact(slices.Sorted(slices.Values(Tokenize(c.query() + " " + c.query()))))
		m, _ := ix.compile(&Filter{})
		want := func(s uint32) (float64, bool) {
			score, matched := 0.0, false
			for _, term := range terms {
				tid, ok := ix.dict[term]
				if !ok {
					continue
				}
				p := &ix.terms[tid]
				df := float64(ix.liveDF(p))
				idf := math.Log(1 + (float64(ix.live)-df+0.5)/(df+0.5))
				for it := (postingIter{buf: p.buf}); it.next(); {
					if it.slot == s {
						score += bm25(idf, float64(it.tf2)/2, float64(ix.dls[s]), avgdl)
						matched = true
					}
				}
			}
			return score, matched && !ix.isDead(s) && m.match(&ix.slots[s])
		}
		asks := make([]uint32, 60)
		for i := range asks {
			asks[i] = uint32(rng.IntN(len(ix.slots)))
		}
		sorted := slices.Sorted(slices.Values(asks))
		for _, order := range [][]uint32{sorted, asks, sorted} {
			own := ix.ownScores(&m, terms)
			for _, s := range order {
				gs, gok := own(s)
				ws, wok := want(s)
				if gok != wok || (wok && gs != ws) {
					t.Fatalf("%v: slot %d: %v %v, want %v %v", terms, s, gs, gok, ws, wok)
				}
			}
		}
	}
}
