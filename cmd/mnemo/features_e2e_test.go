package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/memapi"
)

// TestE2EFeatures proves the replicated features of issues 6 and 8 with
// three real nodes on loopback, one cluster for all of them: alice, bob and
// carol, each node owned by its agent.
//
//   - projection: alice projects the auth-tagged memories of her namespace
//     to agent://bob at L2; bob's node shows exactly those, projected, and
//     follows updates, edits out of (and back into) the filter, retracts,
//     amends and quarantines of the source, and the projection's delete; a
//     snapshot does not follow; carol's node never holds either view.
//   - surgery: on a team namespace written on carol's node, alice's amend,
//     quarantine and block show on every read path (get, search, context,
//     export) of every node, the audit log replicates, and a retract that
//     needs approval (alice's node's config.json) has no effect anywhere
//     until alice approves it, then the memory is gone on every node;
//     carol, made admin, approves and rejects on her own node and every
//     node honours her signed decisions; a projection of the team
//     namespace, maintained on alice's node, follows writes and edits made
//     on carol's.
//   - capsules: a capsule for agent://bob reaches bob's node only (get,
//     list, search, context bundle); carol's node neither holds nor serves
//     it; a revoke reaches bob. (Expiry is not tested here: ttl_days is
//     whole days, 1..90, and the node has no clock override;
//     memory.TestCapsuleExpiry covers it with a fake clock.)
func TestE2EFeatures(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "cluster.key")
	r := cli(t, "", cleanEnv(t), "cluster-key").ok(t, "cluster-key")
	if err := os.WriteFile(keyFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--cluster-key", keyFile, "--anti-entropy", "500ms"}

	// alice's node requires an admin's approval for retracts on team://ops.
	aliceDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(aliceDir, node.SettingsFile), []byte(`{"approvals":{"team://ops":["retract"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := startTrio(t, aliceDir, base...)

	// team://ops, alice admin, bob and carol read and write: the surgery
	// subtest's namespace, and one every pair of nodes shares, so their
	// digest syncs carry something (see syncedWith).
	fcall(t, alice, "POST", "/v1/namespaces", `{"namespace":"team://ops"}`, 201)
	for _, who := range []string{"bob", "carol"} {
		fcall(t, alice, "POST", "/v1/grants", fmt.Sprintf(`{"namespace":"team://ops","principal":"agent://%s","permissions":["read","write"]}`, who), 200, 201)
	}

	t.Run("projection", func(t *testing.T) { featProjection(t, alice, bob, carol) })
	t.Run("surgery", func(t *testing.T) { featSurgery(t, alice, bob, carol) })
	t.Run("capsules", func(t *testing.T) { featCapsules(t, alice, bob, carol) })
}

// fsave saves a memory from a JSON body on p with p's owner token.
func fsave(t *testing.T, p *nodeProc, body string) memapi.Memory {
	t.Helper()
	code, b := p.api("POST", "/v1/memories", p.token, body)
	if code != 201 {
		t.Fatalf("save %s: %d %s", body, code, b)
	}
	var m memapi.SaveResult
	if err := json.Unmarshal(b, &m); err != nil || m.ID == "" {
		t.Fatalf("save answer %s: %v", b, err)
	}
	return m.Memory
}

// fcall calls p's API with its owner token and requires status want.
func fcall(t *testing.T, p *nodeProc, method, path, body string, want ...int) []byte {
	t.Helper()
	code, b := p.api(method, path, p.token, body)
	if !slices.Contains(want, code) {
		t.Fatalf("%s %s %s: %d %s (want %v)", method, path, body, code, b, want)
	}
	return b
}

// fsearch runs GET /v1/search?q=… with extra query parameters as p's owner.
func fsearch(t *testing.T, p *nodeProc, q string, extra url.Values) []memapi.Memory {
	t.Helper()
	v := url.Values{"q": {q}, "limit": {"100"}}
	for k, xs := range extra {
		v[k] = xs
	}
	b := fcall(t, p, "GET", "/v1/search?"+v.Encode(), "", 200)
	var res memapi.SearchResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("search answer %s: %v", b, err)
	}
	out := make([]memapi.Memory, 0, len(res.Results))
	for _, h := range res.Results {
		out = append(out, h.Memory)
	}
	return out
}

// fcontext runs GET /v1/context with extra query parameters as p's owner.
func fcontext(t *testing.T, p *nodeProc, extra url.Values) memapi.ContextResult {
	t.Helper()
	b := fcall(t, p, "GET", "/v1/context?"+extra.Encode(), "", 200)
	var res memapi.ContextResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("context answer %s: %v", b, err)
	}
	return res
}

func ids(ms []memapi.Memory) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// byLineage finds the memory derived from source id.
func byLineage(ms []memapi.Memory, id string) (memapi.Memory, bool) {
	for _, m := range ms {
		if m.Lineage == id {
			return m, true
		}
	}
	return memapi.Memory{}, false
}

// holds reports whether p's node holds replicated namespace ns.
func holds(t *testing.T, p *nodeProc, ns string) bool {
	t.Helper()
	for _, d := range p.status(t).Namespaces {
		if d.Namespace == ns {
			return true
		}
	}
	return false
}

// syncedWith asks a and b for a digest sync of everything they share,
// each way (POST /v1/sync), then waits for a marker written on each to
// reach the other through team://ops: frames from one node to another
// leave in order, so the sync exchanges have been sent and handled by
// then, and a later "b does not hold X" has seen a repair round, not only
// live pushes. (An empty sync answer leaves no counter to poll for.)
func syncedWith(t *testing.T, a, b *nodeProc) {
	t.Helper()
	for _, pair := range [][2]*nodeProc{{a, b}, {b, a}} {
		x, y := pair[0], pair[1]
		fcall(t, x, "POST", "/v1/sync", fmt.Sprintf(`{"peer":%q}`, y.nodeID), 202)
		// Each marker's own words: identical notes by two agents in a team
		// namespace are merged on save, which would delete one marker.
		marker := fsave(t, x, fmt.Sprintf(`{"namespace":"team://ops","type":"note","content":"sync marker from %s for %s"}`, x.nodeID, y.nodeID))
		eventually(t, "a marker from "+x.nodeID+" on "+y.nodeID, func() bool { return y.has(marker.ID) })
	}
}

func featProjection(t *testing.T, alice, bob, carol *nodeProc) {
	long := "pangolin token rotation: " + strings.Repeat("the signing keys rotate every hour and the old key stays valid for one more hour; ", 8) + "END-OF-CONTENT"
	m1 := fsave(t, alice, fmt.Sprintf(`{"type":"decision","title":"pangolin token rotation","content":%q,"tags":["auth","security"],"linked_files":["src/auth/token.go"]}`, long))
	m2 := fsave(t, alice, `{"type":"decision","title":"pangolin session expiry","content":"pangolin sessions expire after 30 minutes of idleness","summary":"sessions expire after 30 idle minutes","tags":["auth"]}`)
	m3 := fsave(t, alice, `{"type":"decision","title":"pangolin invoice rounding","content":"pangolin invoices round half even","tags":["other"]}`)

	b := fcall(t, alice, "POST", "/v1/projections", `{"source":"agent://alice","target":"agent://bob","filter":{"tags":["auth"]},"level":"L2","live":true}`, 201)
	var live memapi.ProjectionInfo
	if err := json.Unmarshal(b, &live); err != nil || live.View == "" || live.Memories != 2 || !live.Live {
		t.Fatalf("create: %v %s", err, b)
	}
	if !strings.HasPrefix(live.View, "agent://bob/.inbox/alice/") {
		t.Fatalf("view namespace %q", live.View)
	}

	// bob's node gets exactly the auth-tagged memories, at L2, marked
	// with their source.
	var got []memapi.Memory
	eventually(t, "the projected view on bob's node", func() bool {
		got = fsearch(t, bob, "pangolin", nil)
		return len(got) == 2
	})
	for _, m := range got {
		if m.Namespace != live.View || m.ProjectedFrom != "agent://alice" || m.Content != "" || m.Summary == "" {
			t.Fatalf("bob's view memory is not an L2 projection: %+v", m)
		}
		if m.Lineage == m3.ID {
			t.Fatalf("a memory outside the filter reached bob: %+v", m)
		}
	}
	v1, ok1 := byLineage(got, m1.ID)
	v2, ok2 := byLineage(got, m2.ID)
	if !ok1 || !ok2 {
		t.Fatalf("bob's view %v lacks %s or %s", ids(got), m1.ID, m2.ID)
	}
	if strings.Contains(v1.Summary, "END-OF-CONTENT") || !strings.HasPrefix(v1.Summary, "pangolin token rotation") ||
		!slices.Equal(v1.LinkedFiles, []string{"src/auth/token.go"}) || !slices.Contains(v1.Tags, "security") {
		t.Fatalf("L2 of the long memory: %+v", v1)
	}
	if v2.Summary != "sessions expire after 30 idle minutes" {
		t.Fatalf("L2 of the summarised memory: summary %q", v2.Summary)
	}
	if !holds(t, bob, live.View) {
		t.Fatalf("bob's node does not report holding %s", live.View)
	}
	// bob's node lists the projection it receives. (Its spec record may
	// come a moment after the view's records: bob became a reader of the
	// view namespace with the spec, so the spec travels by digest sync
	// while later view records are pushed live.)
	eventually(t, "the projection in bob's list", func() bool {
		return strings.Contains(string(fcall(t, bob, "GET", "/v1/projections", "", 200)), live.ID)
	})
	// carol, no party to it, holds nothing of it.
	if holds(t, carol, live.View) || len(fsearch(t, carol, "pangolin", nil)) != 0 {
		t.Fatal("carol's node holds alice's projection to bob")
	}

	// An update of a matching memory reaches bob's view.
	fcall(t, alice, "PATCH", "/v1/memories/"+m1.ID, `{"title":"pangolin token rotation v2"}`, 200)
	eventually(t, "the update in bob's view", func() bool {
		m, ok := byLineage(fsearch(t, bob, "pangolin", nil), m1.ID)
		return ok && m.Title == "pangolin token rotation v2"
	})
	// A memory edited out of the filter leaves bob's searches.
	fcall(t, alice, "PATCH", "/v1/memories/"+m2.ID, `{"tags":["other"]}`, 200)
	eventually(t, "the memory edited out of the filter gone from bob's view", func() bool {
		_, ok := byLineage(fsearch(t, bob, "pangolin", nil), m2.ID)
		return !ok
	})
	if code, _ := bob.api("GET", "/v1/memories/"+v2.ID, bob.token, ""); code != 404 {
		t.Fatalf("bob can still get the removed view record: %d", code)
	}
	// ... and comes back when edited back into it.
	fcall(t, alice, "PATCH", "/v1/memories/"+m2.ID, `{"tags":["auth","again"]}`, 200)
	eventually(t, "the memory edited back into the filter in bob's view", func() bool {
		m, ok := byLineage(fsearch(t, bob, "pangolin", nil), m2.ID)
		return ok && slices.Contains(m.Tags, "again") && m.ID == v2.ID
	})
	// A retract of a matching memory reaches bob.
	fcall(t, alice, "POST", "/v1/retract", fmt.Sprintf(`{"id":%q}`, m1.ID), 200)
	eventually(t, "the retracted memory gone from bob's view", func() bool {
		_, ok := byLineage(fsearch(t, bob, "pangolin", nil), m1.ID)
		return !ok && !bob.has(v1.ID)
	})
	if code, _ := bob.api("GET", "/v1/memories/"+v1.ID+"?include_deleted=true", bob.token, ""); code != 404 {
		t.Fatalf("the retracted view record is still readable with include_deleted on bob's node: %d", code)
	}
	// Surgery on the source reaches the view: an amend changes the
	// excerpt, a quarantine removes the memory.
	fcall(t, alice, "POST", "/v1/edits", fmt.Sprintf(`{"target_id":%q,"op":"amend","reason":"precise","patch":{"text":"pangolin sessions expire after 15 idle minutes"}}`, m2.ID), 201)
	fcall(t, alice, "PATCH", "/v1/memories/"+m2.ID, `{"summary":""}`, 200)
	eventually(t, "the amend in bob's view", func() bool {
		m, ok := byLineage(fsearch(t, bob, "pangolin", nil), m2.ID)
		return ok && m.Summary == "pangolin sessions expire after 15 idle minutes" && m.Content == ""
	})
	fcall(t, alice, "POST", "/v1/edits", fmt.Sprintf(`{"target_id":%q,"op":"quarantine","reason":"under review"}`, m2.ID), 201)
	eventually(t, "the quarantined memory gone from bob's view", func() bool {
		return len(fsearch(t, bob, "pangolin", url.Values{"include_quarantined": {"true"}})) == 0
	})

	// A snapshot does not follow later changes; the live view does.
	m4 := fsave(t, alice, `{"type":"decision","title":"pangolin mfa policy","content":"pangolin admins need a hardware key","tags":["auth"]}`)
	b = fcall(t, alice, "POST", "/v1/projections", `{"source":"agent://alice","target":"agent://bob","filter":{"tags":["auth"]},"level":"L2","live":false}`, 201)
	var snap memapi.ProjectionInfo
	if err := json.Unmarshal(b, &snap); err != nil || snap.Live || snap.Memories != 1 {
		t.Fatalf("snapshot create: %v %s", err, b)
	}
	inSnap := url.Values{"namespace": {snap.View}}
	inLive := url.Values{"namespace": {live.View}}
	eventually(t, "the snapshot on bob's node", func() bool {
		_, ok := byLineage(fsearch(t, bob, "pangolin", inSnap), m4.ID)
		return ok
	})
	fcall(t, alice, "PATCH", "/v1/memories/"+m4.ID, `{"title":"pangolin mfa policy v2"}`, 200)
	m5 := fsave(t, alice, `{"type":"decision","title":"pangolin lockout","content":"pangolin accounts lock after five failures","tags":["auth"]}`)
	eventually(t, "the later changes in bob's live view", func() bool {
		ms := fsearch(t, bob, "pangolin", inLive)
		a, ok4 := byLineage(ms, m4.ID)
		_, ok5 := byLineage(ms, m5.ID)
		return ok4 && ok5 && a.Title == "pangolin mfa policy v2"
	})
	ms := fsearch(t, bob, "pangolin", inSnap)
	if len(ms) != 1 || ms[0].Lineage != m4.ID || ms[0].Title != "pangolin mfa policy" || ms[0].ProjectedFrom != "agent://alice" {
		t.Fatalf("the snapshot followed later changes: %+v", ms)
	}
	// Deleting the live projection empties bob's view; the snapshot stays.
	fcall(t, alice, "DELETE", "/v1/projections/"+live.ID, "", 204)
	eventually(t, "the deleted projection's view empty on bob's node", func() bool {
		return len(fsearch(t, bob, "pangolin", inLive)) == 0
	})
	// The view's records and the projection's own record travel in
	// different deltas, so bob may list the projection a moment longer.
	eventually(t, "the deleted projection gone from bob's list, the snapshot kept", func() bool {
		b := fcall(t, bob, "GET", "/v1/projections", "", 200)
		return !strings.Contains(string(b), live.ID) && strings.Contains(string(b), snap.ID)
	})
	if ms := fsearch(t, bob, "pangolin", nil); len(ms) != 1 || ms[0].Namespace != snap.View {
		t.Fatalf("bob's search after the delete: %+v", ms)
	}
	syncedWith(t, alice, carol)
	syncedWith(t, bob, carol)
	for _, ns := range []string{live.View, snap.View} {
		if holds(t, carol, ns) || len(fsearch(t, carol, "pangolin", nil)) != 0 {
			t.Fatalf("carol's node holds %s", ns)
		}
	}
}

func featSurgery(t *testing.T, alice, bob, carol *nodeProc) {
	const team = "team://ops" // created in TestE2EFeatures
	eventually(t, "carol may write the team namespace", func() bool {
		code, _ := carol.api("POST", "/v1/memories", carol.token, `{"namespace":"team://ops","type":"note","content":"wombat probe"}`)
		return code == 201
	})
	save := func(title, content, channel string) memapi.Memory {
		return fsave(t, carol, fmt.Sprintf(`{"namespace":%q,"type":"decision","title":%q,"content":%q,"channel":%q}`, team, title, content, channel))
	}
	amend := save("wombat retention", "wombat logs are kept for 7 days", "team")
	quar := save("wombat dashboard password", "wombat dashboard password is hunter2", "team")
	block := save("wombat incident", "wombat incident details for insiders", "public")
	control := save("wombat status page", "wombat status page is public", "public")
	doomed := save("wombat customer list", "wombat customer list lives in the crm", "team")
	all := []memapi.Memory{amend, quar, block, control, doomed}
	for _, p := range []*nodeProc{alice, bob} {
		for _, m := range all {
			eventually(t, "carol's team memories on "+p.nodeID, func() bool { return p.has(m.ID) })
		}
	}

	edit := func(body string) memapi.EditResult {
		var res memapi.EditResult
		if err := json.Unmarshal(fcall(t, alice, "POST", "/v1/edits", body, 201), &res); err != nil || res.EditID == "" {
			t.Fatalf("edit %s: %v", body, err)
		}
		return res
	}
	const amended = "wombat logs are kept for 30 days, then archived"
	if r := edit(fmt.Sprintf(`{"target_id":%q,"op":"amend","reason":"retention changed","patch":{"text":%q}}`, amend.ID, amended)); r.Status != "approved" {
		t.Fatalf("amend status %q", r.Status)
	}
	if r := edit(fmt.Sprintf(`{"target_id":%q,"op":"quarantine","reason":"a secret","patch":{}}`, quar.ID)); r.Status != "approved" {
		t.Fatalf("quarantine status %q", r.Status)
	}
	if r := edit(fmt.Sprintf(`{"target_id":%q,"op":"block","reason":"internal only","patch":{"channel":"public"}}`, block.ID)); r.Status != "approved" {
		t.Fatalf("block status %q", r.Status)
	}
	retract := edit(fmt.Sprintf(`{"target_id":%q,"op":"retract","reason":"customer data"}`, doomed.ID))
	if retract.Status != "pending" {
		t.Fatalf("retract on a namespace needing approval: status %q", retract.Status)
	}

	for _, p := range []*nodeProc{alice, bob, carol} {
		// amend: get, search and context show the new text
		eventually(t, "the amend on "+p.nodeID, func() bool {
			m := p.memory(t, amend.ID)
			return m != nil && m["content"] == amended
		})
		if ms := fsearch(t, p, "wombat retention", nil); !slices.ContainsFunc(ms, func(m memapi.Memory) bool {
			return m.ID == amend.ID && m.Content == amended
		}) {
			t.Fatalf("search on %s does not show the amended text: %+v", p.nodeID, ms)
		}
		if ms := fsearch(t, p, "archived", nil); !slices.Contains(ids(ms), amend.ID) {
			t.Fatalf("search for the amended words on %s: %v", p.nodeID, ids(ms))
		}
		if ms := fsearch(t, p, "days", nil); slices.ContainsFunc(ms, func(m memapi.Memory) bool { return strings.Contains(m.Content, "7 days") }) {
			t.Fatalf("the pre-amend text is still searchable on %s", p.nodeID)
		}
		// quarantine: out of default search and context, in with include_quarantined
		eventually(t, "the quarantine on "+p.nodeID, func() bool {
			return !slices.Contains(ids(fsearch(t, p, "wombat", nil)), quar.ID)
		})
		if !slices.Contains(ids(fsearch(t, p, "wombat", url.Values{"include_quarantined": {"true"}})), quar.ID) {
			t.Fatalf("include_quarantined does not show the quarantined memory on %s", p.nodeID)
		}
		if code, _ := p.api("GET", "/v1/memories/"+quar.ID, p.token, ""); code != 404 {
			t.Fatalf("get of the quarantined memory on %s: %d", p.nodeID, code)
		}
		if code, b := p.api("GET", "/v1/memories/"+quar.ID+"?include_quarantined=true", p.token, ""); code != 200 || !strings.Contains(string(b), `"quarantined":true`) {
			t.Fatalf("get of the quarantined memory with include_quarantined on %s: %d %s", p.nodeID, code, b)
		}
		if b := fcall(t, p, "GET", "/v1/export?namespace="+url.QueryEscape(team), "", 200); !strings.Contains(string(b), amended) || strings.Contains(string(b), "kept for 7 days") {
			t.Fatalf("the export on %s does not carry the amended text", p.nodeID)
		}
		ctx := fcontext(t, p, url.Values{"namespace": {team}})
		if slices.Contains(ids(ctx.Memories), quar.ID) || strings.Contains(ctx.Text, "hunter2") {
			t.Fatalf("the quarantined memory is in the context on %s", p.nodeID)
		}
		if !strings.Contains(ctx.Text, amended) || strings.Contains(ctx.Text, "kept for 7 days") {
			t.Fatalf("the context on %s does not carry the amended text:\n%s", p.nodeID, ctx.Text)
		}
		// block: hidden for channel=public only
		eventually(t, "the block on "+p.nodeID, func() bool {
			ms := ids(fsearch(t, p, "wombat", url.Values{"channel": {"public"}}))
			return !slices.Contains(ms, block.ID) && slices.Contains(ms, control.ID)
		})
		if !slices.Contains(ids(fsearch(t, p, "wombat", nil)), block.ID) {
			t.Fatalf("the blocked memory is hidden outside its channel on %s", p.nodeID)
		}
		if code, _ := p.api("GET", "/v1/memories/"+block.ID+"?channel=public", p.token, ""); code != 404 {
			t.Fatalf("get of the blocked memory for channel public on %s: %d", p.nodeID, code)
		}
	}

	// The audit log replicates; the pending retract has no effect anywhere.
	type auditAns struct {
		Edits []memapi.Edit `json:"edits"`
	}
	audit := func(p *nodeProc, q string) []memapi.Edit {
		var a auditAns
		if err := json.Unmarshal(fcall(t, p, "GET", "/v1/audit?"+q, "", 200), &a); err != nil {
			t.Fatal(err)
		}
		return a.Edits
	}
	for _, p := range []*nodeProc{bob, carol} {
		eventually(t, "the audit log on "+p.nodeID, func() bool {
			return len(audit(p, "namespace="+url.QueryEscape(team))) == 4
		})
		ops := map[string]string{}
		for _, e := range audit(p, "namespace="+url.QueryEscape(team)) {
			ops[e.Op] = e.Status
			if e.Proposer != "agent://alice" || e.Reason == "" {
				t.Fatalf("audit entry on %s: %+v", p.nodeID, e)
			}
		}
		if ops["amend"] != "approved" || ops["quarantine"] != "approved" || ops["block"] != "approved" || ops["retract"] != "pending" {
			t.Fatalf("audit on %s: %v", p.nodeID, ops)
		}
		if es := audit(p, "id="+doomed.ID); len(es) != 1 || es[0].EditID != retract.EditID || !es[0].NeedsApproval {
			t.Fatalf("the doomed memory's history on %s: %+v", p.nodeID, es)
		}
		if !p.has(doomed.ID) || !slices.Contains(ids(fsearch(t, p, "customer", nil)), doomed.ID) {
			t.Fatalf("an unapproved retract took effect on %s", p.nodeID)
		}
	}
	if !alice.has(doomed.ID) {
		t.Fatal("an unapproved retract took effect on the proposer's node")
	}
	// bob (write, not admin) cannot approve it.
	if code, b := bob.api("POST", "/v1/edits/"+retract.EditID+"/approve", bob.token, ""); code != 403 {
		t.Fatalf("bob approved: %d %s", code, b)
	}
	fcall(t, alice, "POST", "/v1/edits/"+retract.EditID+"/approve", "", 200)
	for _, p := range []*nodeProc{alice, bob, carol} {
		eventually(t, "the approved retract on "+p.nodeID, func() bool {
			return !p.has(doomed.ID) && !slices.Contains(ids(fsearch(t, p, "customer", nil)), doomed.ID)
		})
		eventually(t, "the approval in the audit log on "+p.nodeID, func() bool {
			es := audit(p, "id="+doomed.ID)
			return len(es) == 1 && es[0].Status == "approved" && es[0].Approver == "agent://alice"
		})
	}

	// An admin on another node decides: carol, made admin, approves one
	// pending retract and rejects another on her node; every node,
	// alice's included, verifies her signed decisions.
	fcall(t, alice, "POST", "/v1/grants", `{"namespace":"team://ops","principal":"agent://carol","permissions":["admin"]}`, 200, 201)
	gone := save("wombat vendor contract", "wombat vendor contract terms", "team")
	kept := save("wombat vendor contact", "wombat vendor contact is dana", "team")
	eventually(t, "the new memories on alice's node", func() bool { return alice.has(gone.ID) && alice.has(kept.ID) })
	r1 := edit(fmt.Sprintf(`{"target_id":%q,"op":"retract","reason":"contract is confidential"}`, gone.ID))
	r2 := edit(fmt.Sprintf(`{"target_id":%q,"op":"retract","reason":"stale contact"}`, kept.ID))
	if r1.Status != "pending" || r2.Status != "pending" {
		t.Fatalf("retract statuses %q %q", r1.Status, r2.Status)
	}
	eventually(t, "the pending retracts on carol's node", func() bool {
		return len(audit(carol, "status=pending")) == 2
	})
	eventually(t, "carol's admin grant on carol's node", func() bool {
		code, _ := carol.api("POST", "/v1/edits/"+r1.EditID+"/approve", carol.token, "")
		return code == 200
	})
	fcall(t, carol, "POST", "/v1/edits/"+r2.EditID+"/reject", "", 200)
	for _, p := range []*nodeProc{alice, bob, carol} {
		eventually(t, "carol's decisions on "+p.nodeID, func() bool {
			a, b := audit(p, "id="+gone.ID), audit(p, "id="+kept.ID)
			return len(a) == 1 && a[0].Status == "approved" && a[0].Approver == "agent://carol" &&
				len(b) == 1 && b[0].Status == "rejected" && b[0].Approver == "agent://carol" &&
				!p.has(gone.ID) && p.has(kept.ID)
		})
	}

	// A projection of the team namespace (maintained on alice's node, its
	// creator's) follows writes and edits made on carol's node.
	b := fcall(t, alice, "POST", "/v1/projections", `{"source":"team://ops","target":"agent://bob","filter":{"tags":["runbook"]},"level":"L2"}`, 201)
	var pi memapi.ProjectionInfo
	if err := json.Unmarshal(b, &pi); err != nil {
		t.Fatal(err)
	}
	inView := url.Values{"namespace": {pi.View}}
	rb := fsave(t, carol, `{"namespace":"team://ops","type":"procedure","title":"wombat failover","content":"wombat failover: promote the replica","tags":["runbook"]}`)
	eventually(t, "carol's write in bob's view", func() bool {
		m, ok := byLineage(fsearch(t, bob, "wombat", inView), rb.ID)
		return ok && m.ProjectedFrom == team && m.Summary == "wombat failover: promote the replica"
	})
	code, body := carol.api("POST", "/v1/edits", carol.token, fmt.Sprintf(`{"target_id":%q,"op":"amend","reason":"new procedure","patch":{"text":"wombat failover: run the failover script"}}`, rb.ID))
	if code != 201 {
		t.Fatalf("carol's amend: %d %s", code, body)
	}
	eventually(t, "carol's amend in bob's view", func() bool {
		m, ok := byLineage(fsearch(t, bob, "wombat", inView), rb.ID)
		return ok && m.Summary == "wombat failover: run the failover script"
	})
	code, body = carol.api("POST", "/v1/edits", carol.token, fmt.Sprintf(`{"target_id":%q,"op":"quarantine","reason":"unverified"}`, rb.ID))
	if code != 201 {
		t.Fatalf("carol's quarantine: %d %s", code, body)
	}
	eventually(t, "carol's quarantine in bob's view", func() bool {
		return len(fsearch(t, bob, "wombat", url.Values{"namespace": {pi.View}, "include_quarantined": {"true"}})) == 0
	})
	fcall(t, alice, "DELETE", "/v1/projections/"+pi.ID, "", 204)
}

func featCapsules(t *testing.T, alice, bob, carol *nodeProc) {
	c1 := fsave(t, alice, `{"type":"decision","title":"quetzal deploy window","content":"quetzal deploys happen on tuesdays"}`)
	c2 := fsave(t, alice, `{"type":"decision","title":"quetzal rollback","content":"quetzal rollbacks need two approvals"}`)
	var created memapi.CapsuleCreated
	b := fcall(t, alice, "POST", "/v1/capsules", fmt.Sprintf(`{"subject_type":"project","subject_id":"quetzal","audience":["agent://bob"],"ids":[%q,%q],"ttl_days":1,"risks":["rollback rules may change"]}`, c1.ID, c2.ID), 201)
	if err := json.Unmarshal(b, &created); err != nil || created.CapsuleID == "" || created.ItemCount != 2 {
		t.Fatalf("create: %v %s", err, b)
	}
	inbox := "agent://bob/.inbox/alice/capsule-" + created.CapsuleID

	var got memapi.Capsule
	eventually(t, "the capsule readable on bob's node", func() bool {
		code, b := bob.api("GET", "/v1/capsules/"+created.CapsuleID, bob.token, "")
		if code != 200 {
			return false
		}
		got = memapi.Capsule{}
		return json.Unmarshal(b, &got) == nil && len(got.Items) == 2
	})
	if !holds(t, bob, inbox) {
		t.Fatalf("bob's node does not report holding %s", inbox)
	}
	if got.Status != "active" || got.Author != "agent://alice" || got.Namespace != inbox || got.SubjectID != "quetzal" {
		t.Fatalf("bob's capsule: %+v", got)
	}
	if got.Items[0].Lineage != c1.ID || got.Items[1].Lineage != c2.ID || got.Items[0].Content != c1.Content {
		t.Fatalf("bob's capsule items: %+v", got.Items)
	}
	var list memapi.CapsuleList
	if err := json.Unmarshal(fcall(t, bob, "GET", "/v1/capsules", "", 200), &list); err != nil ||
		!slices.ContainsFunc(list.Capsules, func(c memapi.Capsule) bool { return c.ID == created.CapsuleID }) {
		t.Fatalf("bob's capsule list: %+v %v", list, err)
	}
	if ms := fsearch(t, bob, "quetzal", nil); len(ms) != 2 {
		t.Fatalf("bob's search of the capsule items: %v", ids(ms))
	}

	bundle := func(p *nodeProc) memapi.BundleResult {
		var br memapi.BundleResult
		if err := json.Unmarshal(fcall(t, p, "POST", "/v1/context/bundle", `{"subject_type":"project","subject_id":"quetzal"}`, 200), &br); err != nil {
			t.Fatal(err)
		}
		return br
	}
	if br := bundle(bob); len(br.Capsules) != 1 || br.Capsules[0].ID != created.CapsuleID {
		t.Fatalf("bob's context bundle capsules: %+v", br.Capsules)
	}

	// carol: not in the audience, holds nothing and reads nothing.
	checkCarol := func() {
		t.Helper()
		if holds(t, carol, inbox) {
			t.Fatal("carol's node holds bob's capsule inbox")
		}
		if code, b := carol.api("GET", "/v1/capsules/"+created.CapsuleID, carol.token, ""); code != 404 {
			t.Fatalf("carol gets the capsule: %d %s", code, b)
		}
		if b := fcall(t, carol, "GET", "/v1/capsules", "", 200); strings.Contains(string(b), created.CapsuleID) {
			t.Fatalf("carol lists the capsule: %s", b)
		}
		if ms := fsearch(t, carol, "quetzal", nil); len(ms) != 0 {
			t.Fatalf("carol finds capsule items: %v", ids(ms))
		}
		if br := bundle(carol); len(br.Capsules) != 0 {
			t.Fatalf("carol's context bundle lists the capsule: %+v", br.Capsules)
		}
	}
	checkCarol()
	// bob cannot revoke alice's capsule.
	if code, b := bob.api("DELETE", "/v1/capsules/"+created.CapsuleID, bob.token, ""); code != 403 {
		t.Fatalf("bob revoked: %d %s", code, b)
	}

	// alice revokes: bob can no longer read it.
	fcall(t, alice, "DELETE", "/v1/capsules/"+created.CapsuleID, "", 200)
	eventually(t, "the revoke on bob's node", func() bool {
		code, _ := bob.api("GET", "/v1/capsules/"+created.CapsuleID, bob.token, "")
		return code == 404
	})
	if b := fcall(t, bob, "GET", "/v1/capsules", "", 200); strings.Contains(string(b), created.CapsuleID) {
		t.Fatalf("bob still lists the revoked capsule: %s", b)
	}
	for _, it := range got.Items {
		if bob.has(it.ID) {
			t.Fatalf("bob still reads item %s of the revoked capsule", it.ID)
		}
	}
	if ms := fsearch(t, bob, "quetzal", nil); len(ms) != 0 {
		t.Fatalf("bob still finds items of the revoked capsule: %v", ids(ms))
	}
	if br := bundle(bob); len(br.Capsules) != 0 || strings.Contains(br.Text, "quetzal") {
		t.Fatalf("bob's context bundle after the revoke: %+v", br)
	}
	// alice, the creator, still sees it as revoked.
	var mine memapi.Capsule
	if err := json.Unmarshal(fcall(t, alice, "GET", "/v1/capsules/"+created.CapsuleID, "", 200), &mine); err != nil || mine.Status != "revoked" || len(mine.Items) != 0 {
		t.Fatalf("alice's view of the revoked capsule: %+v %v", mine, err)
	}
	syncedWith(t, alice, carol)
	syncedWith(t, bob, carol)
	checkCarol()
}
