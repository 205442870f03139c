package projview_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
	"github.com/mnemohq/mnemo/projection"
)

// openTest opens a Service owned by alice on which every agent of
// memorytest.Principals is local (bound to the node key), with the
// projection-view feature attached.
func openTest(t *testing.T, dir string) (*memory.Service, *memorytest.Clock) {
	t.Helper()
	return memorytest.Open(t, memory.Config{KV: badgerkvtest.In(t, dir), IsLocal: memorytest.AllLocal, Features: []memory.Feature{projview.New()}})
}

func ptr[T any](v T) *T { return &v }

// projSearch is what principal c finds for q on s, by source id (the
// lineage of each view record), with the memories found.
func projSearch(t *testing.T, s *memory.Service, c memapi.Caller, ns, q string) map[string]memapi.Memory {
	t.Helper()
	res, err := s.Search(context.Background(), c, memapi.SearchQuery{Query: q, Filter: memapi.Filter{Namespace: ns}, Limit: 100})
	if err != nil {
		t.Fatalf("%s searches %q in %q: %v", c.Principal, q, ns, err)
	}
	out := map[string]memapi.Memory{}
	for _, h := range res.Results {
		key := h.Memory.ID
		if h.Memory.ProjectedFrom != "" {
			key = h.Memory.Lineage
		}
		out[key] = h.Memory
	}
	return out
}

func mustProject(t *testing.T, s *memory.Service, c memapi.Caller, req memapi.ProjectionRequest) memapi.ProjectionInfo {
	t.Helper()
	info, err := projview.Of(s).Create(context.Background(), c, req)
	if err != nil {
		t.Fatalf("%s projects %s to %s: %v", c.Principal, req.Source, req.Target, err)
	}
	return info
}

func viewRec(t *testing.T, s *memory.Service, info memapi.ProjectionInfo, src memapi.Memory) (*crdt.Record, bool) {
	t.Helper()
	vid := projview.ViewRecordID(info.Spec, src.Namespace, src.ID)
	gone, err := s.Store().Retracted(info.View, vid)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Store().Record(info.View, vid)
	if err != nil {
		t.Fatal(err)
	}
	return rec, gone
}

func liveCount(t *testing.T, s *memory.Service, c memapi.Caller, id string) int {
	t.Helper()
	ps, err := projview.Of(s).List(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.ID == id {
			return p.Memories
		}
	}
	return -1
}

const longContent = "Tokens are rotated every hour by the auth gateway, and the refresh path " +
	"goes through the session service which checks the device binding first. " +
	"This paragraph keeps going so that the excerpt at level two has to cut it somewhere " +
	"before the end, because it is longer than the excerpt limit of two hundred and eighty " +
	"characters that package projection applies to memories without a summary of their own."

