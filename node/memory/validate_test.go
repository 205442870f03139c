package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// rejectFixture is a service holding a little of everything, so that a
// rejected request has something it could wrongly change.
type rejectFixture struct {
	s                 *Service
	clk               *fakeClock
	c                 Caller
	withSubject, bare string // live memories, one with subject_type/id set
	deleted           string // a soft-deleted memory
}

func newRejectFixture(t *testing.T) rejectFixture {
	t.Helper()
	s, clk, c := openTest(t, "")
	ctx := context.Background()
	clk.t = clk.t.AddDate(0, 0, -100)
	f := rejectFixture{s: s, clk: clk, c: c}
	f.withSubject = mustSave(t, s, c, SaveRequest{Type: "fact", Content: "alice prefers tabs", SubjectType: "user", SubjectID: "u1", Tags: []string{"style"}, Project: "p1"}).ID
	clk.advance(24 * time.Hour)
	f.bare = mustSave(t, s, c, SaveRequest{Type: "note", Content: "a note without a subject", TopicKey: "notes/one"}).ID
	clk.advance(24 * time.Hour)
	f.deleted = mustSave(t, s, c, SaveRequest{Content: "soon deleted"}).ID
	if err := s.Delete(ctx, c, f.deleted, false); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.AddDate(0, 0, 98)
	mustSave(t, s, c, SaveRequest{Namespace: "subagent/task-1", Content: "sub-agent memory"})
	if _, err := s.StartSession(ctx, c, SessionStart{ID: "sess-1", Project: "p1"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRejectedRequests checks every validation rule: each request breaks
// exactly one rule of an otherwise valid request, must fail with the named
// error, and must leave the stats and the export unchanged.
func TestRejectedRequests(t *testing.T) {
	f := newRejectFixture(t)
	s, c := f.s, f.c
	ctx := context.Background()

	save := func(mod func(*SaveRequest)) func() error {
		return func() error {
			req := SaveRequest{Type: "note", Title: "A title", Content: "valid content", Tags: []string{"ok"}}
			mod(&req)
			_, err := s.Save(ctx, c, req)
			return err
		}
	}
	update := func(id string, req UpdateRequest) func() error {
		return func() error { _, err := s.Update(ctx, c, id, req); return err }
	}
	search := func(q SearchQuery) func() error {
		return func() error { _, err := s.Search(ctx, c, q); return err }
	}
	timeline := func(q TimelineQuery) func() error {
		return func() error { _, err := s.Timeline(ctx, c, q); return err }
	}
	contextQ := func(q ContextQuery) func() error {
		return func() error { _, err := s.Context(ctx, c, q); return err }
	}
	compact := func(req CompactRequest) func() error {
		return func() error { _, err := s.Compact(ctx, c, req); return err }
	}
	many := func(n int, prefix string, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%0*d", prefix, size-len(prefix), i)
		}
		return out
	}
	nan := math.NaN()

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"save without content", save(func(r *SaveRequest) { r.Content = "" }), ErrInvalid},
		{"save with blank content", save(func(r *SaveRequest) { r.Content = " \n\t " }), ErrInvalid},
		{"type with capitals", save(func(r *SaveRequest) { r.Type = "Decision" }), ErrInvalid},
		{"type with a space", save(func(r *SaveRequest) { r.Type = "big decision" }), ErrInvalid},
		{"type with a slash", save(func(r *SaveRequest) { r.Type = "a/b" }), ErrInvalid},
		{"type 33 bytes", save(func(r *SaveRequest) { r.Type = strings.Repeat("t", 33) }), ErrInvalid},
		{"title over max", save(func(r *SaveRequest) { r.Title = strings.Repeat("x", MaxTitleBytes+1) }), ErrInvalid},
		{"content over max", save(func(r *SaveRequest) { r.Content = strings.Repeat("c", MaxContentBytes+1) }), ErrTooLarge},
		{"summary over max", save(func(r *SaveRequest) { r.Summary = strings.Repeat("s", MaxSummaryBytes+1) }), ErrInvalid},
		{"topic key over max", save(func(r *SaveRequest) { r.TopicKey = strings.Repeat("k", MaxKeyBytes+1) }), ErrInvalid},
		{"bad scope", save(func(r *SaveRequest) { r.Scope = "galaxy" }), ErrInvalid},
		{"bad channel", save(func(r *SaveRequest) { r.Channel = "radio" }), ErrInvalid},
		{"importance below 0", save(func(r *SaveRequest) { r.Importance = ptr(-0.01) }), ErrInvalid},
		{"importance above 1", save(func(r *SaveRequest) { r.Importance = ptr(1.01) }), ErrInvalid},
		{"importance NaN", save(func(r *SaveRequest) { r.Importance = &nan }), ErrInvalid},
		{"confidence below 0", save(func(r *SaveRequest) { r.Confidence = ptr(-1.0) }), ErrInvalid},
		{"confidence above 1", save(func(r *SaveRequest) { r.Confidence = ptr(2.0) }), ErrInvalid},
		{"confidence NaN", save(func(r *SaveRequest) { r.Confidence = &nan }), ErrInvalid},
		{"too many tags", save(func(r *SaveRequest) { r.Tags = many(MaxTags+1, "tag", 6) }), ErrInvalid},
		{"tag too long", save(func(r *SaveRequest) { r.Tags = []string{strings.Repeat("g", MaxTagBytes+1)} }), ErrInvalid},
		{"too many linked files", save(func(r *SaveRequest) { r.LinkedFiles = many(MaxLinkedFiles+1, "f", 5) }), ErrInvalid},
		{"linked file path too long", save(func(r *SaveRequest) { r.LinkedFiles = []string{strings.Repeat("p", MaxPathBytes+1)} }), ErrInvalid},
		{"invalid UTF-8 content", save(func(r *SaveRequest) { r.Content = "ok \xff\xfe" }), ErrInvalid},
		{"invalid UTF-8 title", save(func(r *SaveRequest) { r.Title = "t\xc3" }), ErrInvalid},
		{"invalid UTF-8 tag", save(func(r *SaveRequest) { r.Tags = []string{"\x80"} }), ErrInvalid},
		{"bad namespace characters", save(func(r *SaveRequest) { r.Namespace = "Sub Agent!" }), ErrInvalid},
		{"bad namespace scheme", save(func(r *SaveRequest) { r.Namespace = "gopher://alice" }), ErrInvalid},

		{"update with empty content", update(f.bare, UpdateRequest{Content: ptr("  ")}), ErrInvalid},
		{"update with empty title", update(f.bare, UpdateRequest{Title: ptr("")}), ErrInvalid},
		{"update with bad type", update(f.bare, UpdateRequest{Type: ptr("Bad")}), ErrInvalid},
		{"update with bad scope", update(f.bare, UpdateRequest{Scope: ptr("galaxy")}), ErrInvalid},
		{"update with importance NaN", update(f.bare, UpdateRequest{Importance: &nan}), ErrInvalid},
		{"update content over max", update(f.bare, UpdateRequest{Content: ptr(strings.Repeat("c", MaxContentBytes+1))}), ErrTooLarge},
		{"update changes subject_type", update(f.withSubject, UpdateRequest{SubjectType: ptr("repo")}), ErrConflict},
		{"update changes subject_id", update(f.withSubject, UpdateRequest{SubjectID: ptr("u2")}), ErrConflict},
		{"update clears subject_id", update(f.withSubject, UpdateRequest{SubjectID: ptr("")}), ErrConflict},
		{"update a deleted memory", update(f.deleted, UpdateRequest{Title: ptr("x")}), ErrNotFound},
		{"update an unknown memory", update("01NOSUCHMEMORY000000000000", UpdateRequest{Title: ptr("x")}), ErrNotFound},

		{"search without q", search(SearchQuery{}), ErrInvalid},
		{"search with blank q", search(SearchQuery{Query: "   "}), ErrInvalid},
		{"search limit 101", search(SearchQuery{Query: "alice", Limit: MaxSearchLimit + 1}), ErrInvalid},
		{"search limit -1", search(SearchQuery{Query: "alice", Limit: -1}), ErrInvalid},
		{"search q over 1024 bytes", search(SearchQuery{Query: strings.Repeat("q", 1025)}), ErrInvalid},
		{"search bad namespace", search(SearchQuery{Query: "alice", Filter: Filter{Namespace: "no such!"}}), ErrInvalid},
		{"search bad scope", search(SearchQuery{Query: "alice", Filter: Filter{Scope: "galaxy"}}), ErrInvalid},
		{"search bad channel", search(SearchQuery{Query: "alice", Filter: Filter{Channel: "radio"}}), ErrInvalid},
		{"search since after until", search(SearchQuery{Query: "alice", Filter: Filter{
			Since: f.clk.t, Until: f.clk.t.Add(-time.Second)}}), ErrInvalid},

		{"timeline without id", timeline(TimelineQuery{}), ErrInvalid},
		{"timeline before -1", timeline(TimelineQuery{ID: f.bare, Before: -1}), ErrInvalid},
		{"timeline before 51", timeline(TimelineQuery{ID: f.bare, Before: MaxAround + 1}), ErrInvalid},
		{"timeline after -1", timeline(TimelineQuery{ID: f.bare, After: -1}), ErrInvalid},
		{"timeline after 51", timeline(TimelineQuery{ID: f.bare, After: MaxAround + 1}), ErrInvalid},
		{"timeline since after until", timeline(TimelineQuery{ID: f.bare, Filter: Filter{
			Since: f.clk.t, Until: f.clk.t.Add(-time.Hour)}}), ErrInvalid},
		{"timeline of a deleted memory", timeline(TimelineQuery{ID: f.deleted}), ErrNotFound},

		{"context max_tokens -1", contextQ(ContextQuery{MaxTokens: -1}), ErrInvalid},
		{"context max_tokens over max", contextQ(ContextQuery{MaxTokens: MaxMaxTokens + 1}), ErrInvalid},
		{"context bad namespace", contextQ(ContextQuery{Filter: Filter{Namespace: "a b"}}), ErrInvalid},
		{"context since after until", contextQ(ContextQuery{Filter: Filter{Since: f.clk.t, Until: f.clk.t.AddDate(0, 0, -1)}}), ErrInvalid},

		{"identify older_than_days 0", compact(CompactRequest{}), ErrInvalid},
		{"identify older_than_days -3", compact(CompactRequest{OlderThanDays: -3}), ErrInvalid},
		{"identify limit 201", compact(CompactRequest{OlderThanDays: 1, Limit: MaxCompactLimit + 1}), ErrInvalid},
		{"identify limit -1", compact(CompactRequest{OlderThanDays: 1, Limit: -1}), ErrInvalid},
		{"identify bad scope", compact(CompactRequest{OlderThanDays: 1, Scope: "galaxy"}), ErrInvalid},
		{"identify bad namespace", compact(CompactRequest{OlderThanDays: 1, Namespace: "gopher://x"}), ErrInvalid},
		{"execute with empty id list", compact(CompactRequest{CompactIDs: []string{}}), ErrInvalid},
		{"execute with an unknown id", compact(CompactRequest{CompactIDs: []string{f.bare, "01UNKNOWN00000000000000000"},
			SummaryTitle: "t", SummaryContent: "c"}), ErrInvalid},
		{"execute with a deleted id", compact(CompactRequest{CompactIDs: []string{f.bare, f.deleted},
			SummaryTitle: "t", SummaryContent: "c"}), ErrInvalid},
		{"execute summary content without title", compact(CompactRequest{CompactIDs: []string{f.bare}, SummaryContent: "c"}), ErrInvalid},
		{"execute summary title without content", compact(CompactRequest{CompactIDs: []string{f.bare}, SummaryTitle: "t"}), ErrInvalid},
		{"execute 201 ids", compact(CompactRequest{CompactIDs: append(many(MaxCompactLimit, "01X", 26), f.bare)}), ErrInvalid},

		{"stats bad namespace", func() error { _, err := s.Stats(ctx, c, "a b"); return err }, ErrInvalid},
		{"start session without id", func() error { _, err := s.StartSession(ctx, c, SessionStart{}); return err }, ErrInvalid},
		{"end unknown session", func() error { _, err := s.EndSession(ctx, c, SessionEnd{ID: "nope"}); return err }, ErrNotFound},
		{"progress without project", func() error {
			_, err := s.Progress(ctx, c, ProgressRequest{Content: "halfway"})
			return err
		}, ErrInvalid},
		{"prompt without content", func() error { _, err := s.SavePrompt(ctx, c, PromptRequest{SessionID: "sess-1"}); return err }, ErrInvalid},
	}
	before := snapshot(t, s, c)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got error %v, want %v", err, tc.want)
			}
			if after := snapshot(t, s, c); after != before {
				before = after // report this case only, not every later one
				t.Fatalf("rejected request changed the state:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestBoundariesAccepted is the other side of TestRejectedRequests: values
// exactly at each limit pass, so the limits are not stricter than documented.
func TestBoundariesAccepted(t *testing.T) {
	// On disk: the in-memory store (Dir "") rejects records over 1 KiB.
	s, _, c := openTest(t, t.TempDir())
	ctx := context.Background()
	tags := make([]string, MaxTags)
	for i := range tags {
		tags[i] = fmt.Sprintf("%0*d", MaxTagBytes, i)
	}
	files := make([]string, MaxLinkedFiles)
	for i := range files {
		files[i] = fmt.Sprintf("%0*d", MaxPathBytes, i)
	}
	r, err := s.Save(ctx, c, SaveRequest{
		Type: strings.Repeat("t", 32), Title: strings.Repeat("x", MaxTitleBytes), Content: strings.Repeat("c", MaxContentBytes),
		Importance: ptr(0.0), Confidence: ptr(1.0), Tags: tags, LinkedFiles: files, Scope: "global", Channel: "team",
	})
	if err != nil {
		t.Fatalf("save at every limit: %v", err)
	}
	if len(r.Tags) != MaxTags || len(r.LinkedFiles) != MaxLinkedFiles || r.Importance != 0 || r.Confidence != 1 {
		t.Fatalf("saved %d tags, %d files, importance %v, confidence %v", len(r.Tags), len(r.LinkedFiles), r.Importance, r.Confidence)
	}
	if _, err := s.Search(ctx, c, SearchQuery{Query: strings.Repeat("q", 1024), Limit: MaxSearchLimit}); err != nil {
		t.Fatalf("search at limits: %v", err)
	}
	if _, err := s.Timeline(ctx, c, TimelineQuery{ID: r.ID, Before: MaxAround, After: MaxAround}); err != nil {
		t.Fatalf("timeline at limits: %v", err)
	}
	if _, err := s.Context(ctx, c, ContextQuery{MaxTokens: MaxMaxTokens}); err != nil {
		t.Fatalf("context at limit: %v", err)
	}
	if _, err := s.Compact(ctx, c, CompactRequest{OlderThanDays: 1, Limit: MaxCompactLimit}); err != nil {
		t.Fatalf("identify at limit: %v", err)
	}
	// Tags are trimmed and deduplicated before counting.
	r, err = s.Save(ctx, c, SaveRequest{Content: "dups", Tags: append(slicesRepeat("same", MaxTags+5), " ", "")})
	if err != nil || len(r.Tags) != 1 {
		t.Fatalf("duplicate tags: %+v %v", r.Tags, err)
	}
}

func slicesRepeat(v string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestSubjectImmutable: subject_type and subject_id can be set once, re-set
// to the same value, and never changed.
func TestSubjectImmutable(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	id := mustSave(t, s, c, SaveRequest{Content: "no subject yet"}).ID
	m, err := s.Update(ctx, c, id, UpdateRequest{SubjectType: ptr("repo"), SubjectID: ptr("mnemo")})
	if err != nil || m.SubjectType != "repo" || m.SubjectID != "mnemo" {
		t.Fatalf("setting an empty subject: %+v %v", m, err)
	}
	if _, err := s.Update(ctx, c, id, UpdateRequest{SubjectType: ptr("repo"), SubjectID: ptr("mnemo"), Title: ptr("same subject")}); err != nil {
		t.Fatalf("re-setting the same subject: %v", err)
	}
	if _, err := s.Update(ctx, c, id, UpdateRequest{SubjectID: ptr("other")}); !errors.Is(err, ErrConflict) {
		t.Fatalf("changing subject_id: %v", err)
	}
	// Only one of the two set: the other stays settable.
	id2 := mustSave(t, s, c, SaveRequest{Content: "half a subject", SubjectType: "user"}).ID
	if m, err := s.Update(ctx, c, id2, UpdateRequest{SubjectID: ptr("u7")}); err != nil || m.SubjectID != "u7" {
		t.Fatalf("setting subject_id next to subject_type: %+v %v", m, err)
	}
	if got, _ := s.Get(ctx, c, id, false); got.SubjectType != "repo" || got.SubjectID != "mnemo" || got.Title != "same subject" {
		t.Fatalf("after updates: %+v", got)
	}
}

// TestSearchDefaultLimit: limit 0 means 10, and Total still counts all.
func TestSearchDefaultLimit(t *testing.T) {
	s, _, c := openTest(t, "")
	for i := range 15 {
		mustSave(t, s, c, SaveRequest{Content: fmt.Sprintf("zebra sighting number %d", i)})
	}
	res, err := s.Search(context.Background(), c, SearchQuery{Query: "zebra"})
	if err != nil || len(res.Results) != DefaultSearchLimit || res.Total != 15 {
		t.Fatalf("limit 0: %d results, total %d, %v", len(res.Results), res.Total, err)
	}
	res, _ = s.Search(context.Background(), c, SearchQuery{Query: "zebra", Limit: 3})
	if len(res.Results) != 3 || res.Total != 15 {
		t.Fatalf("limit 3: %d results, total %d", len(res.Results), res.Total)
	}
}
