package cluster

import (
	"fmt"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
)

// The engine's namespace strings are parsed once and remembered, within
// parsedMax entries, and a remembered answer is the one parsing gives.
func TestPolicyParseCacheBoundedAndExact(t *testing.T) {
	p := &policy{}
	names := []string{"team://t", "project://p/x", "agent://alice", "agent://alice/.inbox/bob/n", "nonsense", ""}
	for i := 0; len(names) < 2*parsedMax+10; i++ {
		names = append(names, fmt.Sprintf("team://t%d", i))
	}
	for round := 0; round < 2; round++ {
		for _, ns := range names {
			got := p.parse(ns)
			addr, err := namespace.Parse(ns)
			want := parsedNS{addr: addr, ok: err == nil, replicated: err == nil && memory.Replicated(ns)}
			if err != nil {
				want.addr = namespace.Address{}
			}
			if got != want {
				t.Fatalf("parse(%q) = %+v, want %+v", ns, got, want)
			}
			if len(p.parsed) > parsedMax {
				t.Fatalf("%d namespaces remembered, bound %d", len(p.parsed), parsedMax)
			}
		}
	}
	if pn := p.parse("agent://alice/.inbox/bob/n"); !pn.replicated {
		t.Fatalf("an inbox is replicated: %+v", pn)
	}
}