// TestProjectionLive follows one live projection through every kind of
// source change, on one node where bob is a second local principal.
func TestProjectionLive(t *testing.T) {
	s, _ := openTest(t, "")
	ctx := context.Background()
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	m1 := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Title: "Token rotation", Content: longContent,
		Tags: []string{"auth"}, LinkedFiles: []string{"src/auth/token.go"}})
	m2 := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Title: "Invoice rounding", Content: "Invoices round half even on the gateway.", Tags: []string{"billing"}})
	m3 := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "pattern", Title: "Gateway login", Content: "Login on the gateway uses PKCE.",
		Summary: "PKCE everywhere", Tags: []string{"Auth", "security"}})

	info := mustProject(t, s, alice, memapi.ProjectionRequest{Source: "agent://alice", Target: "agent://bob",
		Filter: projection.Filter{Tags: []string{"auth"}}, Level: projection.L2})
	if !info.Live || info.Creator != alice.Principal || info.View != "agent://bob/.inbox/alice/proj-"+info.ID || info.Memories != 2 {
		t.Fatalf("created %+v", info)
	}

	// Only the matching memories, at L2, in bob's own searches.
	for _, ns := range []string{"", "agent://bob"} {
		got := projSearch(t, s, bob, ns, "gateway")
		if len(got) != 2 || got[m2.ID].ID != "" {
			t.Fatalf("bob's search (namespace %q) sees %v, want the views of %s and %s", ns, got, m1.ID, m3.ID)
		}
		v1, v3 := got[m1.ID], got[m3.ID]
		if v1.Namespace != info.View || v1.ProjectedFrom != "agent://alice" || v1.ID == m1.ID || v1.Lineage != m1.ID {
			t.Fatalf("view record not marked with its source: %+v", v1)
		}
		if v1.Content != "" || v1.Summary != projection.Excerpt(longContent, projection.ExcerptRunes) ||
			!strings.HasSuffix(v1.Summary, "…") || len(v1.LinkedFiles) != 1 || v1.Title != "Token rotation" {
			t.Fatalf("L2 view of m1: %+v", v1)
		}
		if v3.Summary != "PKCE everywhere" || v3.Content != "" || v3.Author != "agent://alice" {
			t.Fatalf("L2 view of m3: %+v", v3)
		}
	}
	// Alice's own recall does not double her memories with what she delivered.
	if res, err := s.Search(ctx, alice, memapi.SearchQuery{Query: "gateway"}); err != nil || res.Total != 3 {
		t.Fatalf("alice's search: %+v %v", res, err)
	} else {
		for _, h := range res.Results {
			if h.Memory.ProjectedFrom != "" {
				t.Fatalf("alice's search returns the copy she delivered: %+v", h.Memory)
			}
		}
	}
	if got := projSearch(t, s, alice, info.View, "gateway"); len(got) != 2 {
		t.Fatalf("alice reads the view she writes by name: %v", got)
	}

	// bob cannot write into the view.
	v1 := projSearch(t, s, bob, "", "rotation")[m1.ID]
	if _, err := s.Save(ctx, bob, memapi.SaveRequest{Namespace: info.View, Content: "forged"}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("bob saved into the view: %v", err)
	}
	if _, err := s.Update(ctx, bob, v1.ID, memapi.UpdateRequest{Title: ptr("forged")}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("bob updated a view record: %v", err)
	}
	if err := s.Delete(ctx, bob, v1.ID, true); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("bob retracted a view record: %v", err)
	}

	// An update of a matching memory updates the view.
	if _, err := s.Update(ctx, alice, m1.ID, memapi.UpdateRequest{Title: ptr("Token rotation hourly")}); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, s, bob, "", "rotation")[m1.ID]; got.Title != "Token rotation hourly" {
		t.Fatalf("view not updated: %+v", got)
	}

	// Edited out of the filter: soft-deleted in the view, gone from bob's search.
	if _, err := s.Update(ctx, alice, m1.ID, memapi.UpdateRequest{Tags: &[]string{"misc"}}); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, s, bob, "", "rotation"); len(got) != 0 {
		t.Fatalf("memory edited out of the filter still in bob's view: %v", got)
	}
	if rec, gone := viewRec(t, s, info, m1.Memory); gone || rec.Empty() || schema.Time(rec, schema.FieldDeletedAt).IsZero() {
		t.Fatalf("view record of an unmatched memory: gone=%v deleted_at=%v", gone, schema.Time(rec, schema.FieldDeletedAt))
	}
	if n := liveCount(t, s, bob, info.ID); n != 1 {
		t.Fatalf("view shows %d memories, want 1", n)
	}
	// ... and back in.
	if _, err := s.Update(ctx, alice, m1.ID, memapi.UpdateRequest{Tags: &[]string{"auth", "misc"}}); err != nil {
		t.Fatal(err)
	}
	got := projSearch(t, s, bob, "", "rotation")[m1.ID]
	if got.DeletedAt != nil || got.Title != "Token rotation hourly" || len(got.Tags) != 2 {
		t.Fatalf("memory edited back into the filter: %+v", got)
	}

	// A memory that never matched causes nothing; a new matching one arrives.
	memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "gateway billing retries", Tags: []string{"billing"}})
	m4 := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "gateway auth timeouts are 30s", Tags: []string{"auth"}})
	if got := projSearch(t, s, bob, "", "gateway"); len(got) != 3 || got[m4.ID].ID == "" {
		t.Fatalf("after new saves bob sees %v", got)
	}

	// Soft delete in the source removes; retract in the source retracts.
	if err := s.Delete(ctx, alice, m4.ID, false); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, s, bob, "", "timeouts"); len(got) != 0 {
		t.Fatalf("archived memory still in the view: %v", got)
	}
	if err := s.Delete(ctx, alice, m3.ID, true); err != nil {
		t.Fatal(err)
	}
	if rec, gone := viewRec(t, s, info, m3.Memory); !gone || !rec.Empty() {
		t.Fatalf("retracted memory's view record: gone=%v", gone)
	}
	if got := projSearch(t, s, bob, "", "pkce"); len(got) != 0 {
		t.Fatalf("retracted memory still found: %v", got)
	}
	if n := liveCount(t, s, bob, info.ID); n != 1 {
		t.Fatalf("view shows %d memories, want 1 (m1)", n)
	}

	// Deleting the projection: only its creator; the view empties.
	if err := projview.Of(s).Delete(ctx, bob, info.ID); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("the target deleted the projection: %v", err)
	}
	if err := projview.Of(s).Delete(ctx, memorytest.Agent("carol"), info.ID); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("a stranger deleting the projection: %v", err)
	}
	if err := projview.Of(s).Delete(ctx, alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, s, bob, "", "gateway"); len(got) != 0 {
		t.Fatalf("deleted projection's view still searchable: %v", got)
	}
	if rec, gone := viewRec(t, s, info, m1.Memory); !gone || !rec.Empty() {
		t.Fatal("deleted projection's view record not retracted")
	}
	if ps, _ := projview.Of(s).List(ctx, bob); len(ps) != 0 {
		t.Fatalf("deleted projection listed: %+v", ps)
	}
	if err := projview.Of(s).Delete(ctx, alice, info.ID); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// A deleted projection no longer follows its source.
	if _, err := s.Update(ctx, alice, m1.ID, memapi.UpdateRequest{Title: ptr("Token rotation daily")}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := viewRec(t, s, info, m1.Memory); !rec.Empty() {
		t.Fatal("deleted projection's view written again")
	}
}

