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
