package acl

import (
	"fmt"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

// BenchmarkPolicyAllowed asks what replication asks on every send and
// every received dot: may this member read or write that namespace, over
// a policy of 20 teams with 10 grantees each, for holders and strangers.
func BenchmarkPolicyAllowed(b *testing.B) {
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("m%d", i))
	}
	w := newWorld(b, names...)
	var nss []namespace.Address
	for t := range 20 {
		ns := fmt.Sprintf("team://t%d", t)
		w.create("m0", ns)
		for g := range 10 {
			w.grant("m0", ns, names[1+(t+g)%39], []Permission{Read, Write})
		}
		nss = append(nss, namespace.MustParse(ns), namespace.MustParse(ns+"/sub"))
	}
	var who []namespace.Address
	for _, name := range names[:20] {
		who = append(who, agent(name))
	}
	p := w.book.Policy()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, ns := range nss {
			for _, a := range who {
				if p.Allowed(a, ns, Read) {
					n++
				}
			}
		}
	}
	if n == 0 {
		b.Fatal("nobody may read")
	}
}

// BenchmarkEvalCacheHit is a Book sharing an EvalCache asking for a
// team's evaluation (300 grants, 30 revocations) that the cache holds: what
// a simulated node pays on every policy it builds after a record arrived.
func BenchmarkEvalCacheHit(b *testing.B) {
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("m%d", i))
	}
	w := newWorld(b, names...)
	ns := namespace.MustParse("team://bench")
	w.create("m0", "team://bench")
	perms := AllPermissions()
	for i := range 300 {
		w.add(w.must(NewGrant(w.ids["m0"], agent("m0"), ns, agent(names[1+i%99]), []Permission{perms[i%len(perms)]}, nil, w.next())))
	}
	for i := range 30 {
		w.add(w.must(NewRevoke(w.ids["m0"], agent("m0"), ns, agent(names[1+i*3]), []Permission{perms[i%len(perms)]}, w.next())))
	}
	w.book.SetEvalCache(NewEvalCache(0))
	w.book.KeysChanged()
	w.book.Policy()
	b.ReportAllocs()
	for b.Loop() {
		w.book.KeysChanged()
		if p := w.book.Policy(); len(p.Effective(ns)) == 0 {
			b.Fatal("nothing effective")
		}
	}
}

// BenchmarkBookPolicyManyRoots builds the Policy of a book of 60 roots, all
// evaluated already: what a node pays after a record changed one of them
// (its refreshPolicy), the other 59 taken as they were.
func BenchmarkBookPolicyManyRoots(b *testing.B) {
	w := newWorld(b, "a", "b")
	for i := range 60 {
		kind := "team"
		if i%3 == 0 {
			kind = "project"
		}
		ns := fmt.Sprintf("%s://r%d", kind, i)
		w.create("a", ns)
		w.grant("a", ns, "b", []Permission{Read})
	}
	w.book.Policy()
	b.ReportAllocs()
	for b.Loop() {
		if p := w.book.Policy(); !p.Allowed(agent("b"), namespace.MustParse("team://r1"), Read) {
			b.Fatal("b may not read")
		}
	}
}