func TestProjectionLevels(t *testing.T) {
	s, _ := openTest(t, "")
	alice, carol := memorytest.Agent("alice"), memorytest.Agent("carol")
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Title: "Ledger", Content: longContent, Tags: []string{"pay"},
		LinkedFiles: []string{"src/payments/ledger.go"}, SessionID: "s1", Channel: "team", TopicKey: "ledger"})
	memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Title: "Other", Content: "unrelated", LinkedFiles: []string{"src/ui/x.go"}})
	want := map[projection.Level]func(v memapi.Memory) bool{
		projection.L1: func(v memapi.Memory) bool {
			return v.Title == "Ledger" && v.Content == "" && v.Summary == "" && v.LinkedFiles == nil && v.SessionID == ""
		},
		projection.L2: func(v memapi.Memory) bool {
			return v.Content == "" && v.Summary != "" && len(v.LinkedFiles) == 1 && v.SessionID == ""
		},
		projection.L3: func(v memapi.Memory) bool {
			return v.Content == longContent && len(v.LinkedFiles) == 1 && v.SessionID == "s1" && v.Channel == "team" &&
				v.ContentHash == m.ContentHash && v.TopicKey == "ledger"
		},
	}
	for level, ok := range want {
		info := mustProject(t, s, alice, memapi.ProjectionRequest{Source: "agent://alice", Target: "carol",
			Filter: projection.Filter{LinkedFiles: []string{"src/payments/**"}}, Level: level})
		if info.Memories != 1 {
			t.Fatalf("%s: view holds %d memories", level, info.Memories)
		}
		got := projSearch(t, s, carol, info.View, "ledger")[m.ID]
		if !ok(got) || got.Importance != m.Importance || got.Confidence != m.Confidence || got.Type != "decision" ||
			!got.CreatedAt.Equal(m.CreatedAt) || got.Lineage != m.ID || got.ProjectedFrom != "agent://alice" {
			t.Errorf("%s view: %+v", level, got)
		}
	}
}

func TestProjectionSnapshot(t *testing.T) {
	s, _ := openTest(t, "")
	ctx := context.Background()
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	m1 := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Title: "First", Content: "first snapshot note", Tags: []string{"x"}})
	live := false
	info := mustProject(t, s, alice, memapi.ProjectionRequest{Source: "agent://alice", Target: "bob",
		Filter: projection.Filter{Tags: []string{"x"}}, Level: projection.L3, Live: &live})
	if info.Live || info.Memories != 1 {
		t.Fatalf("snapshot created as %+v", info)
	}
	memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "second snapshot note", Tags: []string{"x"}})
	if _, err := s.Update(ctx, alice, m1.ID, memapi.UpdateRequest{Content: ptr("first snapshot note, edited")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, alice, m1.ID, true); err != nil {
		t.Fatal(err)
	}
	got := projSearch(t, s, bob, "", "snapshot")
	if len(got) != 1 || got[m1.ID].Content != "first snapshot note" {
		t.Fatalf("snapshot followed its source: %v", got)
	}
	if err := projview.Of(s).Delete(ctx, alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, s, bob, "", "snapshot"); len(got) != 0 {
		t.Fatalf("deleted snapshot still visible: %v", got)
	}
}

