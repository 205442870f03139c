package mnemo_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mnemohq/mnemo"

// Heavy dependencies: storage and transport, which only the node's core,
// the cluster loop and the binary may link.
const (
	badger     = "github.com/dgraph-io/badger"
	quicGo     = "github.com/quic-go/quic-go"
	memberlist = "github.com/hashicorp/memberlist"
	msgpack    = "github.com/vmihailenco/" // msgpack/v5 and the tagparser it brings
	prometheus = "github.com/prometheus"
)

// notPure is what no pure package links, directly or transitively: the
// network ("net" exact: net/url and net/netip are pure) and the heavy
// dependencies.
var notPure = []string{"net", "net/http", badger, quicGo, memberlist}

// layoutRule is one arrow of the table in DESIGN.md. It applies to every
// package under each of from (paths relative to the module: "crdt" covers
// crdt and crdt/...) and looks at its transitive dependencies (go list
// -deps, tests excluded).
//
// With only set, the rule is an allow list: a dependency of the module must
// lie under only (its own folder always does), and one outside the module
// and outside the standard library must lie under external. Transitive
// closure is the right reading of "may import": a package allowed to
// import crdt gets what crdt links, so acl may link msgpack through crdt.
// forbid lists import paths that may not appear at all: a package of the
// module or an external module (with the packages below it), or a
// standard-library package (exactly).
type layoutRule struct {
	name     string
	from     []string
	only     []string // module-relative; nil: no allow list
	external []string // external prefixes allowed with only
	forbid   []string
}

// layout is DESIGN.md's table ("Layout" and "Inside node/").
var layout = []layoutRule{
	{name: "crdt imports only the standard library and msgpack",
		from: []string{"crdt"}, only: []string{}, external: []string{msgpack}, forbid: notPure},
	{name: "namespace imports only the standard library",
		from: []string{"namespace"}, only: []string{}, external: []string{}, forbid: notPure},
	{name: "acl imports only crdt and namespace",
		from: []string{"acl"}, only: []string{"crdt", "namespace"}, external: []string{msgpack}, forbid: notPure},
	// projection imports msgpack itself (canonical spec encoding), the
	// library crdt brings anyway.
	{name: "projection imports only crdt and namespace",
		from: []string{"projection"}, only: []string{"crdt", "namespace"}, external: []string{msgpack}, forbid: notPure},
	{name: "sync/* sits below node/",
		from: []string{"sync"}, forbid: []string{mod("node"), mod("sim"), mod("cmd")}},
	{name: "sim drives real nodes over no real transport or disk",
		from: []string{"sim"}, forbid: []string{mod("sync/quicnet"), mod("sync/gossip"), badger}},
	// Inside node/: the schema and the pure logic moved out of the memory
	// core (issue 12) link neither the core nor anything heavy.
	{name: "node's pure packages link no storage, transport or network",
		from:   append(slices.Clone(pureLogic), "node/memory/bundle"),
		forbid: append(slices.Clone(notPure), mod("node/memory"), mod("node/store"))},
	// The API's edges speak node/memapi and never link storage (issue 12).
	{name: "the API's edges link no storage or transport",
		from:   []string{"node/memapi", "node/client", "node/mcptools", "node/embeddings"},
		forbid: []string{badger, quicGo, memberlist, mod("node/memory"), mod("node/store")}},
	// What the simulator drives ("the memory core, its record kinds and the
	// replication engine") takes its storage as a store.KV: Badger is
	// opened by the node (node/store/badgerkv), MemKV by the simulator.
	{name: "the memory core, its features and the cluster loop link no Badger",
		from:   []string{"node/memory", "node/cluster"},
		forbid: []string{badger, mod("node/store/badgerkv")}},
	// The broadcast engine (issue 14) is pure like the CRDTs: it carries
	// opaque payloads between opaque peer ids, so it links nothing of the
	// module and no network; the replica engine and the node drive it.
	{name: "sync/epidemic imports only the standard library",
		from: []string{"sync/epidemic"}, only: []string{}, external: []string{}, forbid: notPure},
	// Metrics (issue 16): the core, the loop and the tools report through
	// hooks of their own; only the node, its HTTP API and node/metrics
	// link client_golang, and the simulator never does.
	{name: "the memory core, the cluster loop, the MCP tools and the simulator link no Prometheus client",
		from:   []string{"node/memory", "node/cluster", "node/mcptools", "sim", "sync"},
		forbid: []string{prometheus, mod("node/metrics")}},
	// The web console (issue 16) is an edge beside the HTTP API and the MCP
	// tools: it calls the memory core, never another edge, and links no
	// storage of its own.
	{name: "the web console depends on the core, not on the other edges",
		from:   []string{"node/console"},
		forbid: []string{mod("node/httpapi"), mod("node/mcptools"), mod("node/mcpservice"), mod("node/client"), badger}},
}

