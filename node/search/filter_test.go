package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// base is a doc every field test starts from; each case changes one field
// on the "other" doc, so removing that field's check makes it match too.
func base(id string) Doc {
	return Doc{
		ID: id, Namespace: "agent://bob", Type: "decision", Project: "p", Scope: "team",
		SubjectType: "repo", SubjectID: "r1", SessionID: "s1", Channel: "cli",
		Title: "kafka", Tags: []string{"ops", "infra"}, CreatedAt: 100,
	}
}

func TestFilterFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Doc)
		f      Filter
	}{
		{"Namespaces", func(d *Doc) { d.Namespace = "agent://alice" }, Filter{Namespaces: []string{"agent://bob"}}},
		{"Types", func(d *Doc) { d.Type = "fact" }, Filter{Types: []string{"decision"}}},
		{"Tags", func(d *Doc) { d.Tags = []string{"ops"} }, Filter{Tags: []string{"infra"}}},
		{"Project", func(d *Doc) { d.Project = "q" }, Filter{Project: "p"}},
		{"Scope", func(d *Doc) { d.Scope = "org" }, Filter{Scope: "team"}},
		{"SubjectType", func(d *Doc) { d.SubjectType = "user" }, Filter{SubjectType: "repo"}},
		{"SubjectID", func(d *Doc) { d.SubjectID = "r2" }, Filter{SubjectID: "r1"}},
		{"SessionID", func(d *Doc) { d.SessionID = "s2" }, Filter{SessionID: "s1"}},
		{"Channel", func(d *Doc) { d.Channel = "mcp" }, Filter{Channel: "cli"}},
		{"Since", func(d *Doc) { d.CreatedAt = 99 }, Filter{Since: 100}},
		{"Until", func(d *Doc) { d.CreatedAt = 101 }, Filter{Until: 100}},
		{"Deleted", func(d *Doc) { d.Deleted = true }, Filter{}},
		{"Hidden", func(d *Doc) { d.Hidden = true }, Filter{}},
		{"Accept", func(d *Doc) {}, Filter{Accept: func(id string) bool { return id == "want" }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New()
			ix.Put(base("want"))
			other := base("other")
			tc.change(&other)
			ix.Put(other)
			hits, total := ix.Search("kafka", tc.f, 10)
			if total != 1 || !slices.Equal(ids(hits), []string{"want"}) {
				t.Errorf("Search: %v total %d", ids(hits), total)
			}
			if got := metaIDs(ix.List(tc.f, false, 0)); !slices.Equal(got, []string{"want"}) {
				t.Errorf("List: %v", got)
			}
			// The unfiltered-by-this-field query sees both, so the case
			// really exercises the field.
			all := Filter{IncludeDeleted: true, IncludeHidden: true}
			if _, n := ix.Search("kafka", all, 10); n != 2 {
				t.Errorf("without filter: %d", n)
			}
		})
	}
}

func TestIncludeDeletedHidden(t *testing.T) {
	ix := New()
	d := base("del")
	d.Deleted = true
	ix.Put(d)
	h := base("hid")
	h.Hidden = true
	ix.Put(h)
	ix.Put(base("ok"))
	for _, tc := range []struct {
		f    Filter
		want []string
	}{
		{Filter{}, []string{"ok"}},
		{Filter{IncludeDeleted: true}, []string{"del", "ok"}},
		{Filter{IncludeHidden: true}, []string{"hid", "ok"}},
		{Filter{IncludeDeleted: true, IncludeHidden: true}, []string{"del", "hid", "ok"}},
	} {
		hits, _ := ix.Search("kafka", tc.f, 10)
		got := ids(hits)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v want %v", tc.f, got, tc.want)
		}
	}
	if ix.Len() != 3 {
		t.Errorf("Len %d", ix.Len())
	}
}