func TestProjectionPermissionsAndSpecErrors(t *testing.T) {
	s, _ := openTest(t, "")
	ctx := context.Background()
	alice, bob, dave := memorytest.Agent("alice"), memorytest.Agent("bob"), memorytest.Agent("dave")
	memorytest.Create(t, s, "alice", "team://core")
	memorytest.Grant(t, s, "alice", "team://core", "bob", "member")
	memorytest.Save(t, s, alice, memapi.SaveRequest{Namespace: "team://core", Type: "note", Content: "core note", Tags: []string{"x"}})
	req := func(src, target string) memapi.ProjectionRequest {
		return memapi.ProjectionRequest{Source: src, Target: target, Level: projection.L2}
	}
	for _, c := range []struct {
		who memapi.Caller
		req memapi.ProjectionRequest
	}{
		{dave, req("agent://alice", "carol")}, // no permission at all
		{bob, req("team://core", "carol")},    // read and write, no share
	} {
		if _, err := projview.Of(s).Create(ctx, c.who, c.req); !errors.Is(err, acl.ErrDenied) {
			t.Errorf("%s projecting %s: %v, want permission denied", c.who.Principal, c.req.Source, err)
		}
	}
	if ps, _ := projview.Of(s).List(ctx, memorytest.Agent("carol")); len(ps) != 0 {
		t.Fatalf("a refused projection exists: %+v", ps)
	}
	memorytest.Grant(t, s, "alice", "team://core", "bob", "share")
	info := mustProject(t, s, bob, req("team://core", "carol"))
	if info.Memories != 1 || info.Creator != bob.Principal {
		t.Fatalf("projection by a share holder: %+v", info)
	}

	bad := []struct {
		req  memapi.ProjectionRequest
		want string
	}{
		{memapi.ProjectionRequest{Source: "agent://alice", Target: "bob"}, "level missing"},
		{memapi.ProjectionRequest{Source: "agent://alice", Target: "bob", Level: projection.L1,
			Filter: projection.Filter{Predicate: `importance > "x"`}}, "predicate"},
		{memapi.ProjectionRequest{Source: "agent://alice", Target: "bob", Level: projection.L1,
			Filter: projection.Filter{LinkedFiles: []string{""}}}, "empty glob"},
		{memapi.ProjectionRequest{Target: "bob", Level: projection.L1}, "source"},
		{memapi.ProjectionRequest{Source: "agent://alice", Level: projection.L1}, "target"},
		{memapi.ProjectionRequest{Source: "agent://alice", Target: "team://core", Level: projection.L1}, "target"},
		{memapi.ProjectionRequest{Source: "agent://alice", Target: "alice", Level: projection.L1}, "creator"},
		{memapi.ProjectionRequest{Source: "agent://bob/.inbox/alice/x", Target: "carol", Level: projection.L1}, "inbox"},
	}
	for _, b := range bad {
		_, err := projview.Of(s).Create(ctx, alice, b.req)
		if !errors.Is(err, memapi.ErrInvalid) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: %v, want invalid naming %q", b.req, err, b.want)
		}
	}
}

// link forwards the replicated deltas written on from that want accepts
// to to, as replication does.
func link(t *testing.T, from, to *memory.Service, want func(ns string) bool) {
	from.OnLocalDelta(func(ns string, d *crdt.Map) {
		if memory.Replicated(ns) && want(ns) {
			if err := to.ApplyRemote(ns, d); err != nil {
				t.Errorf("apply %s on %s: %v", ns, to.Owner(), err)
			}
		}
	})
}

