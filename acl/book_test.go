package acl

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

// A record held already is taken again without verifying it, but only
// when it is the same signed record: another signature over the same body
// is verified, and a bad one refused.
func TestBookTakesHeldRecordsAgainOnlyWhenIdentical(t *testing.T) {
	w := newWorld(t, "alice", "bob")
	ns := namespace.MustParse("team://core")
	create := w.add(w.must(NewCreate(w.ids["alice"], agent("alice"), ns, w.next())))
	if err := w.book.AddRecord(create); err != nil {
		t.Fatalf("the same record again: %v", err)
	}
	forged := create
	forged.Sig = slices.Clone(create.Sig)
	forged.Sig[0] ^= 1
	if err := w.book.AddRecord(forged); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("same body, bad signature: %v, want ErrBadSignature", err)
	}
	if w.book.Len() != 1 {
		t.Fatalf("book holds %d records, want 1", w.book.Len())
	}
}

// A fork carries the records of the roots asked for, and what is added to
// it stays out of the book it came from.
func TestBookFork(t *testing.T) {
	w := newWorld(t, "alice", "bob")
	core, other := namespace.MustParse("team://core"), namespace.MustParse("team://other")
	w.add(w.must(NewCreate(w.ids["alice"], agent("alice"), core, w.next())))
	w.add(w.must(NewCreate(w.ids["alice"], agent("alice"), other, w.next())))
	f := w.book.Fork(core)
	if f.Len() != 1 || len(f.Records(core)) != 1 || len(f.Records(other)) != 0 {
		t.Fatalf("fork holds %d records (%d of core, %d of other), want core's only", f.Len(), len(f.Records(core)), len(f.Records(other)))
	}
	g := w.must(NewGrant(w.ids["alice"], agent("alice"), core, agent("bob"), Member(), nil, w.next()))
	if err := f.AddRecord(g); err != nil {
		t.Fatal(err)
	}
	if !f.Policy().Allowed(agent("bob"), core, Write) {
		t.Fatal("the grant added to the fork does not count in its policy")
	}
	if w.book.Policy().Allowed(agent("bob"), core, Write) || len(w.book.Records(core)) != 1 {
		t.Fatal("adding to the fork changed the book it came from")
	}
}

// Policy evaluates again only the namespaces whose records changed, and
// KeysChanged makes it evaluate all of them: over seeded random histories
// across several namespaces, with key bindings that move, the book's
// policy after every step decides exactly as a fresh book holding the
// same records.
func TestBookPolicyIncremental(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 5))
		names := []string{"a", "b", "c", "d"}
		w := newWorld(t, names...)
		host := map[string]string{} // agent -> the agent whose node key it is bound to (default itself)
		keyOf := func(p namespace.Address) (ed25519.PublicKey, bool) {
			if h, ok := host[p.Name]; ok {
				p = agent(h)
			}
			return w.keyOf(p)
		}
		b := NewBook(keyOf)
		sigs := NewSigCache(0) // for the fresh books: verifying each record again is not what this tests
		nss := []namespace.Address{namespace.MustParse("team://x"), namespace.MustParse("team://y"), namespace.MustParse("project://z"), agent("a")}
		var all []SignedRecord
		var prev *Policy // the last step's snapshot
		for step := range 120 {
			by, to := names[rng.IntN(len(names))], names[rng.IntN(len(names))]
			ns := nss[rng.IntN(len(nss))]
			ps := []Permission{AllPermissions()[rng.IntN(4)]}
			var r SignedRecord
			var err error
			switch op := rng.IntN(10); {
			case op == 0:
				host[by] = names[rng.IntN(len(names))] // a binding moved
				b.KeysChanged()
			case op < 3 && ns.Kind != namespace.KindAgent:
				r, err = NewCreate(w.ids[by], agent(by), ns, w.next())
			case op < 5:
				r, err = NewRevoke(w.ids[by], agent(by), ns, agent(to), ps, w.next())
			default:
				r, err = NewGrant(w.ids[by], agent(by), ns, agent(to), ps, b.Revocations(ns, agent(to), ps), w.next())
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Sig != nil {
				if err := b.AddRecord(r); err != nil {
					t.Fatal(err)
				}
				all = append(all, r)
			}
			fresh := NewBook(keyOf)
			fresh.SetSigCache(sigs)
			for _, r := range all {
				if err := fresh.AddRecord(r); err != nil {
					t.Fatal(err)
				}
			}
			got, want := b.Policy(), fresh.Policy()
			for _, ns := range nss {
				// Unchanged is what lets a feature skip a namespace:
				// it must never claim so for one whose answers moved.
				if got.Unchanged(prev, ns) {
					if !reflect.DeepEqual(got.Effective(ns), prev.Effective(ns)) {
						t.Fatalf("seed %d step %d: %s is Unchanged but its effective records moved", seed, step, ns)
					}
					for _, who := range names {
						if !slices.Equal(got.Permissions(agent(who), ns), prev.Permissions(agent(who), ns)) {
							t.Fatalf("seed %d step %d: %s is Unchanged but %s's permissions moved", seed, step, ns, who)
						}
					}
				}
				if !reflect.DeepEqual(got.Effective(ns), want.Effective(ns)) || fmt.Sprint(got.Rejected(ns)) != fmt.Sprint(want.Rejected(ns)) {
					t.Fatalf("seed %d step %d: %s decided otherwise than a fresh book", seed, step, ns)
				}
				for _, who := range names {
					if !slices.Equal(got.Permissions(agent(who), ns), want.Permissions(agent(who), ns)) {
						t.Fatalf("seed %d step %d: %s's permissions on %s differ from a fresh book's", seed, step, who, ns)
					}
				}
			}
			prev = got
		}
	}
}