// TestDependencyDirection checks every rule of the layout against the
// packages of the module.
func TestDependencyDirection(t *testing.T) {
	pkgs := listDeps(t)
	for _, r := range layout {
		t.Run(r.name, func(t *testing.T) {
			n := 0
			for pkg, deps := range pkgs {
				if !r.applies(pkg) {
					continue
				}
				n++
				for _, v := range r.violations(pkg, deps) {
					t.Errorf("%s: %s (DESIGN.md, Layout)", pkg, v)
				}
			}
			if n == 0 {
				t.Errorf("no package under %v: the rule checks nothing", r.from)
			}
		})
	}
}

// TestDependencyRulesCanFail shows that each rule catches a violation: a
// fake package under the rule's first folder, given a dependency list with
// one bad entry, is reported, and without it is not.
func TestDependencyRulesCanFail(t *testing.T) {
	clean := []string{"fmt", "net/url", "crypto/internal/entropy/v1.0.0"}
	bad := map[string][]string{
		layout[0].name:  {mod("acl"), mod("namespace"), "github.com/klauspost/compress/zstd", "net", badger + "/v4"},
		layout[1].name:  {mod("crdt"), msgpack + "msgpack/v5", "net/http"},
		layout[2].name:  {mod("projection"), mod("node/schema"), "net", quicGo + "/http3"},
		layout[3].name:  {mod("acl"), mod("sync/wire"), memberlist, "net"},
		layout[4].name:  {mod("node/memory"), mod("node"), mod("sim")},
		layout[5].name:  {mod("sync/quicnet"), mod("sync/gossip"), badger + "/v4"},
		layout[6].name:  {badger + "/v4", "net", "net/http", mod("node/memory"), mod("node/store")},
		layout[7].name:  {badger + "/v4", quicGo, memberlist, mod("node/store")},
		layout[8].name:  {badger + "/v4", badger + "/v4/options", mod("node/store/badgerkv")},
		layout[9].name:  {mod("sync/replica"), mod("crdt"), "net", msgpack + "msgpack/v5"},
		layout[10].name: {prometheus + "/client_golang/prometheus", mod("node/metrics")},
		layout[11].name: {mod("node/httpapi"), mod("node/mcptools"), badger + "/v4"},
	}
	if len(bad) != len(layout) {
		t.Fatalf("%d rules, %d with violations to catch", len(layout), len(bad))
	}
	for _, r := range layout {
		pkg := mod(r.from[0] + "/fake")
		if !r.applies(pkg) {
			t.Fatalf("%s: does not apply to %s", r.name, pkg)
		}
		allowed := slices.Clone(clean)
		for _, o := range r.only {
			allowed = append(allowed, mod(o))
		}
		for _, e := range r.external {
			allowed = append(allowed, e+"x")
		}
		if v := r.violations(pkg, allowed); len(v) != 0 {
			t.Errorf("%s: clean dependencies reported: %v", r.name, v)
		}
		for _, d := range bad[r.name] {
			if v := r.violations(pkg, append(slices.Clone(allowed), d)); len(v) != 1 {
				t.Errorf("%s: dependency %s gives %v, want one violation", r.name, d, v)
			}
		}
	}
}

func (r layoutRule) applies(pkg string) bool {
	return slices.ContainsFunc(r.from, func(f string) bool { return under(pkg, mod(f)) })
}

// violations lists what is wrong with pkg depending on deps.
func (r layoutRule) violations(pkg string, deps []string) []string {
	var out []string
	for _, d := range deps {
		if f, ok := r.forbidden(d); ok {
			out = append(out, "depends on "+d+" ("+f+" is forbidden)")
			continue
		}
		if r.only == nil || d == pkg {
			continue
		}
		switch {
		case under(d, module):
			own := slices.ContainsFunc(r.from, func(f string) bool { return under(d, mod(f)) })
			if !own && !slices.ContainsFunc(r.only, func(o string) bool { return under(d, mod(o)) }) {
				allowed := "no other package of the module"
				if len(r.only) > 0 {
					allowed = "only " + strings.Join(r.only, ", ")
				}
				out = append(out, "depends on "+d+"; may import "+allowed)
			}
		case stdlib(d):
		case !slices.ContainsFunc(r.external, func(e string) bool { return strings.HasPrefix(d, e) }):
			out = append(out, "depends on "+d+", outside the standard library and "+strings.Join(r.external, ", "))
		}
	}
	return out
}

// forbidden reports which entry of r.forbid dep matches: a path with a
// dot (a module or external package) covers its subpackages, a
// standard-library path only itself.
func (r layoutRule) forbidden(dep string) (string, bool) {
	for _, f := range r.forbid {
		if dep == f || !stdlib(f) && under(dep, f) {
			return f, true
		}
	}
	return "", false
}

// mod is the import path of a folder of the module.
func mod(folder string) string { return module + "/" + folder }

// under reports whether path is p or below it.
func under(path, p string) bool { return path == p || strings.HasPrefix(path, p+"/") }

// stdlib reports whether path is in the standard library: its first
// element has no dot.
func stdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// listDeps maps every package of the module to its transitive
// dependencies, as `go list -deps` finds them (tests excluded).
func listDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p.Deps
	}
	return pkgs
}
