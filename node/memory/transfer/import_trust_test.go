package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/transfer"
)

// exportOf builds a mnemo export of n plain memories created an hour before
// now, with ids as a node makes them.
func exportOf(now time.Time, n int) memapi.Export {
	ex := memapi.Export{Format: transfer.ExportFormat, Version: 1, ExportedAt: now}
	at := now.Add(-time.Hour)
	for i := range n {
		ex.Memories = append(ex.Memories, memapi.Memory{ID: memory.DerivedID(at, "trust", fmt.Sprint(i)), Type: "observation",
			Content: fmt.Sprintf("imported %d", i), Importance: 0.5, Confidence: 0.5, Scope: "project",
			Author: "agent://alice", CreatedAt: at, UpdatedAt: at})
	}
	return ex
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stateDigest is the digest of every record of ns in the store: any write,
// of any record kind, changes it.
func stateDigest(t *testing.T, s *memory.Service, ns string) string {
	t.Helper()
	m, err := s.Store().State(ns)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s/%d", m.Digest(), m.Len())
}

// An import keeps the importer as the author: the file's author,
// provenance and lineage count only when the owner asks for them.
func TestImportAuthorIsTheImporter(t *testing.T) {
	s, clk, alice := openTest(t, t.TempDir())
	bob := memapi.Caller{Principal: namespace.MustParse("agent://bob")}
	ctx := context.Background()
	ex := exportOf(clk.T, 1)
	m := &ex.Memories[0]
	m.Author, m.Lineage = "agent://ceo", memory.DerivedID(clk.T, "original")
	m.Provenance = []string{"author:agent://ceo", "source:" + m.Lineage}
	data := marshal(t, ex)

	before := stateDigest(t, s, "agent://alice")
	if _, err := transfer.Of(s).ImportWith(ctx, bob, data, memapi.ImportOptions{PreserveProvenance: true}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("a principal other than the owner preserved provenance: %v", err)
	}
	if stateDigest(t, s, "agent://alice") != before {
		t.Fatal("a refused import changed the state")
	}

	if _, err := transfer.Of(s).Import(ctx, alice, "subagent/plain", data); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, alice, m.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Author != "agent://alice" || got.Lineage != "" || len(got.Provenance) != 0 {
		t.Fatalf("default import kept the file's claims: author %q lineage %q provenance %v", got.Author, got.Lineage, got.Provenance)
	}

	// The owner restoring its own export keeps them.
	ex.Memories[0].ID = memory.DerivedID(clk.T, "second")
	if _, err := transfer.Of(s).ImportWith(ctx, alice, marshal(t, ex), memapi.ImportOptions{Namespace: "subagent/restore", PreserveProvenance: true}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Get(ctx, alice, ex.Memories[0].ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Author != "agent://ceo" || got.Lineage != m.Lineage || !slices.Equal(got.Provenance, m.Provenance) {
		t.Fatalf("preserving import: author %q lineage %q provenance %v", got.Author, got.Lineage, got.Provenance)
	}
}

// An import refuses ids outside the id alphabet (reserved record prefixes,
// paths) and times beyond the clock's skew bound, naming the record, and
// writes nothing — also when the bad item comes after the first write
// transaction's worth of good ones.
func TestImportRefusesBadIDsAndFutureTimes(t *testing.T) {
	s, clk, c := openTest(t, t.TempDir())
	ctx := context.Background()
	good := memory.DerivedID(clk.T, "x")
	skew := transfer.Of(s).MaxSkew()
	for name, tc := range map[string]struct {
		mod  func(*memapi.Export)
		want []string // substrings of the error
	}{
		"acl prefix":     {func(e *memapi.Export) { e.Memories[299].ID = "acl:" + good[4:] }, []string{"memory 299", `"acl:`}},
		"session prefix": {func(e *memapi.Export) { e.Memories[299].ID = "s:" + good[2:] }, []string{"memory 299", `"s:`}},
		"edit prefix":    {func(e *memapi.Export) { e.Memories[299].ID = "edit:" + good[5:] }, []string{"memory 299", "edit:"}},
		"appr prefix":    {func(e *memapi.Export) { e.Memories[299].ID = "appr:" + good[5:] }, []string{"memory 299", "appr:"}},
		"slash":          {func(e *memapi.Export) { e.Memories[299].ID = good[:10] + "/" + good[11:] }, []string{"memory 299", "/"}},
		"lower case":     {func(e *memapi.Export) { e.Memories[299].ID = strings.ToLower(good) }, []string{"memory 299"}},
		"future created": {func(e *memapi.Export) { e.Memories[299].CreatedAt = clk.T.Add(skew + time.Second) }, []string{"memory 299", clk.T.Add(skew + time.Second).UTC().Format(time.RFC3339), "created_at"}},
		"future updated": {func(e *memapi.Export) { e.Memories[299].UpdatedAt = clk.T.AddDate(500, 0, 0) }, []string{"memory 299", "updated_at"}},
		"future deleted": {func(e *memapi.Export) { d := clk.T.Add(time.Hour); e.Memories[299].DeletedAt = &d }, []string{"memory 299", "deleted_at"}},
		"future session": {func(e *memapi.Export) {
			e.Sessions = []memapi.Session{{ID: "later", StartedAt: clk.T.Add(2 * skew)}}
		}, []string{"session 0 (later)", "started_at"}},
	} {
		ex := exportOf(clk.T, 300) // more than one write transaction (importChunk)
		tc.mod(&ex)
		before := stateDigest(t, s, "agent://alice")
		_, err := transfer.Of(s).Import(ctx, c, "", marshal(t, ex))
		if !errors.Is(err, memapi.ErrInvalid) {
			t.Errorf("%s: %v, want memapi.ErrInvalid", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", name, err, w)
			}
		}
		if stateDigest(t, s, "agent://alice") != before {
			t.Fatalf("%s: a refused import changed the state", name)
		}
	}

	// Within the skew bound is accepted (clocks differ a little).
	ex := exportOf(clk.T, 1)
	ex.Memories[0].UpdatedAt = clk.T.Add(skew / 2)
	if _, err := transfer.Of(s).Import(ctx, c, "", marshal(t, ex)); err != nil {
		t.Fatalf("a time within the skew bound: %v", err)
	}
	// An engram observation from the future is refused the same way.
	eng := fmt.Sprintf(`{"observations":[{"id":1,"sync_id":"obs-1","content":"x","created_at":%q}]}`,
		clk.T.AddDate(1, 0, 0).Format(time.DateTime))
	if _, err := transfer.Of(s).Import(ctx, c, "", []byte(eng)); !errors.Is(err, memapi.ErrInvalid) || !strings.Contains(err.Error(), "observation 0 (obs-1)") {
		t.Fatalf("future engram observation: %v", err)
	}
}

// An imported id already used in another namespace is refused: ids are
// global, and a second memory under one would shadow the first.
func TestImportRefusesAnIDOfAnotherNamespace(t *testing.T) {
	s, clk, c := openTest(t, t.TempDir())
	ctx := context.Background()
	team := memorytest.Save(t, s, c, memapi.SaveRequest{Content: "the original"})
	ex := exportOf(clk.T, 2)
	ex.Memories[1].ID = team.ID
	before := stateDigest(t, s, "agent://alice/other")
	if _, err := transfer.Of(s).Import(ctx, c, "other", marshal(t, ex)); !errors.Is(err, memapi.ErrInvalid) || !strings.Contains(err.Error(), team.ID) {
		t.Fatalf("import over another namespace's id: %v", err)
	}
	if stateDigest(t, s, "agent://alice/other") != before {
		t.Fatal("a refused import changed the state")
	}
	if got, err := s.Get(ctx, c, team.ID, false); err != nil || got.Content != "the original" {
		t.Fatalf("the original: %+v %v", got, err)
	}
}

// In a namespace that replicates, even the owner's preserving import keeps
// only an author this node hosts: peers would refuse a record whose author
// another node hosts, so a foreign author goes to provenance.
func TestPreservedForeignAuthorInSharedNamespace(t *testing.T) {
	s, clk, alice := openTest(t, t.TempDir())
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, alice, "team://restore"); err != nil {
		t.Fatal(err)
	}
	ex := exportOf(clk.T, 1)
	ex.Memories[0].Author = "agent://ceo"
	if _, err := transfer.Of(s).ImportWith(ctx, alice, marshal(t, ex), memapi.ImportOptions{Namespace: "team://restore", PreserveProvenance: true}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, alice, ex.Memories[0].ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Author != "agent://alice" || !slices.Contains(got.Provenance, "author:agent://ceo") {
		t.Fatalf("author %q provenance %v", got.Author, got.Provenance)
	}
}
