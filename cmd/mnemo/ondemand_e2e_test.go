package main

import "testing"

// TestE2EBindingsOnDemand runs three real nodes with --bindings-on-demand 2:
// no binding is flooded, yet a team's member node gets the team's memory
// (its reader binding pulled from the member advertising it), the team's
// owner gets what the member writes there (the writer's binding pulled
// when its delta was refused, the delta held and applied once it came),
// and the node of a non-member holds none of the team.
func TestE2EBindingsOnDemand(t *testing.T) {
	keyFile, _ := newClusterKey(t)
	base := []string{"--cluster-key", keyFile, "--anti-entropy", "500ms", "--bindings-on-demand", "2"}
	alice, bob, carol := startTrio(t, t.TempDir(), base...)
	fcall(t, alice, "POST", "/v1/namespaces", `{"namespace":"team://x"}`, 201)
	fcall(t, alice, "POST", "/v1/grants", `{"namespace":"team://x","principal":"agent://carol","permissions":["read","write"]}`, 200, 201)
	secret := alice.saveIn(t, "team://x", "the on-call rota lives in the ops wiki")
	eventually(t, "alice's team memory on carol", func() bool { return carol.has(secret) })
	reply := carol.saveIn(t, "team://x", "carol took the night shift")
	eventually(t, "carol's team memory on alice", func() bool { return alice.has(reply) })
	eventually(t, "alice and carol converge on team://x", func() bool {
		d := alice.digest(t, "team://x")
		return d != "" && d == carol.digest(t, "team://x")
	})
	// bob's own token could not read team://x on any node, so what bob's
	// node holds is asked of the node itself: its status lists every
	// namespace it keeps.
	if d := bob.digest(t, "team://x"); d != "" {
		t.Fatalf("bob's node, whose agents are not in team://x, holds it (digest %s)", d)
	}
	for _, id := range []string{secret, reply} {
		if bob.has(id) {
			t.Fatalf("bob reads %s of team://x", id)
		}
	}
	if pulls := alice.status(t).BindingPulls + carol.status(t).BindingPulls; pulls == 0 {
		t.Fatal("no binding was pulled: the bindings were flooded")
	}
}
