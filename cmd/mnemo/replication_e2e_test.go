package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/cluster"
)

// eventually polls cond until it holds or waitLimit passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func (p *nodeProc) status(t *testing.T) cluster.Status {
	t.Helper()
	code, body := p.api("GET", "/v1/status?digests=true", p.token, "")
	if code != 200 {
		t.Fatalf("status: %d %s", code, body)
	}
	var st cluster.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func (p *nodeProc) digest(t *testing.T, ns string) string {
	for _, d := range p.status(t).Namespaces {
		if d.Namespace == ns {
			return d.Digest
		}
	}
	return ""
}

func (p *nodeProc) members(t *testing.T) int {
	code, body := p.api("GET", "/v1/members", p.token, "")
	if code != 200 {
		return 0
	}
	var out struct {
		Members []cluster.Member `json:"members"`
	}
	_ = json.Unmarshal(body, &out)
	n := 0
	for _, m := range out.Members {
		if m.State == "alive" {
			n++
		}
	}
	return n
}

func (p *nodeProc) saveIn(t *testing.T, ns, content string) string {
	t.Helper()
	code, body := p.api("POST", "/v1/memories", p.token, fmt.Sprintf(`{"namespace":%q,"content":%q,"tags":["replication"]}`, ns, content))
	if code != 201 {
		t.Fatalf("save: %d %s", code, body)
	}
	var m struct{ ID string }
	_ = json.Unmarshal(body, &m)
	return m.ID
}

func (p *nodeProc) has(id string) bool {
	code, _ := p.api("GET", "/v1/memories/"+id, p.token, "")
	return code == 200
}

