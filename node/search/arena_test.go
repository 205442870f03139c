package search

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"testing"
)

// TestCatalogListsEditedInPlace: metadata edits that shrink, grow and
// empty a document's tags and blocked channels leave Meta, the tag filter
// and the channel filter right after each edit, and the lists the slots
// no longer use are reclaimed (compaction) instead of growing with the
// edits.
func TestCatalogListsEditedInPlace(t *testing.T) {
	ix := New()
	for i := range 50 {
		ix.Put(Doc{ID: fmt.Sprintf("other%02d", i), Content: "filler", Tags: []string{"x", "y"}})
	}
	shapes := [][]string{{"a", "b", "c"}, {"b"}, {"a", "b", "c", "d", "e"}, nil, {"e", "e", "a"}}
	// Tags are indexed text: changing them makes a new slot. Blocked
	// channels are metadata, edited in place: the second half of the
	// rounds keeps the tags.
	for round := range 6000 {
		tags := shapes[round%len(shapes)]
		if round >= 1000 {
			tags = shapes[0]
		}
		blocked := shapes[(round/3)%len(shapes)]
		ix.Put(Doc{ID: "doc", Content: "the same text", Tags: tags, Channel: "c", Blocked: blocked})
		m, ok := ix.Meta("doc")
		want := slices.Compact(slices.Clone(tags))
		if !ok || !slices.Equal(m.Tags, want) || !slices.Equal(m.Blocked, slices.Compact(slices.Clone(blocked))) {
			t.Fatalf("round %d: Meta tags %q blocked %q, want %q and %q", round, m.Tags, m.Blocked, want, blocked)
		}
		for _, tag := range []string{"a", "b", "c", "d", "e"} {
			hits, _ := ix.Search("same", Filter{Tags: []string{tag}}, 10)
			if got, in := len(hits) == 1, slices.Contains(tags, tag); got != in {
				t.Fatalf("round %d: tag %q filter finds doc %v, tags %q", round, tag, got, tags)
			}
		}
		hits, _ := ix.Search("same", Filter{Channel: "c"}, 10)
		if got, out := len(hits) == 1, slices.Contains(blocked, "c"); got == out {
			t.Fatalf("round %d: channel c filter finds doc %v, blocked %q", round, got, blocked)
		}
	}
	if st := ix.Stats(); st.Docs != 51 {
		t.Fatalf("%d documents, want 51", st.Docs)
	}
	// The blocked edits appended up to 5 ids each time the list grew
	// (~2,000 times); what stays is bounded by compaction: at most twice
	// what is in use, plus 1024.
	used := 50*2 + 3 + 5
	if len(ix.lists) > 2*used+1024+10 {
		t.Fatalf("lists hold %d ids after the edits, %d in use: not reclaimed", len(ix.lists), used)
	}
}

// TestIDsSurviveCompaction: ids read back right, and sort right, after
// compactions rebuilt the arena; an id handed out is not the arena's
// memory; ids longer than a chunk and empty ones work.
func TestIDsSurviveCompaction(t *testing.T) {
	ix := New()
	long := strings.Repeat("L", idChunk+10)
	ix.Put(Doc{ID: long, Content: "word"})
	ix.Put(Doc{ID: "", Content: "word"})
	for i := range 3000 {
		ix.Put(Doc{ID: fmt.Sprintf("id%04d", i), Content: "word", CreatedAt: int64(i)})
		if i%2 == 1 {
			ix.Delete(fmt.Sprintf("id%04d", i-1)) // compactions along the way
		}
	}
	if _, ok := ix.Meta(long); !ok {
		t.Fatal("the long id is lost")
	}
	if _, ok := ix.Meta(""); !ok {
		t.Fatal("the empty id is lost")
	}
	hits, total := ix.Search("word", Filter{}, 3)
	if total != 1502 || !slices.Equal(ids(hits), []string{"id2999", "id2997", "id2995"}) {
		t.Fatalf("after compactions: %v total %d", ids(hits), total)
	}
	for i := 1; i < 3000; i += 2 {
		id := fmt.Sprintf("id%04d", i)
		if m, ok := ix.Meta(id); !ok || m.ID != id {
			t.Fatalf("%s reads back as %q, %v", id, m.ID, ok)
		}
	}
	if len(ix.ids.chunks) > 2+1 { // the long id's chunk, and the live ids' (~12 KB)
		t.Fatalf("%d id chunks after compaction", len(ix.ids.chunks))
	}
}

// TestIDHashClash: ids whose hashes collide (forced here: with 64-bit
// hashes it does not happen by chance in a test) are each found, replaced,
// deleted and kept through compaction.
func TestIDHashClash(t *testing.T) {
	ix := New()
	for i := range 20 { // so that no delete below compacts
		ix.Put(Doc{ID: fmt.Sprintf("filler%d", i), Content: "filler"})
	}
	ix.Put(Doc{ID: "a", Content: "word one"})
	sa, _ := ix.slotOf("a")
	// "b" hashes where "a" is: its entry there is a's slot.
	ix.byID[maphash.String(ix.seed, "b")] = sa
	ix.Put(Doc{ID: "b", Content: "word two"})
	if len(ix.clash) != 1 {
		t.Fatalf("b not in clash: %v", ix.clash)
	}
	check := func(want ...string) {
		t.Helper()
		hits, _ := ix.Search("word", Filter{}, 10)
		got := ids(hits)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("search finds %v, want %v", got, want)
		}
		for _, id := range want {
			if m, ok := ix.Meta(id); !ok || m.ID != id {
				t.Fatalf("Meta(%q) = %q, %v", id, m.ID, ok)
			}
		}
	}
	check("a", "b")
	ix.Put(Doc{ID: "b", Content: "word three"}) // replaced: still in clash
	ix.Put(Doc{ID: "a", Content: "word four"})
	check("a", "b")
	if hits, _ := ix.Search("three", Filter{}, 10); !slices.Equal(ids(hits), []string{"b"}) {
		t.Fatalf("three: %v", ids(hits))
	}
	ix.Delete("b") // from clash
	check("a")
	if _, ok := ix.Meta("b"); ok {
		t.Fatal("b still there after its delete")
	}
	ix.Put(Doc{ID: "b", Content: "word five"})
	check("a", "b")
	ix.Compact()
	check("a", "b")
	ix.Delete("a")
	check("b")
	ix.Delete("b")
	check()
	if _, ok := ix.Meta("b"); ok {
		t.Fatal("b still there")
	}
}
