package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
)

// fakeClock is a settable wall clock for tests.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

// openTest opens a Service owned by alice over badgerkvtest.In(t, dir).
func openTest(t *testing.T, dir string) (*Service, *fakeClock, Caller) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	agent := namespace.MustParse("agent://alice")
	s, err := Open(Config{KV: badgerkvtest.In(t, dir), Agent: agent, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk, Caller{Principal: agent}
}

func TestSaveSearchGetUpdateDelete(t *testing.T) {
	s, _, c := openTest(t, t.TempDir())
	ctx := context.Background()
	r, err := s.Save(ctx, c, SaveRequest{Type: "decision", Title: "Use Badger for storage", Content: "We chose Badger because it is embedded.", Tags: []string{"storage", "db"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == "" || r.Upserted || r.Namespace != "agent://alice" || r.Importance != 0.5 {
		t.Fatalf("bad save result %+v", r)
	}
	// the content hash, made before the write, is the content's
	if want := schema.ContentHash(r.Content); r.ContentHash != want {
		t.Fatalf("content hash %q, want %q", r.ContentHash, want)
	}
	if m, err := s.Get(ctx, c, r.ID, false); err != nil || m.ContentHash != r.ContentHash {
		t.Fatalf("stored content hash: %+v %v", m, err)
	}
	res, err := s.Search(ctx, c, SearchQuery{Query: "badger"})
	if err != nil || res.Total != 1 || res.Results[0].Memory.ID != r.ID || res.Results[0].Score <= 0 {
		t.Fatalf("search: %+v %v", res, err)
	}
	title := "Use Badger v4"
	m, err := s.Update(ctx, c, r.ID, UpdateRequest{Title: &title, Tags: &[]string{"storage"}})
	if err != nil || m.Title != title || len(m.Tags) != 1 {
		t.Fatalf("update: %+v %v", m, err)
	}
	if err := s.Delete(ctx, c, r.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, c, r.ID, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted memory visible: %v", err)
	}
	if got, err := s.Get(ctx, c, r.ID, true); err != nil || got.DeletedAt == nil {
		t.Fatalf("include_deleted: %+v %v", got, err)
	}
	if res, _ := s.Search(ctx, c, SearchQuery{Query: "badger"}); res.Total != 0 {
		t.Fatalf("deleted memory in search: %+v", res)
	}
	if err := s.Delete(ctx, c, r.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, c, r.ID, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retracted memory visible: %v", err)
	}
}

func TestTopicKeyUpsert(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	a, err := s.Save(ctx, c, SaveRequest{Content: "v1", TopicKey: "arch/storage"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Save(ctx, c, SaveRequest{Content: "v2", TopicKey: "arch/storage"})
	if err != nil || !b.Upserted || b.ID != a.ID || b.Content != "v2" {
		t.Fatalf("upsert: %+v %v", b, err)
	}
}

func TestDurableAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, _, c := openTest(t, dir)
	ctx := context.Background()
	var ids []string
	for i := range 20 {
		r, err := s.Save(ctx, c, SaveRequest{Content: "note number " + string(rune('a'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, _, _ := openTest(t, dir)
	for _, id := range ids {
		if _, err := s2.Get(ctx, c, id, false); err != nil {
			t.Fatalf("lost %s: %v", id, err)
		}
	}
	// the clock resumes after what was stored, so new writes order later
	r, err := s2.Save(ctx, c, SaveRequest{Content: "after restart"})
	if err != nil || r.ID == "" {
		t.Fatal(err)
	}
}

// TestServiceOwnsItsKV: a Service holds its data directory (a second
// open fails with ErrLocked) until Close, and an Open that fails releases
// it too.
func TestServiceOwnsItsKV(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := openTest(t, dir)
	if _, err := badgerkv.Open(dir, badgerkv.Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{KV: badgerkvtest.In(t, dir), Agent: namespace.MustParse("team://x")}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("open with a team as owner: %v", err)
	}
	kv := badgerkvtest.In(t, dir) // free again: neither Close nor the failed Open kept it
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOtherAgentDenied(t *testing.T) {
	s, _, c := openTest(t, "")
	ctx := context.Background()
	r, _ := s.Save(ctx, c, SaveRequest{Content: "secret"})
	bob := Caller{Principal: namespace.MustParse("agent://bob")}
	if _, err := s.Get(ctx, bob, r.ID, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob read alice's memory: %v", err)
	}
	if _, err := s.Save(ctx, bob, SaveRequest{Namespace: "agent://alice", Content: "x"}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("bob wrote alice's namespace: %v", err)
	}
	if res, _ := s.Search(ctx, bob, SearchQuery{Query: "secret"}); res.Total != 0 {
		t.Fatalf("bob searched alice's memory")
	}
}
