package acl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

// defaultsWorld: carol created team://backend and project://web; bob is a
// backend member; dave holds admin on backend and granted erin read; bob may
// write the project. mallory is not a member of the cluster.
func defaultsWorld(t *testing.T) *world {
	w := newWorld(t, "alice", "bob", "carol", "dave", "erin")
	w.create("carol", "team://backend")
	w.grant("carol", "team://backend", "bob", Member())
	w.grant("carol", "team://backend", "dave", []Permission{Admin})
	w.grant("dave", "team://backend", "erin", []Permission{Read})
	w.create("carol", "project://web")
	w.grant("carol", "project://web", "bob", []Permission{Write})
	return w
}

func TestPolicyDefaults(t *testing.T) {
	p := defaultsWorld(t).book.Policy()
	R, W, S, A := Read, Write, Share, Admin
	all := []Permission{R, W, S, A}
	cases := []struct {
		who, ns string
		allow   []Permission // every other permission is denied
	}{
		// agent namespaces: the owner holds everything, on sub-paths too.
		{"alice", "agent://alice", all},
		{"alice", "agent://alice/subagent/task-1", all},
		{"bob", "agent://alice", nil},
		{"bob", "agent://alice/subagent", nil},
		{"carol", "agent://alice", nil}, // an admin elsewhere is nobody here
		{"mallory", "agent://alice", nil},
		{"mallory", "agent://mallory", all}, // owner even without a key
		// team: creator all, member read+write, admin grantee all, grantee of grantee what it got.
		{"carol", "team://backend", all},
		{"bob", "team://backend", []Permission{R, W}},
		{"bob", "team://backend/x/y", []Permission{R, W}},
		{"dave", "team://backend", all},
		{"erin", "team://backend", []Permission{R}},
		{"alice", "team://backend", nil},
		{"alice", "team://backend/x", nil},
		{"mallory", "team://backend", nil},
		// a team nobody created: nobody holds anything.
		{"carol", "team://frontend", nil},
		// project: every cluster principal reads, write needs a grant.
		{"alice", "project://web", []Permission{R}},
		{"alice", "project://web/docs", []Permission{R}},
		{"bob", "project://web", []Permission{R, W}},
		{"carol", "project://web", all},
		{"mallory", "project://web", nil},
		{"alice", "project://uncreated", []Permission{R}},
	}
	for _, c := range cases {
		who, ns := agent(c.who), namespace.MustParse(c.ns)
		for _, perm := range all {
			want := false
			for _, a := range c.allow {
				want = want || a == perm
			}
			if got := p.Allowed(who, ns, perm); got != want {
				t.Errorf("Allowed(%s, %s, %s) = %v; want %v", who, ns, perm, got, want)
			}
			err := p.Check(who, ns, perm)
			if want != (err == nil) {
				t.Errorf("Check(%s, %s, %s) = %v", who, ns, perm, err)
			}
			if err != nil && (!errors.Is(err, ErrDenied) || err.Error() != fmt.Sprintf("acl: permission denied: %s lacks %s on %s", who, perm, ns)) {
				t.Errorf("Check error %q", err)
			}
		}
	}
	// Malformed questions are denied.
	if p.Allowed(namespace.MustParse("team://backend"), namespace.MustParse("team://backend"), Read) ||
		p.Allowed(agent("carol"), namespace.Address{}, Read) || p.Allowed(agent("carol"), namespace.MustParse("team://backend"), 0) {
		t.Error("malformed question allowed")
	}
	// A principal not in canonical form holds nothing: not where a
	// canonical one holds (an evaluated state), not as the owner of a
	// namespace spelt as it is, not as a cluster member's project read.
	for _, c := range []struct{ who, ns namespace.Address }{
		{namespace.Address{Kind: namespace.KindAgent, Name: "Bob"}, namespace.MustParse("team://backend")},
		{namespace.Address{Kind: namespace.KindAgent, Name: "Mallory"}, namespace.Address{Kind: namespace.KindAgent, Name: "Mallory"}},
		{namespace.Address{Kind: namespace.KindAgent, Name: " alice"}, namespace.MustParse("project://web")},
	} {
		for _, perm := range []Permission{Read, Write, Share, Admin} {
			if p.Allowed(c.who, c.ns, perm) {
				t.Errorf("Allowed(%q, %q, %s) for a principal not in canonical form", c.who.Name, c.ns.Name, perm)
			}
		}
	}
}