// TestProjectionAcrossNodes: the source is a team namespace written on
// another node of alice's (changes arrive by ApplyRemote on the
// publisher), and the view reaches bob's own node, where his searches
// include it and the publisher's later changes follow.
func TestProjectionAcrossNodes(t *testing.T) {
	ctx := context.Background()
	clk := &memorytest.Clock{T: memorytest.Start}
	open := func(agent string, replica crdt.ReplicaID) *memory.Service {
		s, err := memory.Open(memory.Config{Agent: namespace.MustParse("agent://" + agent), Now: clk.Now, Replica: replica,
			Features: []memory.Feature{projview.New()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	pub, other, sub := open("alice", 1), open("alice", 2), open("bob", 3)
	team := func(ns string) bool { return strings.HasPrefix(ns, "team://") }
	inbox := func(ns string) bool { return strings.HasPrefix(ns, "agent://bob/") }
	link(t, pub, other, team)
	link(t, other, pub, team)
	link(t, pub, sub, inbox)
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	memorytest.Create(t, pub, "alice", "team://core")
	info := mustProject(t, pub, alice, memapi.ProjectionRequest{Source: "team://core", Target: "bob",
		Filter: projection.Filter{Predicate: `"auth" in tags and confidence >= 0.5`}, Level: projection.L3})

	m := memorytest.Save(t, other, alice, memapi.SaveRequest{Namespace: "team://core", Type: "note", Content: "remote auth fact", Tags: []string{"auth"}})
	memorytest.Save(t, other, alice, memapi.SaveRequest{Namespace: "team://core", Type: "note", Content: "remote auth guess", Tags: []string{"auth"}, Confidence: ptr(0.2)})
	got := projSearch(t, sub, bob, "", "remote")
	if len(got) != 1 || got[m.ID].Content != "remote auth fact" || got[m.ID].ProjectedFrom != "team://core" {
		t.Fatalf("bob's node sees %v", got)
	}
	ps, err := projview.Of(sub).List(ctx, bob)
	if err != nil || len(ps) != 1 || ps[0].ID != info.ID || ps[0].Memories != 1 {
		t.Fatalf("bob's node lists %+v %v", ps, err)
	}
	// A change made on the other node, edited out of the filter.
	if _, err := other.Update(ctx, alice, m.ID, memapi.UpdateRequest{Confidence: ptr(0.1)}); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, sub, bob, "", "remote"); len(got) != 0 {
		t.Fatalf("bob still sees %v", got)
	}
	if _, err := other.Update(ctx, alice, m.ID, memapi.UpdateRequest{Confidence: ptr(0.9), Content: ptr("remote auth fact, v2")}); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, sub, bob, "", "remote")[m.ID]; got.Content != "remote auth fact, v2" {
		t.Fatalf("bob sees %+v", got)
	}
	// Both nodes tell the same last delivery: the creator's write time.
	clk.Advance(time.Minute)
	if _, err := other.Update(ctx, alice, m.ID, memapi.UpdateRequest{Content: ptr("remote auth fact, v3")}); err != nil {
		t.Fatal(err)
	}
	pubList, _ := projview.Of(pub).List(ctx, alice)
	subList, _ := projview.Of(sub).List(ctx, bob)
	if len(pubList) != 1 || len(subList) != 1 || subList[0].LastDelivery == nil || pubList[0].LastDelivery == nil ||
		!subList[0].LastDelivery.Equal(*pubList[0].LastDelivery) || !subList[0].LastDelivery.Equal(clk.Now().Truncate(time.Millisecond)) {
		t.Fatalf("last delivery on the publisher %+v, on bob's node %+v, want both %v", pubList, subList, clk.Now())
	}
	// bob's node holds the spec but does not maintain the view itself.
	if projview.Of(sub).Maintained() != 0 {
		t.Fatal("the subscriber maintains a projection it did not create")
	}
	if err := projview.Of(pub).Delete(ctx, alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, sub, bob, "", "remote"); len(got) != 0 {
		t.Fatalf("deleted projection still on bob's node: %v", got)
	}
	if ps, _ := projview.Of(sub).List(ctx, bob); len(ps) != 0 {
		t.Fatalf("bob's node lists a deleted projection: %+v", ps)
	}
}

// TestProjectionReopen: the list is rebuilt from the store, live
// maintenance continues, and a view that fell behind its source (a crash
// between the two writes) is repaired at Open.
func TestProjectionReopen(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir)
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "reopen fact one", Tags: []string{"x"}})
	info := mustProject(t, s, alice, memapi.ProjectionRequest{Source: "agent://alice", Target: "bob",
		Filter: projection.Filter{Tags: []string{"x"}}, Level: projection.L3})
	// Simulate the crash: change the source behind the hook's back.
	projview.Of(s).ForgetSpecs()
	if _, err := s.Update(context.Background(), alice, m.ID, memapi.UpdateRequest{Content: ptr("reopen fact one, changed")}); err != nil {
		t.Fatal(err)
	}
	if got := projSearch(t, s, bob, "", "reopen")[m.ID]; got.Content != "reopen fact one" {
		t.Fatalf("the hook ran anyway: %+v", got)
	}
	s.Close()

	s, _ = openTest(t, dir)
	if got := projSearch(t, s, bob, "", "reopen")[m.ID]; got.Content != "reopen fact one, changed" {
		t.Fatalf("view not repaired at Open: %+v", got)
	}
	ps, err := projview.Of(s).List(context.Background(), alice)
	if err != nil || len(ps) != 1 || ps[0].ID != info.ID || !ps[0].Live || ps[0].Filter.Tags[0] != "x" {
		t.Fatalf("projections after reopen: %+v %v", ps, err)
	}
	m2 := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "reopen fact two", Tags: []string{"x"}})
	if got := projSearch(t, s, bob, "", "reopen"); len(got) != 2 || got[m2.ID].ID == "" {
		t.Fatalf("live maintenance after reopen: %v", got)
	}
}

