package memory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
)

// FuzzApplyRemote feeds a Service whatever delta a peer could send (any
// bytes that decode as a crdt.Map within limits) into a team namespace it
// holds, with memories, sessions, acl and surgery records present: it must
// never panic, and whatever it refuses must change nothing. (A member once
// crashed a node with a one-character session id.)
func FuzzApplyRemote(f *testing.F) {
	clk := &fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	local := func(p namespace.Address) bool {
		return p.Kind == namespace.KindAgent && p.Path == "" && slices.Contains(accPrincipals, p.Name)
	}
	s, err := Open(Config{Agent: accAgent("alice").Principal, Now: clk.now, IsLocal: local})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, accAgent("alice"), "team://t"); err != nil {
		f.Fatal(err)
	}
	if _, err := s.Grant(ctx, accAgent("alice"), GrantRequest{Namespace: "team://t", Principal: "agent://bob", Permissions: []string{"member"}}); err != nil {
		f.Fatal(err)
	}
	m, err := s.Save(ctx, accAgent("alice"), SaveRequest{Namespace: "team://t", Content: "present before every delta", Tags: []string{"a"}})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := s.ProposeEdit(ctx, accAgent("alice"), EditRequest{TargetID: m.ID, Op: OpQuarantine, Reason: "fuzz"}); err != nil {
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
		_, _ = s.Search(ctx, accAgent("bob"), SearchQuery{Query: "present", Filter: Filter{Namespace: "team://t"}})
		_, _ = s.Context(ctx, accAgent("bob"), ContextQuery{Filter: Filter{Namespace: "team://t"}})
	})
}
