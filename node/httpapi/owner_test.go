package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/sync/replica"
)

// mapTokens is an in-memory Tokens: token → principal.
type mapTokens map[string]namespace.Address

func (m mapTokens) Lookup(tok string) (namespace.Address, bool) {
	p, ok := m[tok]
	return p, ok
}

func (m mapTokens) Issue(namespace.Address) (string, error) {
	return "", errors.New("mapTokens: Issue not offered")
}

// fakeCluster records what the cluster routes asked of it.
type fakeCluster struct {
	mu      sync.Mutex
	digests int // Status(true) calls
	syncs   int
}

func (c *fakeCluster) Members() []cluster.Member {
	return []cluster.Member{{NodeID: "n1", Agents: []string{"agent://alice"}, State: "alive", Self: true}}
}

func (c *fakeCluster) Status(digests bool) cluster.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	if digests {
		c.digests++
	}
	return cluster.Status{NodeID: "n1", Peers: []replica.PeerStats{{Peer: "n2", DeltasSent: 7}},
		Namespaces: []cluster.NamespaceDigest{{Namespace: "team://secret", Digest: "abc", Records: 3}}}
}

func (c *fakeCluster) Sync(string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncs++
	return nil
}

const bobToken = "bob-token-0123456789abcdef"

// The node-wide routes answer the owner token only; a principal-bound
// token gets 403 permission_denied and the cluster is not asked anything.
// /v1/members stays open to principals.
func TestNodeWideRoutesAreOwnerOnly(t *testing.T) {
	fc := &fakeCluster{}
	f := newFixture(t, func(c *Config) {
		c.Tokens = mapTokens{bobToken: namespace.MustParse("agent://bob")}
		c.Cluster = fc
		c.NodeID = "n1"
	})
	bob := "Bearer " + bobToken
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/v1/status?digests=true", ""},
		{"GET", "/v1/status", ""},
		{"GET", "/metrics", ""},
		{"GET", "/debug/pprof/heap", ""},
		{"GET", "/debug/pprof/profile?seconds=1", ""},
		{"POST", "/v1/sync", `{"peer":"n2"}`},
		{"POST", "/v1/sync", ""},
	} {
		a := f.doAuth(rt.method, rt.path, rt.body, bob)
		wantStatus(t, a, http.StatusForbidden, "permission_denied")
		if msg := a.errBody(t).Message; !strings.Contains(msg, "owner token") {
			t.Errorf("%s %s: message %q does not say the owner token is needed", rt.method, rt.path, msg)
		}
		if strings.Contains(string(a.body), "team://secret") {
			t.Errorf("%s %s: a principal saw a namespace it cannot read: %s", rt.method, rt.path, a.body)
		}
	}
	if fc.digests != 0 || fc.syncs != 0 {
		t.Fatalf("refused requests reached the cluster: %d digest scans, %d syncs", fc.digests, fc.syncs)
	}
	wantStatus(t, f.doAuth("GET", "/v1/members", "", bob), http.StatusOK, "")

	// The owner token (with or without a session header) passes.
	wantStatus(t, f.do("GET", "/v1/status?digests=true", ""), http.StatusOK, "")
	wantStatus(t, f.as("bob", "GET", "/v1/status", ""), http.StatusOK, "")
	wantStatus(t, f.do("POST", "/v1/sync", `{"peer":"n2"}`), http.StatusAccepted, "")
	if a := f.do("GET", "/metrics", ""); a.status != http.StatusOK || !strings.Contains(string(a.body), "mnemo_peer_deltas_sent_total") ||
		!strings.Contains(string(a.body), "mnemo_replication_binding_conflicts_total") {
		t.Fatalf("owner /metrics: %d %s", a.status, a.body)
	}
	// A heap profile in its text form names the runtime's own frames; an
	// unknown profile is a 404 naming the ones there are.
	if a := f.do("GET", "/debug/pprof/heap?debug=1", ""); a.status != http.StatusOK || !strings.Contains(string(a.body), "runtime.MemStats") {
		t.Fatalf("owner heap profile: %d %.200s", a.status, a.body)
	}
	if a := f.do("GET", "/debug/pprof/cmdline", ""); a.status != http.StatusNotFound || !strings.Contains(string(a.body), "heap") {
		t.Fatalf("unknown profile: %d %s", a.status, a.body)
	}
	if fc.digests != 1 || fc.syncs != 1 {
		t.Fatalf("owner requests: %d digest scans, %d syncs; want 1 and 1", fc.digests, fc.syncs)
	}
}

// POST /v1/import keeps the importer as author unless the owner token asks
// preserve_provenance=true; a principal-bound token asking it gets 403. A
// time beyond the clock's skew bound is 400 naming the record.
func TestImportProvenanceAndFutureTimes(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Tokens = mapTokens{bobToken: namespace.MustParse("agent://bob")} })
	src := newFixture(t, nil)
	src.save(`{"type":"decision","title":"one","content":"first"}`)
	var ex memapi.Export
	src.do("GET", "/v1/export", "").decode(t, &ex)
	ex.Memories[0].Author = "agent://ceo"
	body, _ := json.Marshal(ex)

	wantStatus(t, f.doAuth("POST", "/v1/import?preserve_provenance=true", string(body), "Bearer "+bobToken),
		http.StatusForbidden, "permission_denied")
	wantStatus(t, f.do("POST", "/v1/import?preserve_provenance=maybe", string(body)), http.StatusBadRequest, "invalid_request")

	future := ex
	future.Memories = slices.Clone(ex.Memories)
	future.Memories[0].CreatedAt = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC) // the fixture clock reads 2025
	fb, _ := json.Marshal(future)
	a := f.do("POST", "/v1/import", string(fb))
	wantStatus(t, a, http.StatusBadRequest, "invalid_request")
	if msg := a.errBody(t).Message; !strings.Contains(msg, ex.Memories[0].ID) || !strings.Contains(msg, "created_at") {
		t.Fatalf("future time: message %q does not name the record and field", msg)
	}

	wantStatus(t, f.do("POST", "/v1/import", string(body)), http.StatusOK, "")
	var got memapi.Memory
	f.do("GET", "/v1/memories/"+ex.Memories[0].ID, "").decode(t, &got)
	if got.Author != "agent://alice" {
		t.Fatalf("default import: author %q, want the importer", got.Author)
	}
	g := newFixture(t, nil)
	wantStatus(t, g.do("POST", "/v1/import?preserve_provenance=true", string(body)), http.StatusOK, "")
	g.do("GET", "/v1/memories/"+ex.Memories[0].ID, "").decode(t, &got)
	if got.Author != "agent://ceo" {
		t.Fatalf("owner import with preserve_provenance: author %q", got.Author)
	}
}

// POST /v1/handover is the owner's, refuses bad input with 400, and says
// 501 on a node whose cluster cannot hand over.
func TestHandoverRoute(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Tokens = mapTokens{bobToken: namespace.MustParse("agent://bob")}
		c.Cluster = &fakeCluster{}
		c.NodeID = "n1"
	})
	body := `{"principal":"agent://alice","to":"` + strings.Repeat("A", 43) + `"}`
	wantStatus(t, f.doAuth("POST", "/v1/handover", body, "Bearer "+bobToken), http.StatusForbidden, "permission_denied")
	wantStatus(t, f.do("POST", "/v1/handover", `{"principal":"agent://alice","to":"not a key"}`), http.StatusNotImplemented, "not_implemented")
	wantStatus(t, f.do("POST", "/v1/handover", body), http.StatusNotImplemented, "not_implemented")
}
