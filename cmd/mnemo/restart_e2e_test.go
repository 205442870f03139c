package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestE2ERestartOnNewPorts is issue 14: a node killed with kill -9 and
// started again on new gossip and QUIC ports (as any sidecar on ephemeral
// ports comes back), with the same data directory and node key, catches
// up on the writes it missed without waiting for the failure detector to
// retire its old incarnation. It logs the time from the restart to caught
// up (the README's figure); it asserts no bound on it, the machine being
// shared.
func TestE2ERestartOnNewPorts(t *testing.T) {
	const missed = 50
	keyFile := filepath.Join(t.TempDir(), "cluster.key")
	r := cli(t, "", cleanEnv(t), "cluster-key").ok(t, "cluster-key")
	if err := os.WriteFile(keyFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--cluster-key", keyFile}
	dirs := map[string]string{}
	start := func(agent string, extra ...string) *nodeProc {
		if dirs[agent] == "" {
			dirs[agent] = t.TempDir()
		}
		return startNode(t, dirs[agent], agent, append(append([]string{}, base...), extra...)...)
	}
	alice := start("alice")
	join := []string{"--join", alice.gossip}
	bob := start("bob", join...)
	carol := start("carol", join...)
	eventually(t, "three members", func() bool { return alice.members(t) == 3 && carol.members(t) == 3 })

	const ns = "team://restart"
	if code, body := alice.api("POST", "/v1/namespaces", alice.token, fmt.Sprintf(`{"namespace":%q}`, ns)); code != 201 {
		t.Fatalf("create team: %d %s", code, body)
	}
	for _, who := range []string{"bob", "carol"} {
		if code, body := alice.api("POST", "/v1/grants", alice.token, fmt.Sprintf(`{"namespace":%q,"principal":"agent://%s","permissions":["read","write"]}`, ns, who)); code != 201 && code != 200 {
			t.Fatalf("grant %s: %d %s", who, code, body)
		}
	}
	first := alice.saveIn(t, ns, "before the restart")
	eventually(t, "the team memory on carol", func() bool { return carol.has(first) && bob.has(first) })

	oldGossip, oldQUIC := carol.gossip, carol.quic
	carol.stop(syscall.SIGKILL)
	var ids []string
	for i := range missed {
		writer := alice
		if i%2 == 1 {
			writer = bob
		}
		ids = append(ids, writer.saveIn(t, ns, fmt.Sprintf("written while carol was down %d", i)))
	}
	eventually(t, "alice and bob agree before the restart", func() bool {
		d := alice.digest(t, ns)
		return d != "" && bob.digest(t, ns) == d
	})

	// Same data directory (so the same node key), ports left to the OS.
	began := time.Now()
	carol = start("carol", join...)
	if carol.gossip == oldGossip || carol.quic == oldQUIC {
		t.Fatalf("carol came back on an old port: gossip %s (was %s), quic %s (was %s)", carol.gossip, oldGossip, carol.quic, oldQUIC)
	}
	eventually(t, "carol caught up after a restart on new ports", func() bool {
		d := alice.digest(t, ns)
		return d != "" && carol.digest(t, ns) == d && bob.digest(t, ns) == d
	})
	t.Logf("restart on new ports -> caught up (3 nodes, %d missed writes): %v", missed, time.Since(began).Round(time.Millisecond))
	for _, id := range ids {
		if !carol.has(id) {
			t.Fatalf("digests agree but carol lacks %s", id)
		}
	}
}