// BenchmarkBookPolicy evaluates a team of 100 members with 300 grants and
// 30 revocations from scratch (KeysChanged), as a node does when a binding
// arrives, and as it does for one namespace whenever its records change.
func BenchmarkBookPolicy(b *testing.B) {
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("m%d", i))
	}
	w := newWorld(b, names...)
	ns := namespace.MustParse("team://bench")
	w.create("m0", "team://bench")
	perms := AllPermissions()
	for i := range 300 {
		to := agent(names[1+i%99])
		w.add(w.must(NewGrant(w.ids["m0"], agent("m0"), ns, to, []Permission{perms[i%len(perms)]}, nil, w.next())))
	}
	for i := range 30 {
		w.add(w.must(NewRevoke(w.ids["m0"], agent("m0"), ns, agent(names[1+i*3]), []Permission{perms[i%len(perms)]}, w.next())))
	}
	b.ReportAllocs()
	for b.Loop() {
		w.book.KeysChanged()
		if p := w.book.Policy(); len(p.Effective(ns)) == 0 {
			b.Fatal("nothing effective")
		}
	}
}

// A fork's evaluation serves the book once the book holds the same
// records (a peer's delta checked on a fork, then applied), but never
// across KeysChanged: a fork made before it evaluated with the old keys.
func TestForkEvaluationServesTheBook(t *testing.T) {
	w := newWorld(t, "a", "b", "c")
	ns := namespace.MustParse("team://x")
	w.create("a", "team://x")
	grant := func(to string) SignedRecord {
		return w.must(NewGrant(w.ids["a"], agent("a"), ns, agent(to), []Permission{Read}, nil, w.next()))
	}
	before := w.book.Policy()

	g := grant("b")
	f := w.book.Fork(ns)
	if err := f.AddRecord(g); err != nil {
		t.Fatal(err)
	}
	fp := f.Policy()
	if !fp.Allowed(agent("b"), ns, Read) || before.Allowed(agent("b"), ns, Read) {
		t.Fatal("the fork does not count the grant it holds, or the book counted it before it was added")
	}
	w.add(g)
	if p := w.book.Policy(); !p.Unchanged(fp, ns) || !p.Allowed(agent("b"), ns, Read) {
		t.Fatal("the book evaluated again the records its fork had evaluated")
	}

	g2 := grant("c")
	stale := w.book.Fork(ns)
	w.book.KeysChanged()
	if err := stale.AddRecord(g2); err != nil {
		t.Fatal(err)
	}
	sp := stale.Policy()
	w.add(g2)
	if p := w.book.Policy(); p.Unchanged(sp, ns) || !p.Allowed(agent("c"), ns, Read) {
		t.Fatal("the book took an evaluation made before KeysChanged")
	}
}