func TestReadable(t *testing.T) {
	p := defaultsWorld(t).book.Policy()
	var cands []namespace.Address
	for _, s := range []string{"agent://alice", "agent://bob/x", "team://backend/a", "team://frontend", "project://web"} {
		cands = append(cands, namespace.MustParse(s))
	}
	got := fmt.Sprint(p.Readable(agent("bob"), cands))
	if want := "[agent://bob/x team://backend/a project://web]"; got != want {
		t.Errorf("Readable = %s; want %s", got, want)
	}
}

func TestEffectiveListing(t *testing.T) {
	p := defaultsWorld(t).book.Policy()
	var lines []string
	for _, e := range p.Effective(namespace.MustParse("team://backend/sub")) {
		lines = append(lines, fmt.Sprintf("%s %s %s by %s at %d", e.Principal, e.Perm, e.Source, e.Signer, e.TS))
	}
	want := strings.Join([]string{
		"agent://bob read grant by agent://carol at 2",
		"agent://bob write grant by agent://carol at 2",
		"agent://carol read creator by agent://carol at 1",
		"agent://carol write creator by agent://carol at 1",
		"agent://carol share creator by agent://carol at 1",
		"agent://carol admin creator by agent://carol at 1",
		"agent://dave admin grant by agent://carol at 3",
		"agent://erin read grant by agent://dave at 4",
	}, "\n")
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("Effective:\n%s\nwant:\n%s", got, want)
	}
	if src := p.Effective(agent("alice")); len(src) != 4 || src[0].Source != SourceOwner {
		t.Errorf("agent namespace listing %v", src)
	}
}

// TestRejected: records that must never count, each checked against the
// policy of the same book without it.
func TestRejected(t *testing.T) {
	team := namespace.MustParse("team://backend")
	w := defaultsWorld(t)
	before := w.book.Policy()
	mallory := testIdentity(t, "mallory") // not a cluster member

	forged := w.must(NewGrant(w.ids["alice"], agent("alice"), team, agent("alice"), []Permission{Admin}, nil, 9))
	wrongKey := w.must(NewGrant(w.ids["alice"], agent("carol"), team, agent("alice"), []Permission{Admin}, nil, 9))
	unknown := w.must(NewGrant(mallory, agent("mallory"), team, agent("alice"), []Permission{Admin}, nil, 9))
	memberGrants := w.must(NewGrant(w.ids["bob"], agent("bob"), team, agent("alice"), Member(), nil, 9))
	memberRevokes := w.must(NewRevoke(w.ids["erin"], agent("erin"), team, agent("bob"), Member(), 9))
	lateCreate := w.must(NewCreate(w.ids["alice"], agent("alice"), team, 100))
	noRoot := w.must(NewGrant(w.ids["alice"], agent("alice"), namespace.MustParse("team://ghost"), agent("bob"), Member(), nil, 9))
	cycleA := w.must(NewGrant(w.ids["alice"], agent("alice"), team, agent("bob"), []Permission{Admin}, nil, 9))
	cycleB := w.must(NewGrant(w.ids["bob"], agent("bob"), team, agent("alice"), []Permission{Admin}, nil, 9))

	unsigned := cloneRecord(forged)
	unsigned.Sig = []byte{}
	flipped := w.must(NewGrant(w.ids["carol"], agent("carol"), team, agent("alice"), []Permission{Admin}, nil, 9))
	flipped.Sig[0] ^= 0x80

	for _, c := range []struct {
		name string
		recs []SignedRecord
		want error
	}{
		{"forged by non-admin", []SignedRecord{forged}, ErrNotAuthorized},
		{"wrong key", []SignedRecord{wrongKey}, ErrWrongKey},
		{"unknown signer", []SignedRecord{unknown}, ErrWrongKey},
		{"member grants", []SignedRecord{memberGrants}, ErrNotAuthorized},
		{"reader revokes", []SignedRecord{memberRevokes}, ErrNotAuthorized},
		{"second creation", []SignedRecord{lateCreate}, ErrNotAuthorized},
		{"no creation", []SignedRecord{noRoot}, ErrNotAuthorized},
		{"admin cycle", []SignedRecord{cycleA, cycleB}, ErrNotAuthorized},
		{"unsigned", []SignedRecord{unsigned}, ErrBadSignature},
		{"bit flip", []SignedRecord{flipped}, ErrBadSignature},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range c.recs {
				if err := before.Verify(r); !errors.Is(err, c.want) {
					t.Errorf("Verify(%s) = %v; want %v", r, err, c.want)
				}
			}
			b := NewBook(w.keyOf)
			for _, r := range w.book.Records(team) {
				if err := b.AddRecord(r); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range w.book.Records(namespace.MustParse("project://web")) {
				_ = b.AddRecord(r)
			}
			for _, r := range c.recs {
				_, err := b.Add(r.Encode())
				if errors.Is(c.want, ErrBadSignature) != (err != nil) {
					t.Fatalf("Add(%s) = %v", r, err)
				}
			}
			after := b.Policy()
			for _, ns := range []namespace.Address{team, namespace.MustParse("team://ghost"), namespace.MustParse("project://web")} {
				if !reflect.DeepEqual(after.Effective(ns), before.Effective(ns)) {
					t.Errorf("%s changed:\n%v\n%v", ns, after.Effective(ns), before.Effective(ns))
				}
				for _, who := range []string{"alice", "bob", "carol", "dave", "erin", "mallory"} {
					if !reflect.DeepEqual(after.Permissions(agent(who), ns), before.Permissions(agent(who), ns)) {
						t.Errorf("%s on %s changed", who, ns)
					}
				}
			}
			if !errors.Is(c.want, ErrBadSignature) {
				for _, r := range c.recs {
					if err := after.Verify(r); !errors.Is(err, c.want) {
						t.Errorf("after adding, Verify(%s) = %v; want %v", r, err, c.want)
					}
				}
				if len(after.Rejected(c.recs[0].Namespace)) != len(c.recs) {
					t.Errorf("Rejected = %v", after.Rejected(c.recs[0].Namespace))
				}
			}
		})
	}
}