// TestFlagsEditedInPlace soft-deletes, hides and restores documents by
// Puts that keep their text (the catalog entry is rewritten in place), on
// either side of a compaction, and checks that a search without a filter
// (which reads the catalog only for flagged documents) and one that
// includes them agree with the flags each time.
func TestFlagsEditedInPlace(t *testing.T) {
	ix := New()
	const n = 130 // slots across three bitmap words
	flags := make([]uint8, n)
	put := func(i int) {
		d := base(fmt.Sprint("d", i))
		d.Deleted, d.Hidden = flags[i]&flagDeleted != 0, flags[i]&flagHidden != 0
		ix.Put(d)
	}
	for i := range n {
		put(i)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for round := range 6 {
		for range 40 {
			i := rng.IntN(n)
			flags[i] = uint8(rng.IntN(4))
			put(i)
		}
		if round == 3 {
			ix.Compact()
		}
		for _, f := range []Filter{{}, {IncludeDeleted: true}, {IncludeHidden: true}, {IncludeDeleted: true, IncludeHidden: true}} {
			var want []string
			for i, fl := range flags {
				if (fl&flagDeleted == 0 || f.IncludeDeleted) && (fl&flagHidden == 0 || f.IncludeHidden) {
					want = append(want, fmt.Sprint("d", i))
				}
			}
			for _, limit := range []int{0, n} {
				hits, total := ix.Search("kafka", f, limit)
				got := ids(hits)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) || total != len(want) {
					t.Fatalf("round %d, %+v, limit %d: %d hits (total %d), want %d", round, f, limit, len(got), total, len(want))
				}
			}
		}
	}
}

// TestFilterNamingEveryValue: a filter naming every namespace there is,
// as the node's owner searches, matches as none does, and matches nothing
// of a namespace it leaves out, the empty one included.
func TestFilterNamingEveryValue(t *testing.T) {
	ix := New()
	for i, ns := range []string{"a", "b", "c"} {
		d := base(ns)
		d.Namespace, d.Type = ns, []string{"fact", "note", "fact"}[i]
		ix.Put(d)
		if i == 1 {
			d.ID, d.Deleted = "b-deleted", true
			ix.Put(d)
		}
	}
	for _, tc := range []struct {
		f    Filter
		want []string
	}{
		{Filter{}, []string{"a", "b", "c"}},
		{Filter{Namespaces: []string{"a", "b", "c"}}, []string{"a", "b", "c"}},
		{Filter{Namespaces: []string{"c", "a"}}, []string{"a", "c"}},
		{Filter{Namespaces: []string{"a", "b", "c"}, IncludeDeleted: true}, []string{"a", "b", "b-deleted", "c"}},
	} {
		for _, limit := range []int{0, 10} {
			hits, _ := ix.Search("kafka", tc.f, limit)
			got := ids(hits)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%+v limit %d: %v want %v", tc.f, limit, got, tc.want)
			}
		}
	}
	d := base("none")
	d.Namespace = ""
	ix.Put(d)
	for _, compact := range []bool{false, true} {
		if compact {
			ix.Compact()
		}
		hits, _ := ix.Search("kafka", Filter{Namespaces: []string{"a", "b", "c"}}, 10)
		if got := ids(hits); slices.Contains(got, "none") || len(got) != 3 {
			t.Errorf("every namespace but the empty one (compacted %v): %v", compact, got)
		}
	}
}

func TestSubtree(t *testing.T) {
	ix := New()
	for i, ns := range []string{"agent://bob", "agent://bob/x", "agent://bob/x/y", "agent://bobby", "agent://alice"} {
		d := base(ns)
		d.Namespace = ns
		d.CreatedAt = int64(i)
		ix.Put(d)
	}
	list := func(f Filter) []string { return metaIDs(ix.List(f, false, 0)) }
	if got := list(Filter{Namespaces: []string{"agent://bob"}}); !slices.Equal(got, []string{"agent://bob"}) {
		t.Errorf("exact: %v", got)
	}
	want := []string{"agent://bob", "agent://bob/x", "agent://bob/x/y"}
	if got := list(Filter{Namespaces: []string{"agent://bob"}, Subtree: true}); !slices.Equal(got, want) {
		t.Errorf("subtree: %v", got)
	}
	if got := list(Filter{Namespaces: []string{"agent://bob/x"}, Subtree: true}); !slices.Equal(got, want[1:]) {
		t.Errorf("subtree x: %v", got)
	}
	// A parent that holds no document itself still roots a subtree.
	if got := list(Filter{Namespaces: []string{"agent://bob/x/"}, Subtree: true}); !slices.Equal(got, want[2:]) {
		t.Errorf("trailing slash: %v", got)
	}
	if got := list(Filter{Namespaces: []string{"agent://nobody"}, Subtree: true}); len(got) != 0 {
		t.Errorf("unknown: %v", got)
	}
}