func (p *nodeProc) memory(t *testing.T, id string) map[string]any {
	t.Helper()
	code, body := p.api("GET", "/v1/memories/"+id, p.token, "")
	if code != 200 {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return m
}

// TestE2EReplication runs four real nodes on loopback: a team memory
// reaches the members, concurrent and offline edits merge, a node killed
// with kill -9 catches up, a stalled subscriber falls back to state sync
// and ends identical, and a node without a grant receives nothing.
func TestE2EReplication(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "cluster.key")
	r := cli(t, "", cleanEnv(t), "cluster-key").ok(t, "cluster-key")
	if err := os.WriteFile(keyFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--cluster-key", keyFile, "--anti-entropy", "500ms"}
	dirs := map[string]string{}
	start := func(agent string, extra ...string) *nodeProc {
		if dirs[agent] == "" {
			dirs[agent] = t.TempDir()
		}
		return startNode(t, dirs[agent], agent, append(append([]string{}, base...), extra...)...)
	}
	alice := start("alice", "--queue-deltas", "5")
	join := []string{"--join", alice.gossip}
	bob := start("bob", join...)
	carol := start("carol", join...)
	dave := start("dave", join...)
	eventually(t, "four members", func() bool { return alice.members(t) == 4 && dave.members(t) == 4 })

	// a team with bob and carol, not dave
	if code, body := alice.api("POST", "/v1/namespaces", alice.token, `{"namespace":"team://core"}`); code != 201 {
		t.Fatalf("create team: %d %s", code, body)
	}
	for _, who := range []string{"bob", "carol"} {
		if code, body := alice.api("POST", "/v1/grants", alice.token, fmt.Sprintf(`{"namespace":"team://core","principal":"agent://%s","permissions":["read","write"]}`, who)); code != 201 && code != 200 {
			t.Fatalf("grant %s: %d %s", who, code, body)
		}
	}
	m1 := alice.saveIn(t, "team://core", "we replicate with QUIC and memberlist")
	for _, p := range []*nodeProc{bob, carol} {
		eventually(t, "the team memory on a member", func() bool { return p.has(m1) })
		code, body := p.api("GET", "/v1/search?q=memberlist", p.token, "")
		if code != 200 || !strings.Contains(string(body), m1) {
			t.Fatalf("the team memory is not searchable on a member: %d %s", code, body)
		}
	}

	// concurrent edits of different fields on two nodes merge
	bob.api("PATCH", "/v1/memories/"+m1, bob.token, `{"title":"QUIC transport"}`)
	carol.api("PATCH", "/v1/memories/"+m1, carol.token, `{"content":"we replicate over QUIC; memberlist finds peers"}`)
	for _, p := range []*nodeProc{alice, bob, carol} {
		eventually(t, "merged concurrent edits", func() bool {
			m := p.memory(t, m1)
			return m != nil && m["title"] == "QUIC transport" && m["content"] == "we replicate over QUIC; memberlist finds peers"
		})
	}

	// kill -9 and restart: the node catches up on what it missed. It comes
	// back on the same addresses, as a configured node does
	// (TestE2ERestartOnNewPorts restarts one on new ports).
	carolAddrs := []string{"--gossip", carol.gossip, "--quic", carol.quic}
	carol.stop(syscall.SIGKILL)
	var missed []string
	for i := range 5 {
		missed = append(missed, alice.saveIn(t, "team://core", fmt.Sprintf("written while carol was down %d", i)))
	}
	carol = start("carol", append(carolAddrs, join...)...)
	for _, id := range missed {
		eventually(t, "catch-up after kill -9", func() bool { return carol.has(id) })
	}

	// a stalled subscriber overflows its queue, falls back to state sync
	// and ends identical. The publisher writes until it reports the
	// fallback: its queue holds 5 deltas and 4 batches fly unacked, so
	// about 10 writes (every local run), but a CI run under load wrote 40
	// and saw none, for a reason not found (a delta is not queued while a
	// digest sync owed to the peer will carry it, yet neither such path
	// seems to last 40 writes here).
	fallbacksFor := func(p *nodeProc) uint64 {
		for _, ps := range alice.status(t).Peers {
			if string(ps.Peer) == p.nodeID {
				return ps.Fallbacks
			}
		}
		return 0
	}
	before := fallbacksFor(bob)
	if err := bob.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var during []string
	deadline := time.Now().Add(waitLimit)
	for i := 0; fallbacksFor(bob) == before; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the publisher never fell back to state sync for the stalled subscriber (%d writes in %v)", i, waitLimit)
		}
		during = append(during, alice.saveIn(t, "team://core", fmt.Sprintf("written while bob was stalled %d", i)))
	}
	if err := bob.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stalled subscriber identical to the publisher", func() bool {
		d := alice.digest(t, "team://core")
		return d != "" && bob.digest(t, "team://core") == d && carol.digest(t, "team://core") == d
	})
	t.Logf("the publisher fell back after %d writes to the stalled subscriber", len(during))

	// offline edits: bob edits alone, alice edits meanwhile, they merge
	bob.stop(syscall.SIGTERM)
	bobAlone := start("bob") // no --join: offline
	if code, body := bobAlone.api("PATCH", "/v1/memories/"+m1, bobAlone.token, `{"tags":["replication","offline"]}`); code != 200 {
		t.Fatalf("offline edit: %d %s", code, body)
	}
	bobAlone.stop(syscall.SIGTERM)
	alice.api("PATCH", "/v1/memories/"+m1, alice.token, `{"importance":0.9}`)
	bob = start("bob", join...)
	for _, p := range []*nodeProc{alice, bob, carol} {
		eventually(t, "offline edits merged", func() bool {
			m := p.memory(t, m1)
			if m == nil {
				return false
			}
			tags, _ := json.Marshal(m["tags"])
			return m["importance"] == 0.9 && strings.Contains(string(tags), "offline")
		})
	}

	// dave holds no grant: nothing of the team reached him
	for _, id := range append(append([]string{m1}, missed...), during...) {
		if code, _ := dave.api("GET", "/v1/memories/"+id, dave.token, ""); code != 404 {
			t.Fatalf("a node without a grant can read %s (status %d)", id, code)
		}
	}
	for _, d := range dave.status(t).Namespaces {
		if d.Namespace == "team://core" {
			t.Fatal("a node without a grant holds the team namespace")
		}
	}
}
