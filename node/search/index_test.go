package search

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func metaIDs(ms []Meta) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func score(t *testing.T, hits []Hit, id string) float64 {
	t.Helper()
	for _, h := range hits {
		if h.ID == id {
			return h.Score
		}
	}
	t.Fatalf("%s not in hits %v", id, hits)
	return 0
}

func TestBM25HandComputed(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "a", Title: "apple pie", Content: "apple banana cherry", Tags: []string{"fruit"}})
	ix.Put(Doc{ID: "b", Title: "banana split", Content: "cherry cherry"})
	ix.Put(Doc{ID: "c", Content: "durian", Tags: []string{"apple"}})

	// Weighted lengths: title×3 + content + tags×1.5.
	dlA, dlB, dlC := 3*2+3+1.5*1, 3*2+2.0, 1+1.5*1
	avgdl := (dlA + dlB + dlC) / 3
	const k1, b = 1.2, 0.75
	idf := func(df float64) float64 { return math.Log(1 + (3-df+0.5)/(df+0.5)) }
	term := func(df, tf, dl float64) float64 {
		return idf(df) * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl))
	}

	hits, total := ix.Search("apple", Filter{}, 10)
	// a's title occurrence (×3) just outweighs c's short length.
	if total != 2 || !slices.Equal(ids(hits), []string{"a", "c"}) {
		t.Fatalf("apple: %v total %d", hits, total)
	}
	for id, want := range map[string]float64{
		"a": term(2, 3*1+1, dlA),
		"c": term(2, 1.5, dlC),
	} {
		if got := score(t, hits, id); math.Abs(got-want) > 1e-12 {
			t.Errorf("apple %s: score %v, want %v", id, got, want)
		}
	}

	// Two terms sum; "cherry": a tf 1, b tf 2; "banana": a content, b title.
	hits, _ = ix.Search("cherry banana", Filter{}, 10)
	wantB := term(2, 2, dlB) + term(2, 3, dlB)
	wantA := term(2, 1, dlA) + term(2, 1, dlA)
	if got := score(t, hits, "b"); math.Abs(got-wantB) > 1e-12 {
		t.Errorf("b: %v want %v", got, wantB)
	}
	if got := score(t, hits, "a"); math.Abs(got-wantA) > 1e-12 {
		t.Errorf("a: %v want %v", got, wantA)
	}
}

func TestTitleOutranksContent(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "content", Title: "notes", Content: "we talked about many things including the migration plan and other items on the list"})
	ix.Put(Doc{ID: "title", Title: "migration", Content: "we talked about many things including the plan and other items on the list today"})
	hits, _ := ix.Search("migration", Filter{}, 10)
	if !slices.Equal(ids(hits), []string{"title", "content"}) {
		t.Fatalf("got %v", hits)
	}
}

func TestRareTermWeighsMore(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "rare", Content: "common zebra"})
	ix.Put(Doc{ID: "plain", Content: "common giraffe"})
	for i := range 8 {
		ix.Put(Doc{ID: fmt.Sprint("f", i), Content: "common filler"})
	}
	hits, _ := ix.Search("common zebra", Filter{}, 3)
	if hits[0].ID != "rare" {
		t.Fatalf("got %v", hits)
	}
	// zebra alone must score more than common alone in equally long docs.
	z, _ := ix.Search("zebra", Filter{}, 1)
	c, _ := ix.Search("common", Filter{IncludeDeleted: true}, 20)
	if z[0].Score <= score(t, c, "plain") {
		t.Fatalf("idf: zebra %v <= common %v", z[0].Score, score(t, c, "plain"))
	}
}

func TestTFSaturation(t *testing.T) {
	ix := New()
	// Equal lengths (8 tokens), growing frequency of "redis".
	for tf := 1; tf <= 4; tf++ {
		words := []string{"redis"}
		for range tf - 1 {
			words = append(words, "redis")
		}
		for len(words) < 8 {
			words = append(words, fmt.Sprint("pad", len(words)))
		}
		ix.Put(Doc{ID: fmt.Sprint("tf", tf), Content: fmt.Sprint(words)})
	}
	ix.Put(Doc{ID: "other", Content: "unrelated words"})
	hits, _ := ix.Search("redis", Filter{}, 10)
	if !slices.Equal(ids(hits), []string{"tf4", "tf3", "tf2", "tf1"}) {
		t.Fatalf("order %v", hits)
	}
	s := func(id string) float64 { return score(t, hits, id) }
	d1, d2, d3 := s("tf2")-s("tf1"), s("tf3")-s("tf2"), s("tf4")-s("tf3")
	if !(d1 > d2 && d2 > d3 && d3 > 0) {
		t.Fatalf("no saturation: increments %v %v %v", d1, d2, d3)
	}
	if s("tf4") >= 4*s("tf1") {
		t.Fatalf("linear tf: %v vs %v", s("tf4"), s("tf1"))
	}
}

func TestTiesNewerFirstThenID(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "b", Content: "same text", CreatedAt: 5})
	ix.Put(Doc{ID: "a", Content: "same text", CreatedAt: 5})
	ix.Put(Doc{ID: "c", Content: "same text", CreatedAt: 9})
	hits, _ := ix.Search("same", Filter{}, 10)
	if !slices.Equal(ids(hits), []string{"c", "a", "b"}) {
		t.Fatalf("got %v", ids(hits))
	}
	hits, total := ix.Search("same", Filter{}, 2)
	if total != 3 || !slices.Equal(ids(hits), []string{"c", "a"}) {
		t.Fatalf("limit: %v %d", ids(hits), total)
	}
}

