// Package memorytest opens memory services for the tests of node/memory's
// feature packages (capsule, bundle, …), which cannot use node/memory's own
// unexported test helpers: a settable clock, a node whose listed agents are
// all local, and the few assertions those tests share. Test code only.
package memorytest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/transfer"
)

// Start is the clock's first reading.
var Start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// Clock is a settable wall clock.
type Clock struct{ T time.Time }

// Now reads the clock.
func (c *Clock) Now() time.Time { return c.T }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.T = c.T.Add(d) }

// Principals are the agents AllLocal makes local; alice owns the node.
var Principals = []string{"alice", "bob", "carol", "dave", "eve"}

// AllLocal is a Config.IsLocal on which every agent of Principals is local
// (bound to the node key), as principal rules or tokens make them.
func AllLocal(p namespace.Address) bool {
	return p.Kind == namespace.KindAgent && p.Path == "" && slices.Contains(Principals, p.Name)
}

// Agent is the caller agent://NAME.
func Agent(name string) memapi.Caller {
	return memapi.Caller{Principal: namespace.MustParse("agent://" + name)}
}

// Open opens a Service owned by alice with cfg's other fields (Features,
// IsLocal, Approvals, Replica, KV; nil keeps it in memory) and a Clock at
// Start; it is closed when the test ends.
func Open(t testing.TB, cfg memory.Config) (*memory.Service, *Clock) {
	t.Helper()
	clk := &Clock{T: Start}
	cfg.Agent = Agent("alice").Principal
	cfg.Now = clk.Now
	s, err := memory.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

// Grant has by grant perms (comma-separated) on ns to agent to.
func Grant(t testing.TB, s *memory.Service, by, ns, to, perms string) {
	t.Helper()
	req := memapi.GrantRequest{Namespace: ns, Principal: to, Permissions: strings.Split(perms, ",")}
	if _, err := s.Grant(context.Background(), Agent(by), req); err != nil {
		t.Fatalf("%s grants %s %s on %s: %v", by, to, perms, ns, err)
	}
}

// Create has by create namespace ns.
func Create(t testing.TB, s *memory.Service, by, ns string) {
	t.Helper()
	if _, err := s.CreateNamespace(context.Background(), Agent(by), ns); err != nil {
		t.Fatalf("%s creates %s: %v", by, ns, err)
	}
}

// Save saves req as c, failing the test on an error.
func Save(t testing.TB, s *memory.Service, c memapi.Caller, req memapi.SaveRequest) memapi.SaveResult {
	t.Helper()
	r, err := s.Save(context.Background(), c, req)
	if err != nil {
		t.Fatalf("save %.60q: %v", req.Content, err)
	}
	return r
}

// IDs lists the memories' ids, in order.
func IDs(ms []memapi.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// HitIDs lists a search's result ids, in order.
func HitIDs(r memapi.SearchResult) []string {
	out := make([]string, len(r.Results))
	for i, h := range r.Results {
		out[i] = h.Memory.ID
	}
	return out
}

// SameSet reports whether a and b hold the same ids, in any order.
func SameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Snapshot is everything c can observe in bulk: its stats and a full
// export, so s needs the transfer feature attached. Two equal snapshots
// mean nothing visible changed in between.
func Snapshot(t testing.TB, s *memory.Service, c memapi.Caller) string {
	t.Helper()
	ctx := context.Background()
	st, err := s.Stats(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	tr := transfer.Of(s)
	if tr == nil {
		t.Fatal("memorytest.Snapshot: the service has no transfer feature (attach transfer.New())")
	}
	ex, err := tr.Export(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(struct {
		Stats  memapi.Stats
		Export memapi.Export
	}{st, ex}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
