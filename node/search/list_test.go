package search

import (
	"fmt"
	"slices"
	"testing"
)

func TestListOrderAndLimit(t *testing.T) {
	ix := New()
	// Out-of-order arrivals and a CreatedAt tie broken by ID.
	for _, d := range []struct {
		id string
		at int64
	}{{"c", 30}, {"a", 10}, {"e", 50}, {"b2", 20}, {"b1", 20}, {"d", 40}} {
		doc := base(d.id)
		doc.CreatedAt = d.at
		ix.Put(doc)
	}
	asc := []string{"a", "b1", "b2", "c", "d", "e"}
	if got := metaIDs(ix.List(Filter{}, false, 0)); !slices.Equal(got, asc) {
		t.Errorf("asc %v", got)
	}
	if got := metaIDs(ix.List(Filter{}, true, 3)); !slices.Equal(got, []string{"e", "d", "c"}) {
		t.Errorf("desc limit %v", got)
	}
	if got := metaIDs(ix.List(Filter{}, false, 2)); !slices.Equal(got, []string{"a", "b1"}) {
		t.Errorf("asc limit %v", got)
	}
	// Replacing with a new CreatedAt moves the doc.
	doc := base("a")
	doc.CreatedAt = 60
	ix.Put(doc)
	if got := metaIDs(ix.List(Filter{}, true, 1)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after move %v", got)
	}
}

func TestAround(t *testing.T) {
	ix := New()
	for i := range 10 {
		d := base(fmt.Sprint("m", i))
		d.CreatedAt = int64(i)
		if i%2 == 1 {
			d.Type = "fact"
		}
		ix.Put(d)
	}
	c, older, newer, ok := ix.Around("m5", Filter{}, 2, 3)
	if !ok || c.ID != "m5" || !slices.Equal(metaIDs(older), []string{"m3", "m4"}) || !slices.Equal(metaIDs(newer), []string{"m6", "m7", "m8"}) {
		t.Fatalf("around: %v %v %v %v", c.ID, metaIDs(older), metaIDs(newer), ok)
	}
	// Filtered: only decisions (even), center returned even though it is a fact.
	c, older, newer, _ = ix.Around("m5", Filter{Types: []string{"decision"}}, 2, 5)
	if c.ID != "m5" || !slices.Equal(metaIDs(older), []string{"m2", "m4"}) || !slices.Equal(metaIDs(newer), []string{"m6", "m8"}) {
		t.Fatalf("filtered: %v %v", metaIDs(older), metaIDs(newer))
	}
	// Edges and bounds.
	_, older, newer, _ = ix.Around("m0", Filter{}, 3, 1)
	if len(older) != 0 || !slices.Equal(metaIDs(newer), []string{"m1"}) {
		t.Fatalf("edge: %v %v", metaIDs(older), metaIDs(newer))
	}
	_, older, newer, _ = ix.Around("m5", Filter{Since: 4, Until: 6}, 5, 5)
	if !slices.Equal(metaIDs(older), []string{"m4"}) || !slices.Equal(metaIDs(newer), []string{"m6"}) {
		t.Fatalf("since/until: %v %v", metaIDs(older), metaIDs(newer))
	}
	if _, _, _, ok := ix.Around("nope", Filter{}, 1, 1); ok {
		t.Fatal("unknown id ok")
	}
}

func TestByTopicKey(t *testing.T) {
	ix := New()
	d := base("v1")
	d.TopicKey = "arch/db"
	ix.Put(d)
	if id, ok := ix.ByTopicKey("agent://bob", "arch/db"); !ok || id != "v1" {
		t.Fatalf("got %q %v", id, ok)
	}
	if _, ok := ix.ByTopicKey("agent://alice", "arch/db"); ok {
		t.Fatal("other namespace matched")
	}
	if _, ok := ix.ByTopicKey("agent://bob", ""); ok {
		t.Fatal("empty topic matched")
	}
	// Soft delete hides it; undelete brings it back.
	d.Deleted = true
	ix.Put(d)
	if _, ok := ix.ByTopicKey("agent://bob", "arch/db"); ok {
		t.Fatal("soft-deleted doc found")
	}
	d.Deleted = false
	ix.Put(d)
	d2 := base("v2")
	d2.TopicKey = "arch/db"
	d2.CreatedAt = d.CreatedAt + 1
	ix.Put(d2)
	if id, _ := ix.ByTopicKey("agent://bob", "arch/db"); id != "v2" {
		t.Fatalf("newest: %q", id)
	}
	ix.Delete("v2")
	if id, _ := ix.ByTopicKey("agent://bob", "arch/db"); id != "v1" {
		t.Fatalf("after delete: %q", id)
	}
	d.TopicKey = "other"
	ix.Put(d)
	if _, ok := ix.ByTopicKey("agent://bob", "arch/db"); ok {
		t.Fatal("retopicked doc found under old key")
	}
}

func TestCountAgreesWithList(t *testing.T) {
	ix := New()
	for i := range 50 {
		d := Doc{ID: fmt.Sprintf("d%02d", i), Namespace: "agent://a", Type: []string{"decision", "pattern"}[i%2],
			Title: "t", Content: "c", CreatedAt: int64(i + 1), Deleted: i%7 == 0}
		ix.Put(d)
	}
	for _, f := range []Filter{{}, {Types: []string{"decision"}}, {IncludeDeleted: true}, {Since: 10, Until: 20}, {Namespaces: []string{"agent://b"}}} {
		if got, want := ix.Count(f), len(ix.List(f, false, 0)); got != want {
			t.Fatalf("Count(%+v) = %d, List has %d", f, got, want)
		}
	}
	if ix.Count(Filter{}) != 42 {
		t.Fatalf("live non-deleted count %d, want 42", ix.Count(Filter{}))
	}
}