func TestPutReplacesAndDelete(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "m", Title: "old words", Tags: []string{"t1"}, TopicKey: "k", Namespace: "n"})
	ix.Put(Doc{ID: "m", Title: "new words", Tags: []string{"t2"}, TopicKey: "k2", Namespace: "n"})
	if ix.Len() != 1 {
		t.Fatalf("Len %d", ix.Len())
	}
	if h, n := ix.Search("old", Filter{}, 10); n != 0 {
		t.Fatalf("old term still matches: %v", h)
	}
	if h, _ := ix.Search("new", Filter{}, 10); !slices.Equal(ids(h), []string{"m"}) {
		t.Fatalf("new: %v", h)
	}
	if h, _ := ix.Search("words", Filter{Tags: []string{"t1"}}, 10); len(h) != 0 {
		t.Fatalf("old tag matches: %v", h)
	}
	if _, ok := ix.ByTopicKey("n", "k"); ok {
		t.Fatal("old topic key still found")
	}
	if m, ok := ix.Meta("m"); !ok || m.TopicKey != "k2" || !slices.Equal(m.Tags, []string{"t2"}) {
		t.Fatalf("meta %+v", m)
	}
	if ns, ok := ix.Namespace("m"); !ok || ns != "n" {
		t.Fatalf("namespace %q %v", ns, ok)
	}
	ix.Delete("m")
	ix.Delete("unknown")
	if ix.Len() != 0 {
		t.Fatalf("Len %d", ix.Len())
	}
	if h, n := ix.Search("new words", Filter{IncludeDeleted: true, IncludeHidden: true}, 10); n != 0 {
		t.Fatalf("deleted doc matches: %v", h)
	}
	if _, ok := ix.Meta("m"); ok {
		t.Fatal("meta after delete")
	}
	if _, ok := ix.Namespace("m"); ok {
		t.Fatal("namespace after delete")
	}
	if _, ok := ix.ByTopicKey("n", "k2"); ok {
		t.Fatal("topic after delete")
	}
}

// TestPutMetadataOnly covers the in-place catalog update of a Put that
// keeps the text: no dead slot, the new metadata filters and the topic key
// moves with the namespace.
func TestPutMetadataOnly(t *testing.T) {
	ix := New()
	d := Doc{ID: "a", Namespace: "agent://x", Type: "fact", Title: "postgres", Content: "migration plan",
		Tags: []string{"db"}, TopicKey: "t/1", CreatedAt: 10, UpdatedAt: 10}
	ix.Put(d)
	ix.Put(Doc{ID: "b", Namespace: "agent://x", Type: "fact", Title: "other", Content: "postgres", CreatedAt: 11})
	before, _ := ix.Search("postgres migration", Filter{}, 10)

	d.Deleted, d.UpdatedAt = true, 20
	ix.Put(d)
	if st := ix.Stats(); st.DeadSlots != 0 || st.Slots != 2 {
		t.Fatalf("soft delete made a new slot: %+v", st)
	}
	if hits, n := ix.Search("migration", Filter{}, 10); n != 0 {
		t.Fatalf("deleted doc still found: %v", hits)
	}
	hits, _ := ix.Search("postgres migration", Filter{IncludeDeleted: true}, 10)
	if len(hits) != 2 || hits[0] != before[0] || hits[1] != before[1] {
		t.Fatalf("scores changed: %v, before %v", hits, before)
	}
	if m, _ := ix.Meta("a"); !m.Deleted || m.UpdatedAt != 20 {
		t.Fatalf("meta %+v", m)
	}
	if _, ok := ix.ByTopicKey("agent://x", "t/1"); ok {
		t.Fatal("a deleted doc answers its topic key")
	}

	d.Deleted, d.Namespace, d.Type = false, "agent://y", "decision"
	ix.Put(d)
	if id, ok := ix.ByTopicKey("agent://y", "t/1"); !ok || id != "a" {
		t.Fatalf("topic key not moved: %q %v", id, ok)
	}
	if _, n := ix.Search("migration", Filter{Namespaces: []string{"agent://x"}}, 10); n != 0 {
		t.Fatal("old namespace still matches")
	}
	if _, n := ix.Search("migration", Filter{Namespaces: []string{"agent://y"}, Types: []string{"decision"}}, 10); n != 1 {
		t.Fatal("new namespace and type do not match")
	}

	d.Content = "migration plan, revised"
	ix.Put(d)
	if _, n := ix.Search("revised", Filter{}, 10); n != 1 {
		t.Fatal("a text change must re-index")
	}
}

// TestInflectionsMatch: an agent asks in other inflections than the memory
// was written in; the stem is what matches.
func TestInflectionsMatch(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "adopt", Title: "Caroline", Content: "We finally adopted two kids from the agency."})
	ix.Put(Doc{ID: "other", Title: "Melanie", Content: "Painting sunsets by the lake again."})
	for _, q := range []string{"adoption of a kid", "is she adopting?", "ADOPTS children"} {
		if hits, _ := ix.Search(q, Filter{}, 10); !slices.Equal(ids(hits), []string{"adopt"}) {
			t.Errorf("%q: got %v, want the adoption memory only", q, ids(hits))
		}
	}
	if hits, _ := ix.Search("painted sunset", Filter{}, 10); !slices.Equal(ids(hits), []string{"other"}) {
		t.Errorf("painted sunset: got %v", ids(hits))
	}
}
