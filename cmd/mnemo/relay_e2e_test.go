package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/cluster/clustertest"
	"github.com/mnemohq/mnemo/node/memory"
)

// TestE2EHostileRelay is issue 14's "relaying is safe" in real processes:
// six `mnemo node` processes and one hostile relay, a node run by this test
// process (so in a process of its own beside them) whose QUIC transport
// alters or drops the tree payloads of other authors it forwards
// (clustertest.HostileRelay: a byte of the delta flipped, another member
// named as author, every third payload dropped and reported sent). All
// seven hold team://relay, the relay as a reader, and send its live deltas
// over broadcast trees (--tree-threshold 4; active views of five, so not
// every node links every other and payloads pass through relays). Honest
// nodes save in rounds until the relay has both altered and dropped
// payloads; then every save must be on every honest node, their digests
// must agree, and the honest nodes must have distrusted the relay (the
// altered payloads fail the author's signature or the author's right to
// write: sync/replica/doc.go, "Trees").
func TestE2EHostileRelay(t *testing.T) {
	const honest, ns, maxRounds = 10, "team://relay", 100
	keyFile := filepath.Join(t.TempDir(), "cluster.key")
	r := cli(t, "", cleanEnv(t), "cluster-key").ok(t, "cluster-key")
	if err := os.WriteFile(keyFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--cluster-key", keyFile, "--tree-threshold", "4"}
	nodes := make([]*nodeProc, honest)
	nodes[0] = startNode(t, t.TempDir(), "honest0", flags...)
	for i := 1; i < honest; i++ {
		nodes[i] = startNode(t, t.TempDir(), fmt.Sprintf("honest%d", i), append(flags, "--join", nodes[0].gossip)...)
	}

	var relay *clustertest.HostileRelay
	rn, err := node.Open(node.Config{Dir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Agent: "relay",
		ClusterKey: []byte(r.stdout), Join: []string{nodes[honest-1].gossip}, TreeThreshold: 4,
		WrapTransport: func(self acl.NodeID, tr cluster.Transport) cluster.Transport {
			relay = clustertest.NewHostileRelay(tr, string(self), nil, clustertest.AlterAndDrop)
			return relay
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	for i, p := range nodes {
		eventually(t, fmt.Sprintf("node %d sees %d members", i, honest+1), func() bool { return p.members(t) == honest+1 })
	}

	if code, body := nodes[0].api("POST", "/v1/namespaces", nodes[0].token, fmt.Sprintf(`{"namespace":%q}`, ns)); code != 201 {
		t.Fatalf("create team: %d %s", code, body)
	}
	grant := func(agent, perms string) {
		if code, body := nodes[0].api("POST", "/v1/grants", nodes[0].token, fmt.Sprintf(`{"namespace":%q,"principal":"agent://%s","permissions":[%s]}`, ns, agent, perms)); code != 201 && code != 200 {
			t.Fatalf("grant %s: %d %s", agent, code, body)
		}
	}
	for i := 1; i < honest; i++ {
		grant(fmt.Sprintf("honest%d", i), `"read","write"`)
	}
	grant("relay", `"read"`)
	var saved []string
	for i, p := range nodes {
		eventually(t, fmt.Sprintf("node %d may write to the team", i), func() bool {
			id := p.trySave(ns, fmt.Sprintf("honest node %d joined the team", i))
			if id != "" {
				saved = append(saved, id)
			}
			return id != ""
		})
	}
	eventually(t, "the relay holds the team's first saves", func() bool {
		for _, id := range saved {
			if _, err := rn.Service().Get(t.Context(), memory.Caller{Principal: rn.Service().Owner()}, id, false); err != nil {
				return false
			}
		}
		return true
	})

	// Rounds of saves until the relay has had payloads of others to alter
	// and to drop: whether it relays depends on where the trees put it
	// (mostly at once; once in 12 runs 21 rounds, once in CI not within
	// 25, as the trees' links moved: up to 100, ~4 s).
	rounds := 0
	for ; rounds < maxRounds && (relay.Altered() < 2 || relay.Dropped() < 1); rounds++ {
		for i, p := range nodes {
			saved = append(saved, p.saveIn(t, ns, fmt.Sprintf("round %d note of honest node %d", rounds, i)))
		}
	}
	if relay.Altered() < 2 || relay.Dropped() < 1 {
		t.Fatalf("after %d rounds of %d saves the relay altered %d payloads and dropped %d: it forwarded too little to test", rounds, honest, relay.Altered(), relay.Dropped())
	}
	for i, p := range nodes {
		for _, id := range saved {
			eventually(t, fmt.Sprintf("save %s on honest node %d", id, i), func() bool { return p.has(id) })
		}
	}
	eventually(t, "equal digests of the team on the honest nodes", func() bool {
		d := nodes[0].digest(t, ns)
		for _, p := range nodes[1:] {
			if d == "" || p.digest(t, ns) != d {
				return false
			}
		}
		return true
	})
	var distrusted, relayed uint64
	for _, p := range nodes {
		st := p.status(t).Trees
		distrusted += st.Distrusted
		relayed += st.Relayed
	}
	t.Logf("%d saves in %d rounds: the relay altered %d payloads and dropped %d; the honest nodes applied %d relayed deltas and distrusted a relay %d times",
		len(saved), rounds, relay.Altered(), relay.Dropped(), relayed, distrusted)
	if distrusted == 0 {
		t.Fatalf("the relay altered %d payloads and no honest node distrusted it", relay.Altered())
	}
}
