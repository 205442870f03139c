package console

import (
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/sync/replica"
)

// fixedCluster answers the cluster page with a status made in the test.
type fixedCluster struct{ status cluster.Status }

func (f fixedCluster) Members() []cluster.Member {
	return []cluster.Member{{NodeID: "node-a", State: "alive", Self: true}, {NodeID: "node-b", State: "alive"}}
}

func (f fixedCluster) Status(digests bool) cluster.Status {
	st := f.status
	if !digests {
		st.Agreement = nil
	}
	return st
}

// The owner sees, per peer and namespace, whether the peer's last told
// context agrees with this node's and how old that knowledge is; a
// principal session sees none of it (it describes every namespace held).
func TestClusterPageShowsAgreementToTheOwnerOnly(t *testing.T) {
	var told time.Time
	f := newFixture(t, func(cfg *Config) {
		told = cfg.Now().Add(-90 * time.Second)
		cfg.Cluster = fixedCluster{status: cluster.Status{NodeID: "node-a", Peers: []replica.PeerStats{{Peer: "node-b"}},
			Agreement: []replica.PeerAgreement{
				{Peer: "node-b", Namespace: "team://agree-core", Agreement: replica.AgreeEqual, Told: told},
				{Peer: "node-b", Namespace: "team://agree-lagging", Agreement: replica.AgreeBehind, Told: told},
			}}}
	})
	owner := f.browser()
	owner.signIn(ownerToken)
	p := owner.get("/ui/cluster")
	start := strings.Index(p.body, `id="agreement"`)
	if start < 0 {
		t.Fatalf("owner's cluster page has no agreement table (status %d)", p.status)
	}
	table, _, _ := strings.Cut(p.body[start:], "</table>")
	for _, want := range []string{
		`<code>team://agree-core</code></td><td><span class="tag">equal</span></td><td><span title="` + told.UTC().Format("2006-01-02 15:04:05 UTC") + `">1m30s ago</span>`,
		`<code>team://agree-lagging</code></td><td><span class="tag warn">peer behind</span>`,
		"<code>node-b</code>",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("owner's agreement table lacks %q:\n%s", want, table)
		}
	}
	if !strings.Contains(p.body, "not the state digests") {
		t.Error("the page does not say it compares contexts, not digests")
	}

	bob := f.browser()
	bob.signIn("bob-token-0123456789")
	p = bob.get("/ui/cluster")
	for _, leak := range []string{`id="agreement"`, "team://agree-core", "team://agree-lagging", "peer behind"} {
		if strings.Contains(p.body, leak) {
			t.Errorf("bob's cluster page shows %q", leak)
		}
	}
	if !strings.Contains(p.body, "node-b") {
		t.Error("bob does not see the members (the test would pass on an empty page)")
	}
}
