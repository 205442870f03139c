package memory

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// Helpers shared by this package's tests. openTest and fakeClock live in
// service_test.go.

func ptr[T any](v T) *T { return &v }

func (f *fakeClock) advance(d time.Duration) { f.t = f.t.Add(d) }

func mustSave(t testing.TB, s *Service, c Caller, req SaveRequest) SaveResult {
	t.Helper()
	r, err := s.Save(context.Background(), c, req)
	if err != nil {
		t.Fatalf("save %.60q: %v", req.Content, err)
	}
	return r
}

// dumped is every memory (deleted and quarantined ones included) and
// session a caller can read under a namespace: what an export holds.
type dumped struct {
	Memories []Memory
	Sessions []Session
}

// dump reads what c can read under ns ("": everywhere) as the transfer
// feature's Export does, through the Core's reads (a feature package
// cannot be imported here); errors are ReadScope's.
func dump(s *Service, c Caller, ns string) (dumped, error) {
	core := &Core{s: s}
	sf, err := core.ReadScope(c, ns)
	if err != nil {
		return dumped{}, err
	}
	sf.IncludeDeleted, sf.IncludeHidden = true, true
	return dumped{Memories: core.List(sf, false, 0), Sessions: core.ReadableSessions(sf)}, nil
}

// snapshot is everything a caller can observe in bulk: its stats and a full
// dump. Two equal snapshots mean nothing visible changed in between.
func snapshot(t testing.TB, s *Service, c Caller) string {
	t.Helper()
	st, err := s.Stats(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := dump(s, c, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(struct {
		Stats Stats
		Dump  dumped
	}{st, d}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func memIDs(ms []Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func hitIDs(r SearchResult) []string {
	out := make([]string, len(r.Results))
	for i, h := range r.Results {
		out[i] = h.Memory.ID
	}
	return out
}

// sameSet reports whether a and b hold the same ids, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