// TestBackdatedCreation: a creation back-dated before the real one would win
// if it entered the set (the earliest creation is the creator), so Verify,
// the node's admission check, refuses any creation of a created namespace.
func TestBackdatedCreation(t *testing.T) {
	w := defaultsWorld(t)
	team := namespace.MustParse("team://backend")
	back := w.must(NewCreate(w.ids["alice"], agent("alice"), team, 0))
	if err := w.book.Policy().Verify(back); !errors.Is(err, ErrNotAuthorized) {
		t.Fatalf("Verify(back-dated creation) = %v; want ErrNotAuthorized", err)
	}
	// Creations that raced across a partition resolve to the earliest.
	w.add(back)
	p := w.book.Policy()
	if root, src, _ := p.Root(team); root != agent("alice") || src != SourceCreator {
		t.Errorf("root = %s %s; want the earliest creator", root, src)
	}
	if err := p.Verify(back); err != nil {
		t.Errorf("winning creation: %v", err)
	}
}

// TestDeterminism: the decision is a function of the set of records, not of
// the order they were added in.
func TestDeterminism(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	names := []string{"a", "b", "c", "d", "e"}
	perms := AllPermissions()
	team := namespace.MustParse("team://t")
	for round := range 20 {
		w := newWorld(t, names...)
		w.create("a", "team://t")
		var recs []SignedRecord
		for range 40 {
			by, to := names[rng.IntN(len(names))], names[rng.IntN(len(names))]
			ps := []Permission{perms[rng.IntN(len(perms))], perms[rng.IntN(len(perms))]}
			if rng.IntN(3) == 0 {
				recs = append(recs, w.revoke(by, "team://t", to, ps))
			} else {
				recs = append(recs, w.grant(by, "team://t", to, ps, w.book.Revocations(team, agent(to), ps)...))
			}
		}
		recs = append(recs, w.book.Records(team)...) // duplicates too
		want := w.book.Policy()
		for range 3 {
			rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
			b := NewBook(w.keyOf)
			for _, r := range recs {
				if err := b.AddRecord(r); err != nil {
					t.Fatal(err)
				}
			}
			got := b.Policy()
			if !reflect.DeepEqual(got.Effective(team), want.Effective(team)) {
				t.Fatalf("round %d: Effective differs by insertion order", round)
			}
			if fmt.Sprint(got.Rejected(team)) != fmt.Sprint(want.Rejected(team)) {
				t.Fatalf("round %d: Rejected differs by insertion order", round)
			}
		}
	}
}