// TestProjectionQuarantineAndRetractOfRemoved covers the two cases where
// the node's decision (projection.DecideView) differs from the remembered
// form (projection.Decide): a quarantined memory leaves the view, and a
// retract reaches a view record an earlier remove soft-deleted.
func TestProjectionQuarantineAndRetractOfRemoved(t *testing.T) {
	surg, err := surgery.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal, Features: []memory.Feature{surg, projview.New()}})
	ctx := context.Background()
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Title: "Keys", Content: "keys rotate weekly", Tags: []string{"auth"}})
	info := mustProject(t, s, alice, memapi.ProjectionRequest{Source: "agent://alice", Target: "agent://bob",
		Filter: projection.Filter{Tags: []string{"auth"}}, Level: projection.L3})
	if got := projSearch(t, s, bob, "", "keys"); got[m.ID].ID == "" {
		t.Fatalf("bob does not see the memory: %v", got)
	}
	if _, err := surgery.Of(s).Propose(ctx, alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpQuarantine, Reason: "unverified"}); err != nil {
		t.Fatal(err)
	}
	if rec, gone := viewRec(t, s, info, m.Memory); gone || rec.Empty() || schema.Time(rec, schema.FieldDeletedAt).IsZero() {
		t.Fatalf("quarantined memory's view record: gone=%v deleted_at=%v", gone, schema.Time(rec, schema.FieldDeletedAt))
	}
	if err := s.Delete(ctx, alice, m.ID, true); err != nil {
		t.Fatal(err)
	}
	if rec, gone := viewRec(t, s, info, m.Memory); !gone || !rec.Empty() {
		t.Fatalf("retract of a removed view record: gone=%v", gone)
	}
}

// A projection tells when its view last received a change: the time the
// creator's node wrote it, moved by what the view delivers and by nothing
// else, and known again after a restart without a write.
func TestProjectionLastDelivery(t *testing.T) {
	dir := t.TempDir()
	s, clk := openTest(t, dir)
	alice := memorytest.Agent("alice")
	info := mustProject(t, s, alice, memapi.ProjectionRequest{Source: "agent://alice", Target: "bob",
		Filter: projection.Filter{Tags: []string{"x"}}, Level: projection.L3})
	last := func(s *memory.Service) *time.Time {
		t.Helper()
		ps, err := projview.Of(s).List(context.Background(), alice)
		if err != nil || len(ps) != 1 || ps[0].ID != info.ID {
			t.Fatalf("projections: %+v %v", ps, err)
		}
		return ps[0].LastDelivery
	}
	if got := last(s); got != nil {
		t.Fatalf("an empty view was delivered to at %v", got)
	}
	clk.Advance(time.Minute)
	delivered := clk.Now().Truncate(time.Millisecond)
	memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "delivered fact", Tags: []string{"x"}})
	if got := last(s); got == nil || !got.Equal(delivered) {
		t.Fatalf("last delivery %v, want %v", got, delivered)
	}
	clk.Advance(time.Minute)
	memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "note", Content: "not for bob", Tags: []string{"y"}})
	if got := last(s); got == nil || !got.Equal(delivered) {
		t.Fatalf("last delivery %v after a write the view does not take, want %v", got, delivered)
	}
	s.Close()
	s, _ = openTest(t, dir)
	if got := last(s); got == nil || !got.Equal(delivered) {
		t.Fatalf("last delivery %v after a restart, want %v", got, delivered)
	}
}
