package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Tests of the core with feature packages attached: they live outside
// package memory because the features import it (hooks_test.go exports
// the internal helpers they share).

func newSurgery(tb testing.TB, a surgery.Approvals) *surgery.Surgery {
	tb.Helper()
	s, err := surgery.New(a)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// FuzzApplyRemote feeds a Service whatever delta a peer could send (any
// bytes that decode as a crdt.Map within limits) into a team namespace it
// holds, with memories, sessions, acl and surgery records present: it must
// never panic, and whatever it refuses must change nothing. (A member once
// crashed a node with a one-character session id.)
func FuzzApplyRemote(f *testing.F) {
	s, _ := memorytest.Open(f, memory.Config{IsLocal: memorytest.AllLocal, Features: []memory.Feature{newSurgery(f, nil), capsule.New()}})
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, memorytest.Agent("alice"), "team://t"); err != nil {
		f.Fatal(err)
	}
	if _, err := s.Grant(ctx, memorytest.Agent("alice"), memapi.GrantRequest{Namespace: "team://t", Principal: "agent://bob", Permissions: []string{"member"}}); err != nil {
		f.Fatal(err)
	}
	m, err := s.Save(ctx, memorytest.Agent("alice"), memapi.SaveRequest{Namespace: "team://t", Content: "present before every delta", Tags: []string{"a"}})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := surgery.Of(s).Propose(ctx, memorytest.Agent("alice"), memapi.EditRequest{TargetID: m.ID, Op: memapi.OpQuarantine, Reason: "fuzz"}); err != nil {
		f.Fatal(err)
	}
	st, err := s.Store().State("team://t")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(st.Encode())
	for _, rec := range []struct{ id, kind string }{
		{"x", schema.KindSession}, {"s:", schema.KindSession}, {"acl:x", schema.KindACL}, {"edit:", schema.KindEdit},
		{"appr:y", schema.KindDecision}, {schema.CapsuleMetaID, schema.KindCapsule}, {schema.ProjSpecID, schema.KindProjSpec},
		{m.ID, ""},
	} {
		d, err := crdt.NewMap().Set(9, st.MaxTimestamp()+1, rec.id, schema.FieldKind, []byte(rec.kind))
		if err != nil {
			f.Fatal(err)
		}
		d2, _ := crdt.NewMap().Set(9, st.MaxTimestamp()+2, rec.id, schema.FieldAuthor, []byte("agent://bob"))
		d.Join(d2)
		f.Add(d.Encode())
	}
	f.Add(crdt.NewMap().Retract(m.ID).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := crdt.DecodeMap(b, crdt.Limits{})
		if err != nil {
			return
		}
		before, err := s.Store().State("team://t")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyRemote("team://t", d); err != nil {
			after, _ := s.Store().State("team://t")
			if after.Digest() != before.Digest() {
				t.Fatalf("a refused delta (%v) changed the state", err)
			}
		}
		// Every read path over what was applied must hold up too.
		_, _ = s.Search(ctx, memorytest.Agent("bob"), memapi.SearchQuery{Query: "present", Filter: memapi.Filter{Namespace: "team://t"}})
		_, _ = s.Context(ctx, memorytest.Agent("bob"), memapi.ContextQuery{Filter: memapi.Filter{Namespace: "team://t"}})
	})
}