func TestTagsAllOfAndUnknownValues(t *testing.T) {
	ix := New()
	a := base("a")
	a.Tags = []string{"x", "y", "z"}
	ix.Put(a)
	b := base("b")
	b.Tags = []string{"x"}
	ix.Put(b)
	if got := metaIDs(ix.List(Filter{Tags: []string{"x", "z"}}, false, 0)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("all-of: %v", got)
	}
	if got := ix.List(Filter{Tags: []string{"x", "nope"}}, false, 0); len(got) != 0 {
		t.Errorf("unknown tag: %v", got)
	}
	if got := ix.List(Filter{Project: "nope"}, false, 0); len(got) != 0 {
		t.Errorf("unknown project: %v", got)
	}
}

func TestSinceUntilInclusive(t *testing.T) {
	ix := New()
	for i := int64(1); i <= 5; i++ {
		d := base(string(rune('a' + i - 1)))
		d.CreatedAt = i * 10
		ix.Put(d)
	}
	for _, tc := range []struct {
		since, until int64
		want         []string
	}{
		{20, 40, []string{"b", "c", "d"}},
		{20, 0, []string{"b", "c", "d", "e"}},
		{0, 20, []string{"a", "b"}},
		{21, 39, []string{"c"}},
		{41, 39, nil},
	} {
		f := Filter{Since: tc.since, Until: tc.until}
		if got := metaIDs(ix.List(f, false, 0)); !slices.Equal(got, tc.want) {
			t.Errorf("List %d..%d: %v want %v", tc.since, tc.until, got, tc.want)
		}
		hits, _ := ix.Search("kafka", f, 10)
		got := ids(hits)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Search %d..%d: %v want %v", tc.since, tc.until, got, tc.want)
		}
	}
}

func TestAcceptSeesOnlyOtherwiseMatching(t *testing.T) {
	ix := New()
	ix.Put(base("a"))
	o := base("b")
	o.Type = "fact"
	ix.Put(o)
	var asked []string
	f := Filter{Types: []string{"decision"}, Accept: func(id string) bool { asked = append(asked, id); return true }}
	ix.Search("kafka", f, 10)
	if !slices.Equal(asked, []string{"a"}) {
		t.Fatalf("Accept asked about %v", asked)
	}
}

// TestBlockedChannels: a doc blocked for a channel leaves queries for that
// channel (Search, List, Around, Count) and stays in every other query,
// across a compaction that renumbers the interned channels.
func TestBlockedChannels(t *testing.T) {
	ix := New()
	b := base("blk")
	b.Blocked = []string{"cli", "web"}
	ix.Put(b)
	ix.Put(base("ok"))
	other := base("gone")
	other.Channel = "x-only"
	ix.Put(other)
	ix.Delete("gone") // a dead slot, so Compact renumbers channel ids
	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			f    Filter
			want []string
		}{
			{Filter{}, []string{"blk", "ok"}},
			{Filter{Channel: "cli"}, []string{"ok"}},
			{Filter{Channel: "cli", IncludeHidden: true, IncludeDeleted: true}, []string{"ok"}},
			{Filter{Project: "p"}, []string{"blk", "ok"}},
		} {
			hits, _ := ix.Search("kafka", tc.f, 10)
			got := ids(hits)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: search %+v: %v want %v", when, tc.f, got, tc.want)
			}
			if n := ix.Count(tc.f); n != len(tc.want) {
				t.Errorf("%s: count %+v: %d want %d", when, tc.f, n, len(tc.want))
			}
			if l := ix.List(tc.f, false, 0); len(l) != len(tc.want) {
				t.Errorf("%s: list %+v: %d want %d", when, tc.f, len(l), len(tc.want))
			}
		}
		if m, _ := ix.Meta("blk"); !slices.Equal(m.Blocked, []string{"cli", "web"}) {
			t.Errorf("%s: meta blocked %v", when, m.Blocked)
		}
		if _, older, newer, _ := ix.Around("ok", Filter{Channel: "cli"}, 5, 5); len(older)+len(newer) != 0 {
			t.Errorf("%s: around shows the blocked doc: %v %v", when, older, newer)
		}
	}
	check("before compaction")
	ix.Compact()
	check("after compaction")
	ix.Put(base("blk")) // re-put without the block
	if n := ix.Count(Filter{Channel: "cli"}); n != 2 {
		t.Errorf("unblocked doc: count %d want 2", n)
	}
}