// TestCovers: a policy covers records the book holds and evaluated into
// it, not a record it lacks, nor held records evaluated since.
func TestCovers(t *testing.T) {
	w := newWorld(t, "a", "b", "c")
	ns := namespace.MustParse("team://x")
	created := w.create("a", "team://x")
	held := w.grant("a", "team://x", "b", []Permission{Read})
	p := w.book.Policy()
	if !w.book.Covers(p, []SignedRecord{created, held}) {
		t.Fatal("the book's policy does not cover the records it counted")
	}
	if w.book.Covers(nil, []SignedRecord{held}) {
		t.Fatal("no policy covers something")
	}
	fresh := w.must(NewGrant(w.ids["a"], agent("a"), ns, agent("c"), []Permission{Read}, nil, w.next()))
	if w.book.Covers(p, []SignedRecord{held, fresh}) {
		t.Fatal("a record the book lacks is covered")
	}
	resigned := held
	resigned.Sig = w.ids["a"].Sign(append([]byte("other"), held.Sig...))
	if w.book.Covers(p, []SignedRecord{resigned}) {
		t.Fatal("a record held under another signature is covered")
	}
	w.add(fresh)
	if w.book.Covers(p, []SignedRecord{held}) {
		t.Fatal("a policy made before the book evaluated its namespace again covers it")
	}
	if !w.book.Covers(w.book.Policy(), []SignedRecord{held, fresh}) {
		t.Fatal("the new policy does not cover the records")
	}
}

// A book keeps its roots' ids sorted across adds, and shares them with its
// forks without either's adds showing in the other's: each evaluates as a
// fresh book holding the same records does.
func TestSortedIDsKeptAcrossForks(t *testing.T) {
	w := newWorld(t, "a", "b", "c", "d")
	ns := namespace.MustParse("team://s")
	w.create("a", "team://s")
	for _, to := range []string{"b", "c"} {
		w.grant("a", "team://s", to, []Permission{Read})
	}
	w.book.Policy()                                    // sorts and keeps the ids
	w.grant("a", "team://s", "c", []Permission{Write}) // inserted into them
	fork := w.book.Fork(ns)
	forkOnly := w.must(NewGrant(w.ids["a"], agent("a"), ns, agent("d"), []Permission{Write}, nil, w.next()))
	if err := fork.AddRecord(forkOnly); err != nil {
		t.Fatal(err)
	}
	bookOnly := w.grant("a", "team://s", "d", []Permission{Share})
	for _, c := range []struct {
		name string
		b    *Book
	}{{"book", w.book}, {"fork", fork}} {
		if got, want := c.b.sortedIDs(ns), sortedKeys(c.b.recs[ns]); !slices.Equal(got, want) {
			t.Fatalf("%s: kept ids %v, its records' %v", c.name, got, want)
		}
		fresh := NewBook(w.keyOf)
		for _, r := range c.b.Records(ns) {
			if err := fresh.AddRecord(r); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := c.b.Policy().Effective(ns), fresh.Policy().Effective(ns); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: effective %v, a fresh book's %v", c.name, got, want)
		}
	}
	if _, held := w.book.recs[ns][forkOnly.ID()]; held {
		t.Fatal("the fork's record is in the book")
	}
	if _, held := fork.recs[ns][bookOnly.ID()]; held {
		t.Fatal("the book's record is in the fork")
	}
}

// Records that keep coming between two Policies (a sync answer's
// thousands of grants) cost about what they cost in a book that never
// kept sorted ids: inserting each into the kept ids copied them all, k
// adds to a root of n records allocating O(k·n) (~19× at 3,000 + 3,000).
func TestAddsAfterPolicyDoNotCopyKeptIDs(t *testing.T) {
	const held, added = 1500, 1500
	ns := namespace.MustParse("team://s")
	build := func(policy bool) uint64 {
		w := newWorld(t, "a")
		w.create("a", "team://s")
		for i := range held {
			w.grant("a", "team://s", fmt.Sprintf("h%d", i), []Permission{Read})
		}
		var recs []SignedRecord
		for i := range added {
			recs = append(recs, w.must(NewGrant(w.ids["a"], agent("a"), ns, agent(fmt.Sprintf("n%d", i)), []Permission{Read}, nil, w.next())))
		}
		if policy {
			w.book.Policy()
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, r := range recs {
			if err := w.book.AddRecord(r); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	plain, kept := build(false), build(true)
	if kept > 2*plain+1<<20 {
		t.Fatalf("%d adds after a Policy allocated %d bytes, %d without one", added, kept, plain)
	}
	t.Logf("%d adds to a root of %d: %d bytes after a Policy, %d without", added, held, kept, plain)
}