// BenchmarkSearch100kEdits is BenchmarkSearch100k with 100k approved edits
// present (one per memory: attenuate, amend of the importance, block,
// and 1 in 20 quarantined), proposed through the surgery feature and then
// reopened, so the edit map and the index are rebuilt from the store as
// on a restart. Compare its p95 with BenchmarkSearch100k's:
//
//	go test -run XXX -bench 'Search100k' -benchtime 2000x ./node/memory/
func BenchmarkSearch100kEdits(b *testing.B) {
	feats := func() []memory.Feature { return []memory.Feature{newSurgery(b, nil)} }
	s, dir, query := memory.LoadedWith(b, 100_000, 7, feats)
	caller := memapi.Caller{Principal: memory.BenchAgent}
	ctx := context.Background()
	mems, _, err := s.Memories(ctx, caller, memapi.Filter{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	surg := surgery.Of(s)
	for i, m := range mems {
		d, imp := -0.1, 0.7
		req := memapi.EditRequest{TargetID: m.ID, Reason: "bench", Op: memapi.OpAttenuate, Patch: memapi.EditPatch{ImportanceDelta: &d}}
		switch i % 20 {
		case 1, 2, 3, 4, 5:
			req.Op, req.Patch = memapi.OpAmend, memapi.EditPatch{Importance: &imp}
		case 6, 7, 8:
			req.Op, req.Patch = memapi.OpBlock, memapi.EditPatch{Channel: "team"}
		case 9:
			req.Op, req.Patch = memapi.OpQuarantine, memapi.EditPatch{}
		}
		if _, err := surg.Propose(ctx, caller, req); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("proposed %d edits in %v", len(mems), time.Since(start).Round(time.Millisecond))
	s.Close()
	start = time.Now()
	s = memory.OpenBenchWith(b, dir, false, feats()...)
	b.Logf("reopened with edits (index and edit map rebuilt) in %v", time.Since(start).Round(time.Millisecond))
	b.Cleanup(func() { s.Close() })
	if au, _ := surgery.Of(s).Audit(ctx, caller, memapi.AuditQuery{Status: memapi.StatusApproved}); len(au.Edits) != len(mems) {
		b.Fatalf("audit holds %d edits", len(au.Edits))
	}
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = query()
	}
	var lat []time.Duration
	hits := 0
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		res, err := s.Search(ctx, caller, memapi.SearchQuery{Query: q})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		hits += len(res.Results)
		for _, h := range res.Results {
			if h.Memory.EditsApplied != 1 {
				b.Fatalf("hit %s without its edit", h.Memory.ID)
			}
		}
	}
	b.ReportMetric(memory.Micros(memory.Percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(memory.Micros(memory.Percentile(lat, 0.95)), "p95-µs")
	b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
}

// TestUnownedKindsAreNotMemories: a record whose kind no attached feature
// owns (a capsule's meta record on a node without the capsule feature) is
// neither admitted nor indexed as a memory.
func TestUnownedKindsAreNotMemories(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	alice := memorytest.Agent("alice")
	s, _ := memorytest.Open(t, memory.Config{KV: memory.KVIn(t, dir), IsLocal: memorytest.AllLocal, Features: []memory.Feature{capsule.New()}})
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "fact", Content: "jack has the premium tier", SubjectType: "user", SubjectID: "jack"})
	if _, err := capsule.Of(s).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "user", SubjectID: "jack", Audience: []string{"agent://bob"}, IDs: []string{m.ID}}); err != nil {
		t.Fatal(err)
	}
	with := s.Indexed() // the memory and its capsule item
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	bare, _ := memorytest.Open(t, memory.Config{KV: memory.KVIn(t, dir), IsLocal: memorytest.AllLocal})
	if got := bare.Indexed(); got != with {
		t.Fatalf("without the capsule feature the index holds %d records, with it %d: a meta record was indexed as a memory", got, with)
	}
}

// TestCrashRestartOverMemKV: a node over the simulator's in-memory store,
// crashed, reopens through its real reopen path (contexts reloaded, index
// rebuilt, edits admitted before their targets are indexed): every
// acknowledged save and the approved edit hold, and the crashed service
// refuses further writes instead of acknowledging what it cannot keep.
func TestCrashRestartOverMemKV(t *testing.T) {
	ctx := context.Background()
	alice := memorytest.Agent("alice")
	kv := store.NewMemKV()
	s, clk := memorytest.Open(t, memory.Config{KV: kv, Features: []memory.Feature{newSurgery(t, nil)}})
	var ids []string
	for i := range 5 {
		clk.Advance(time.Minute)
		ids = append(ids, memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "fact", Content: fmt.Sprintf("kafka fact %d", i)}).ID)
	}
	if _, err := surgery.Of(s).Propose(ctx, alice, memapi.EditRequest{TargetID: ids[0], Op: memapi.OpQuarantine, Reason: "unverified"}); err != nil {
		t.Fatal(err)
	}
	restarted := kv.Crash()
	if _, err := s.Save(ctx, alice, memapi.SaveRequest{Type: "fact", Content: "after the crash"}); err == nil {
		t.Fatal("a crashed service acknowledged a save")
	}
	s2, _ := memorytest.Open(t, memory.Config{KV: restarted, Features: []memory.Feature{newSurgery(t, nil)}})
	res, err := s2.Search(ctx, alice, memapi.SearchQuery{Query: "kafka", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := memorytest.HitIDs(res); !memorytest.SameSet(got, ids[1:]) {
		t.Fatalf("after restart search finds %v, want %v (the quarantined one hidden)", got, ids[1:])
	}
	if m, err := s2.Get(ctx, alice, ids[0], false); err != nil || !m.Quarantined {
		t.Fatalf("the quarantine did not survive the crash: %+v %v", m, err)
	}
	if au, _ := surgery.Of(s2).Audit(ctx, alice, memapi.AuditQuery{}); len(au.Edits) != 1 {
		t.Fatalf("audit after restart: %+v", au.Edits)
	}
}
