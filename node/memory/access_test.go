package memory

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// accPrincipals are the agents of the access tests' node; alice owns it.
var accPrincipals = []string{"alice", "bob", "carol", "dave", "eve"}

func accAgent(name string) Caller { return Caller{Principal: namespace.MustParse("agent://" + name)} }

// openAccess opens a Service owned by alice over badgerkvtest.In(t, dir) on which
// every accPrincipal is local (bound to the node key), as principal rules
// or tokens make them.
func openAccess(t *testing.T, dir string, replica crdt.ReplicaID) (*Service, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	local := func(p namespace.Address) bool {
		return p.Kind == namespace.KindAgent && p.Path == "" && slices.Contains(accPrincipals, p.Name)
	}
	s, err := Open(Config{KV: badgerkvtest.In(t, dir), Agent: accAgent("alice").Principal, Now: clk.now, IsLocal: local, Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

func accGrant(t *testing.T, s *Service, by, ns, to, perms string) {
	t.Helper()
	if _, err := s.Grant(context.Background(), accAgent(by), GrantRequest{Namespace: ns, Principal: to, Permissions: strings.Split(perms, ",")}); err != nil {
		t.Fatalf("%s grants %s %s on %s: %v", by, to, perms, ns, err)
	}
}

func accCreate(t *testing.T, s *Service, by, ns string) {
	t.Helper()
	if _, err := s.CreateNamespace(context.Background(), accAgent(by), ns); err != nil {
		t.Fatalf("%s creates %s: %v", by, ns, err)
	}
}

// TestAccessTable runs every verb as every kind of principal against every
// kind of namespace, through the Service, and checks the acl defaults and
// grants decide: allowed verbs succeed (and reads see the memory), denied
// ones fail without revealing or changing anything.
func TestAccessTable(t *testing.T) {
	s, _ := openAccess(t, "", 0)
	ctx := context.Background()
	alice := accAgent("alice")

	accCreate(t, s, "alice", "team://backend")
	accGrant(t, s, "alice", "team://backend", "bob", "read,write")
	accCreate(t, s, "alice", "project://app")
	accGrant(t, s, "alice", "project://app", "carol", "write")
	// An admin grantee may grant others.
	accCreate(t, s, "alice", "team://ops")
	accGrant(t, s, "alice", "team://ops", "dave", "admin")
	accGrant(t, s, "dave", "team://ops", "carol", "read")
	// Where share and promote copy to: everyone may write it.
	accCreate(t, s, "alice", "team://commons")
	for _, p := range accPrincipals[1:] {
		accGrant(t, s, "alice", "team://commons", p, "member")
	}

	// fresh saves a memory as alice (who may write everywhere here).
	n := 0
	fresh := func(ns string) string {
		n++
		return mustSave(t, s, alice, SaveRequest{Namespace: ns, Type: "decision", Content: fmt.Sprintf("zebracorn fact %d for %s", n, ns)}).ID
	}

	const (
		read = iota
		write
		share
	)
	type verb struct {
		name string
		need int
		run  func(c Caller, ns string) error
	}
	seesIn := func(ids []string, id string) error {
		if !slices.Contains(ids, id) {
			return fmt.Errorf("%s not in the answer", id)
		}
		return nil
	}
	verbs := []verb{
		{"save", write, func(c Caller, ns string) error {
			_, err := s.Save(ctx, c, SaveRequest{Namespace: ns, Content: "written by " + c.Principal.String()})
			return err
		}},
		{"get", read, func(c Caller, ns string) error { _, err := s.Get(ctx, c, fresh(ns), false); return err }},
		{"update", write, func(c Caller, ns string) error {
			_, err := s.Update(ctx, c, fresh(ns), UpdateRequest{Title: ptr("changed")})
			return err
		}},
		{"delete", write, func(c Caller, ns string) error { return s.Delete(ctx, c, fresh(ns), false) }},
		{"retract", write, func(c Caller, ns string) error { return s.Retract(ctx, c, fresh(ns)) }},
		{"search", read, func(c Caller, ns string) error {
			id := fresh(ns)
			r, err := s.Search(ctx, c, SearchQuery{Query: "zebracorn", Filter: Filter{Namespace: ns}, Limit: 100})
			if err != nil {
				return err
			}
			return seesIn(hitIDs(r), id)
		}},
		{"timeline", read, func(c Caller, ns string) error {
			_, err := s.Timeline(ctx, c, TimelineQuery{ID: fresh(ns)})
			return err
		}},
		{"context", read, func(c Caller, ns string) error {
			id := fresh(ns)
			r, err := s.Context(ctx, c, ContextQuery{Filter: Filter{Namespace: ns}, MaxTokens: MaxMaxTokens})
			if err != nil {
				return err
			}
			return seesIn(memIDs(r.Memories), id)
		}},
		{"compact-identify", read, func(c Caller, ns string) error {
			_, err := s.Compact(ctx, c, CompactRequest{Namespace: ns, OlderThanDays: 1})
			return err
		}},
		{"compact-execute", write, func(c Caller, ns string) error {
			_, err := s.Compact(ctx, c, CompactRequest{CompactIDs: []string{fresh(ns)}})
			return err
		}},
		{"stats", read, func(c Caller, ns string) error {
			_, err := s.Stats(ctx, c, ns)
			return err
		}},
		{"dump", read, func(c Caller, ns string) error { // what transfer's Export reads
			id := fresh(ns)
			ex, err := dump(s, c, ns)
			if err != nil {
				return err
			}
			return seesIn(memIDs(ex.Memories), id)
		}},
		{"share", share, func(c Caller, ns string) error {
			_, err := s.Share(ctx, c, ShareRequest{ID: fresh(ns), Namespace: c.Principal.String() + "/inbox"})
			return err
		}},
		{"promote", share, func(c Caller, ns string) error {
			_, err := s.Promote(ctx, c, PromoteRequest{ID: fresh(ns), Namespace: "team://commons"})
			return err
		}},
		{"acl", read, func(c Caller, ns string) error { _, err := s.ACL(ctx, c, ns); return err }},
	}
	all := []bool{true, true, true}
	none := []bool{false, false, false}
	cases := []struct {
		who, ns string
		may     []bool // read, write, share
	}{
		{"alice", "agent://alice", all},
		{"alice", "agent://alice/sub/task", all},
		{"bob", "agent://alice", none},
		{"bob", "agent://alice/sub", none},
		{"eve", "agent://alice", none},
		{"alice", "team://backend", all},
		{"alice", "team://backend/api", all},
		{"bob", "team://backend", []bool{true, true, false}},
		{"bob", "team://backend/api", []bool{true, true, false}},
		{"eve", "team://backend", none},
		{"carol", "team://backend", none},
		{"alice", "project://app", all},
		{"eve", "project://app", []bool{true, false, false}},
		{"carol", "project://app", []bool{true, true, false}},
		{"dave", "team://ops", all},
		{"carol", "team://ops", []bool{true, false, false}},
		{"eve", "team://ops", none},
	}
	for _, tc := range cases {
		c := accAgent(tc.who)
		for _, v := range verbs {
			t.Run(tc.who+"/"+tc.ns+"/"+v.name, func(t *testing.T) {
				want := tc.may[v.need]
				if v.name == "promote" && strings.HasPrefix(tc.ns, "team://commons") {
					want = false
				}
				err := v.run(c, tc.ns)
				switch {
				case want && err != nil:
					t.Fatalf("%s %s on %s: want allowed, got %v", tc.who, v.name, tc.ns, err)
				case !want && err == nil:
					t.Fatalf("%s %s on %s: want denied, got allowed", tc.who, v.name, tc.ns)
				case !want && !errors.Is(err, acl.ErrDenied) && !errors.Is(err, ErrNotFound) &&
					!(v.name == "compact-execute" && errors.Is(err, ErrInvalid)):
					t.Fatalf("%s %s on %s: want a denial (permission_denied, or not found hiding the id), got %v", tc.who, v.name, tc.ns, err)
				}
			})
		}
	}

	// Default recall (no namespace): own plus shared, never anyone else's.
	for _, tc := range []struct {
		who  string
		sees []string
	}{
		{"alice", []string{"agent://alice", "team://backend", "project://app", "team://ops", "team://commons"}},
		{"bob", []string{"agent://bob", "team://backend", "project://app", "team://commons"}},
		{"eve", []string{"agent://eve", "project://app", "team://commons"}},
		{"carol", []string{"agent://carol", "project://app", "team://ops", "team://commons"}},
	} {
		c := accAgent(tc.who)
		st, err := s.Stats(ctx, c, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for ns := range st.ByNamespace {
			if a := namespace.MustParse(ns).Root().String(); !slices.Contains(got, a) {
				got = append(got, a)
			}
		}
		for _, ns := range got {
			if !slices.Contains(tc.sees, ns) {
				t.Errorf("%s's default recall includes %s (stats %v)", tc.who, ns, st.ByNamespace)
			}
		}
		r, err := s.Search(ctx, c, SearchQuery{Query: "zebracorn", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, h := range r.Results {
			if seen[h.Memory.ID] {
				t.Errorf("%s's default search lists %s twice", tc.who, h.Memory.ID)
			}
			seen[h.Memory.ID] = true
			if root := namespace.MustParse(h.Memory.Namespace).Root().String(); !slices.Contains(tc.sees, root) {
				t.Errorf("%s's default search shows %s from %s", tc.who, h.Memory.ID, h.Memory.Namespace)
			}
		}
		ex, err := dump(s, c, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ex.Memories {
			if root := namespace.MustParse(m.Namespace).Root().String(); !slices.Contains(tc.sees, root) {
				t.Errorf("%s's dump holds %s from %s", tc.who, m.ID, m.Namespace)
			}
		}
		infos, err := s.Namespaces(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, in := range infos {
			listed = append(listed, in.Namespace)
		}
		if !sameSet(listed, tc.sees) {
			t.Errorf("%s's namespaces %v, want %v", tc.who, listed, tc.sees)
		}
	}
}

// TestAccessAdminVerbs covers who may create, grant and revoke, and the
// 400s and 409s they answer.
func TestAccessAdminVerbs(t *testing.T) {
	s, _ := openAccess(t, "", 0)
	ctx := context.Background()
	accCreate(t, s, "alice", "team://backend")
	if _, err := s.CreateNamespace(ctx, accAgent("bob"), "team://backend"); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	for _, bad := range []string{"agent://alice", "team://backend/x", "team://", "nope"} {
		if _, err := s.CreateNamespace(ctx, accAgent("alice"), bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.CreateNamespace(ctx, Caller{Principal: namespace.MustParse("agent://stranger")}, "team://x"); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("a non-local principal created a namespace: %v", err)
	}
	for _, tc := range []struct {
		by  string
		req GrantRequest
		is  error
	}{
		{"bob", GrantRequest{Namespace: "team://backend", Principal: "bob", Permissions: []string{"read"}}, acl.ErrDenied},
		{"bob", GrantRequest{Namespace: "agent://alice", Principal: "bob", Permissions: []string{"read"}}, acl.ErrDenied},
		{"alice", GrantRequest{Namespace: "team://backend", Principal: "bob", Permissions: []string{"fly"}}, ErrInvalid},
		{"alice", GrantRequest{Namespace: "team://backend", Principal: "team://x", Permissions: []string{"read"}}, ErrInvalid},
		{"alice", GrantRequest{Namespace: "team://backend/x", Principal: "bob", Permissions: []string{"read"}}, ErrInvalid},
		{"alice", GrantRequest{Namespace: "team://nope", Principal: "bob", Permissions: []string{"read"}}, acl.ErrDenied},
		{"alice", GrantRequest{Namespace: "team://backend", Principal: "bob"}, ErrInvalid},
	} {
		if _, err := s.Grant(ctx, accAgent(tc.by), tc.req); !errors.Is(err, tc.is) {
			t.Errorf("%s grant %+v: %v, want %v", tc.by, tc.req, err, tc.is)
		}
	}
	_, err := s.Grant(ctx, accAgent("alice"), GrantRequest{Namespace: "team://backend", Principal: "bob", Permissions: []string{"fly"}})
	if err == nil || !strings.Contains(err.Error(), `"fly"`) {
		t.Errorf("unknown permission error does not name it: %v", err)
	}
	if _, err := s.Revoke(ctx, accAgent("alice"), GrantRequest{Namespace: "team://backend", Principal: "alice", Permissions: []string{"admin"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("revoking the creator: %v", err)
	}
	// Owner grants on its own agent namespace; revoke; re-grant follows the revoke.
	bob := accAgent("bob")
	secret := mustSave(t, s, accAgent("alice"), SaveRequest{Content: "alice's secret"}).ID
	if _, err := s.Get(ctx, bob, secret, false); err == nil {
		t.Fatal("bob reads alice's memory before any grant")
	}
	accGrant(t, s, "alice", "agent://alice", "bob", "read")
	if _, err := s.Get(ctx, bob, secret, false); err != nil {
		t.Fatalf("bob cannot read after the grant: %v", err)
	}
	if _, err := s.Save(ctx, bob, SaveRequest{Namespace: "agent://alice", Content: "x"}); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("read grant allowed a write: %v", err)
	}
	res, err := s.Revoke(ctx, accAgent("alice"), GrantRequest{Namespace: "agent://alice", Principal: "bob", Permissions: []string{"read"}})
	if err != nil || len(res.Permissions) != 0 {
		t.Fatalf("revoke: %+v %v", res, err)
	}
	if _, err := s.Get(ctx, bob, secret, false); err == nil {
		t.Fatal("bob reads after the revoke")
	}
	g, err := s.Grant(ctx, accAgent("alice"), GrantRequest{Namespace: "agent://alice", Principal: "bob", Permissions: []string{"read"}})
	if err != nil || len(g.Record.After) != 1 || !slices.Equal(g.Permissions, []string{"read"}) {
		t.Fatalf("re-grant: %+v %v", g, err)
	}
	v, err := s.ACL(ctx, accAgent("alice"), "agent://alice")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range v.Entries {
		if e.Principal == "agent://bob" && e.Permission == "read" && e.Signer == "agent://alice" && e.RecordID == g.Record.ID {
			found = true
		}
	}
	if !found {
		t.Fatalf("ACL does not list bob's grant: %+v", v)
	}
	// acl: ids are not memories.
	if _, err := s.Get(ctx, accAgent("alice"), schema.ACLPrefix+g.Record.ID, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of an acl record: %v", err)
	}
	if err := s.Retract(ctx, accAgent("alice"), schema.ACLPrefix+g.Record.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retract of an acl record: %v", err)
	}
	if r, _ := s.Search(ctx, accAgent("alice"), SearchQuery{Query: "acl grant read"}); r.Total != 0 {
		t.Fatalf("acl records in search: %+v", r)
	}
}

// TestAccessForgedRecords injects acl records straight into the store, as
// a malicious peer would, and checks none of them grants anything, after a
// reopen too; ApplyRemote refuses the ones whose bytes are bad.
func TestAccessForgedRecords(t *testing.T) {
	dir := t.TempDir()
	s, _ := openAccess(t, dir, 0)
	ctx := context.Background()
	alice, eve := accAgent("alice"), accAgent("eve")
	secret := mustSave(t, s, alice, SaveRequest{Content: "alice's secret plan"}).ID
	nodeID := s.Identity()
	seed := sha256.Sum256([]byte("attacker"))
	attacker, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	ns := alice.Principal
	ts := crdt.MakeTimestamp(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).UnixMilli(), 0)
	mk := func(r acl.SignedRecord, err error) acl.SignedRecord {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	unsigned := mk(acl.NewGrant(nodeID, alice.Principal, ns, eve.Principal, acl.AllPermissions(), nil, ts))
	unsigned.Sig = nil
	badSig := mk(acl.NewGrant(nodeID, alice.Principal, ns, eve.Principal, acl.AllPermissions(), nil, ts+1))
	badSig.Sig = attacker.Sign([]byte("something else"))
	wrongKey := mk(acl.NewGrant(attacker, alice.Principal, ns, eve.Principal, acl.AllPermissions(), nil, ts+2))
	selfGrant := mk(acl.NewGrant(nodeID, eve.Principal, ns, eve.Principal, acl.AllPermissions(), nil, ts+3))
	tampered := mk(acl.NewGrant(nodeID, alice.Principal, ns, eve.Principal, []acl.Permission{acl.Write}, nil, ts+4))
	tampered.Perms = acl.AllPermissions() // signature no longer covers it
	stolen := mk(acl.NewCreate(attacker, eve.Principal, namespace.MustParse("team://backend"), ts-1000))
	cases := []struct {
		name   string
		rec    acl.SignedRecord
		id     string // default schema.ACLPrefix + rec.ID()
		ns     string // default rec.Namespace
		remote bool   // ApplyRemote refuses it (bad bytes or signature)
	}{
		{"unsigned", unsigned, "", "", true},
		{"bad signature", badSig, "", "", true},
		{"signed by another node's key", wrongKey, "", "", false},
		{"signed by a principal without admin", selfGrant, "", "", false},
		{"tampered after signing", tampered, "", "", true},
		{"stored under another id", selfGrant, schema.ACLPrefix + strings.Repeat("0", 64), "", true},
		{"stored in another namespace", unsigned, "", "agent://eve", true},
		{"back-dated creation by another key", stolen, "", "", false},
	}
	accCreate(t, s, "alice", "team://backend")
	inject := func(write func(fn func(tx *store.Tx) error) error, ns, id string, raw []byte) error {
		return write(func(tx *store.Tx) error {
			_, ts := s.now()
			e, err := tx.Edit(ns, id)
			if err != nil {
				return err
			}
			if err := e.Set(ts, schema.FieldKind, []byte(schema.KindACL)); err != nil {
				return err
			}
			if err := e.Set(ts, schema.FieldACL, raw); err != nil {
				return err
			}
			tx.Commit(ns, id, e)
			return nil
		})
	}
	canRead := func(s *Service) bool {
		_, err := s.Get(ctx, eve, secret, false)
		r, _ := s.Search(ctx, eve, SearchQuery{Query: "secret plan"})
		return err == nil || r.Total > 0 || s.Policy().Allowed(eve.Principal, ns, acl.Read)
	}
	for _, tc := range cases {
		id, where := tc.id, tc.ns
		if id == "" {
			id = schema.ACLPrefix + tc.rec.ID()
		}
		if where == "" {
			where = tc.rec.Namespace.String()
		}
		raw := tc.rec.Encode()
		// Through replication's door.
		d := crdt.NewMap()
		e, err := d.Edit(99, id, crdt.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		e.Set(ts, schema.FieldKind, []byte(schema.KindACL))
		e.Set(ts, schema.FieldACL, raw)
		d.Join(e.Delta())
		err = s.ApplyRemote(where, d)
		if tc.remote && err == nil {
			t.Errorf("%s: ApplyRemote accepted it", tc.name)
		}
		// Straight into the store, bypassing every check but the book's.
		if err := inject(s.write, where, id, raw); err != nil {
			t.Fatalf("%s: inject: %v", tc.name, err)
		}
		if canRead(s) {
			t.Fatalf("%s: eve can read alice's namespace", tc.name)
		}
	}
	if root, _, _ := s.Policy().Root(namespace.MustParse("team://backend")); root != alice.Principal {
		t.Fatalf("a back-dated creation by another key took team://backend: root %s", root)
	}
	s.Close()
	s2, _ := openAccess(t, dir, 0)
	if canRead(s2) {
		t.Fatal("after reopening, a forged record grants eve read")
	}
	if root, _, _ := s2.Policy().Root(namespace.MustParse("team://backend")); root != alice.Principal {
		t.Fatalf("after reopening, team://backend's root is %s", root)
	}
	// A genuine grant still works next to the forgeries.
	accGrant(t, s2, "alice", "agent://alice", "eve", "read")
	if !canRead(s2) {
		t.Fatal("a genuine grant does not count")
	}
}

// TestAccessConcurrentGrantRevoke: a revoke and a grant made concurrently
// on two copies of a namespace's state resolve, once joined, to revoked on
// both; a grant made after seeing the revoke then restores access.
func TestAccessConcurrentGrantRevoke(t *testing.T) {
	ctx := context.Background()
	a, _ := openAccess(t, "", 1)
	b, _ := openAccess(t, "", 2) // a copy of the node (same key), another replica
	bob := accAgent("bob").Principal
	team := namespace.MustParse("team://t")
	accCreate(t, a, "alice", "team://t")
	accGrant(t, a, "alice", "team://t", "bob", "read")
	sync := func(from, to *Service) {
		t.Helper()
		st, err := from.Store().State(team.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := to.ApplyRemote(team.String(), st); err != nil {
			t.Fatal(err)
		}
	}
	sync(a, b)
	if !b.Policy().Allowed(bob, team, acl.Read) {
		t.Fatal("the copy does not see bob's grant")
	}
	if _, err := a.Revoke(ctx, accAgent("alice"), GrantRequest{Namespace: "team://t", Principal: "bob", Permissions: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	accGrant(t, b, "alice", "team://t", "bob", "read") // has not seen the revoke
	if a.Policy().Allowed(bob, team, acl.Read) || !b.Policy().Allowed(bob, team, acl.Read) {
		t.Fatal("before the join: a should deny, b allow")
	}
	sync(a, b)
	sync(b, a)
	for i, s := range []*Service{a, b} {
		if s.Policy().Allowed(bob, team, acl.Read) {
			t.Fatalf("replica %d: a grant concurrent with a revoke won", i)
		}
	}
	accGrant(t, a, "alice", "team://t", "bob", "read") // follows the revoke
	sync(a, b)
	for i, s := range []*Service{a, b} {
		if !s.Policy().Allowed(bob, team, acl.Read) {
			t.Fatalf("replica %d: a grant made after the revoke does not count", i)
		}
	}
}

// TestAccessSharing covers share, promote (copy and move, with the
// reference), retract and auto-promotion.
func TestAccessSharing(t *testing.T) {
	ctx := context.Background()
	s, _ := openAccess(t, "", 0)
	alice, bob := accAgent("alice"), accAgent("bob")
	accCreate(t, s, "alice", "team://backend")
	accGrant(t, s, "alice", "team://backend", "bob", "member")
	src := mustSave(t, s, alice, SaveRequest{Type: "decision", Title: "Use Badger", Content: "badger for storage", Tags: []string{"db"}, TopicKey: "storage/engine"})

	sh, err := s.Share(ctx, alice, ShareRequest{ID: src.ID, Namespace: "team://backend"})
	if err != nil || sh.Existing || sh.Memory.Lineage != src.ID || sh.Memory.Namespace != "team://backend" || sh.Memory.TopicKey != "" ||
		!slices.Contains(sh.Memory.Provenance, "source:"+src.ID) || !slices.Contains(sh.Memory.Provenance, "author:agent://alice") {
		t.Fatalf("share: %+v %v", sh, err)
	}
	again, err := s.Share(ctx, alice, ShareRequest{ID: src.ID, Namespace: "team://backend"})
	if err != nil || !again.Existing || again.Memory.ID != sh.Memory.ID {
		t.Fatalf("share again: %+v %v", again, err)
	}
	if got, err := s.Get(ctx, bob, sh.Memory.ID, false); err != nil || got.Content != src.Content {
		t.Fatalf("bob reads the shared copy: %+v %v", got, err)
	}
	if _, err := s.Get(ctx, bob, src.ID, false); err == nil {
		t.Fatal("bob reads the original")
	}
	// Bob holds read+write, not share: he cannot copy out of the team.
	if _, err := s.Share(ctx, bob, ShareRequest{ID: sh.Memory.ID, Namespace: "agent://bob"}); !errors.Is(err, acl.ErrDenied) || !strings.Contains(err.Error(), "share") {
		t.Fatalf("bob shares out of the team: %v", err)
	}

	// Promote by move: the original goes, a reference stays and resolves.
	mv := mustSave(t, s, alice, SaveRequest{Type: "pattern", Content: "retry with jitter"})
	pr, err := s.Promote(ctx, alice, PromoteRequest{ID: mv.ID, Namespace: "team://backend", Mode: "move"})
	if err != nil || pr.Reference == nil || pr.Reference.Type != TypeReference || pr.Reference.Lineage != pr.Memory.ID || pr.Reference.Namespace != "agent://alice" {
		t.Fatalf("promote move: %+v %v", pr, err)
	}
	if _, err := s.Get(ctx, alice, mv.ID, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the moved original is still live: %v", err)
	}
	got, err := s.Get(ctx, alice, pr.Reference.ID, false)
	if err != nil || got.ID != pr.Memory.ID || got.ResolvedFrom != pr.Reference.ID || got.Content != "retry with jitter" {
		t.Fatalf("get of the reference: %+v %v", got, err)
	}
	if _, err := s.Promote(ctx, alice, PromoteRequest{ID: src.ID, Namespace: "agent://alice/x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("promote into an agent namespace: %v", err)
	}
	if _, err := s.Promote(ctx, alice, PromoteRequest{ID: src.ID, Namespace: "team://backend", Mode: "teleport"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown mode: %v", err)
	}

	// Retract from the shared namespace: final.
	if err := s.Retract(ctx, bob, sh.Memory.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, alice, sh.Memory.ID, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retracted copy still there: %v", err)
	}
	re, err := s.Share(ctx, alice, ShareRequest{ID: src.ID, Namespace: "team://backend"})
	if err != nil || re.Existing || re.Memory.ID == sh.Memory.ID {
		t.Fatalf("sharing again after a retract: %+v %v", re, err)
	}
}

func TestAccessAutoPromote(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	s, err := Open(Config{Agent: accAgent("alice").Principal, Now: clk.now,
		AutoPromote: AutoPromote{Enabled: true, Namespace: "team://shared"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	alice := accAgent("alice")
	// Before the namespace exists alice may not write it: saves still work.
	early := mustSave(t, s, alice, SaveRequest{Type: "decision", Content: "early decision", Confidence: ptr(0.95)})
	accCreate(t, s, "alice", "team://shared")
	shared := func() []Memory {
		ex, err := dump(s, alice, "team://shared")
		if err != nil {
			t.Fatal(err)
		}
		return ex.Memories
	}
	if n := len(shared()); n != 0 {
		t.Fatalf("%d memories promoted before the namespace existed", n)
	}
	d := mustSave(t, s, alice, SaveRequest{Type: "decision", Content: "use badger", Confidence: ptr(0.95), TopicKey: "db"})
	mustSave(t, s, alice, SaveRequest{Type: "decision", Content: "low confidence", Confidence: ptr(0.5)})
	mustSave(t, s, alice, SaveRequest{Type: "observation", Content: "not eligible", Confidence: ptr(1.0)})
	mustSave(t, s, alice, SaveRequest{Type: "decision", Content: "use badger", Confidence: ptr(0.95), TopicKey: "db"}) // same again
	got := shared()
	if len(got) != 1 || got[0].Lineage != d.ID || !slices.Contains(got[0].Tags, TagShared) || !slices.Contains(got[0].Tags, TagPromotedAuto) {
		t.Fatalf("auto-promoted: %+v", got)
	}
	_ = early
	if _, err := Open(Config{Agent: alice.Principal, AutoPromote: AutoPromote{Enabled: true, Namespace: "agent://x"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("auto-promotion into an agent namespace: %v", err)
	}
}
