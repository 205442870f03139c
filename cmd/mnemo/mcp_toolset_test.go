package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/client"
)

// TestMCPSameToolsEverywhere: `mnemo mcp` over stdio lists the tools the
// node's /mcp lists — same names, same input schemas, same descriptions —
// both when it runs the node in process and when it attaches to the node
// holding the directory (whose calls go through node/client and the HTTP
// API); and over stdio, in both modes, every listed tool answers a call
// through the official Go SDK client.
func TestMCPSameToolsEverywhere(t *testing.T) {
	bin := mcpBinary(t)
	dir := t.TempDir()
	// Retracts wait for an admin's approval, so mem_approve has work to do.
	if err := os.WriteFile(filepath.Join(dir, node.SettingsFile), []byte(`{"approvals":{"*":["retract"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	inproc := startMCP(t, bin, dir, "t")
	attached := startMCP(t, bin, dir, "t")
	if !strings.Contains(attached.stderr.String(), "attached") {
		t.Fatalf("second process did not attach; stderr:\n%s", attached.stderr)
	}
	info, err := node.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := node.ReadToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	overHTTP, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: info.HTTP + "/mcp",
		HTTPClient: &http.Client{Transport: withBearer{token: tok}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	api, err := client.New(info.HTTP, tok)
	if err != nil {
		t.Fatal(err)
	}

	want := listedTools(t, overHTTP)
	// Closed now, not at the end: only the listing needs it, and closed
	// just before the node shut down it held that shutdown to its 5 s
	// deadline in about one run in three.
	overHTTP.Close()
	if len(want) == 0 {
		t.Fatal("/mcp lists no tools")
	}
	for _, m := range []struct {
		mode string
		p    *mcpProc
	}{{"in-process", inproc}, {"attached", attached}} {
		got := listedTools(t, m.p.cs)
		if !slices.Equal(sortedKeys(got), sortedKeys(want)) {
			t.Fatalf("%s stdio lists %v;\n/mcp lists %v", m.mode, sortedKeys(got), sortedKeys(want))
		}
		for name, tool := range want {
			if got[name].schema != tool.schema {
				t.Errorf("%s stdio: %s input schema\n%s\n/mcp:\n%s", m.mode, name, got[name].schema, tool.schema)
			}
			if got[name].full != tool.full {
				t.Errorf("%s stdio: %s differs from /mcp's:\n%s\n%s", m.mode, name, got[name].full, tool.full)
			}
		}
	}

	for _, m := range []struct {
		mode, word string
		p          *mcpProc
	}{{"in-process", "quokka", inproc}, {"attached", "numbat", attached}} {
		t.Run(m.mode, func(t *testing.T) {
			// Shared namespaces for mem_share, mem_promote and
			// mem_merge_duplicates; no tool creates one (the admin CLI does).
			for _, ns := range []string{"team://" + m.word, "project://" + m.word} {
				if _, err := api.CreateNamespace(t.Context(), ns); err != nil {
					t.Fatal(err)
				}
			}
			called := callEveryTool(t, m.p, m.word)
			for _, name := range sortedKeys(want) {
				if !called[name] {
					t.Errorf("tool %s is listed but this test never calls it: add it to callEveryTool", name)
				}
			}
		})
	}
	attached.close(t)
	inproc.close(t)
}

type listedTool struct{ schema, full string }

// listedTools maps each tool cs lists to its input schema and its whole
// definition, as JSON with sorted keys.
func listedTools(t *testing.T, cs *mcp.ClientSession) map[string]listedTool {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	canonical := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m any // through a map, so keys come out sorted
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(m)
		return string(b)
	}
	out := map[string]listedTool{}
	for _, tool := range res.Tools {
		out[tool.Name] = listedTool{schema: canonical(tool.InputSchema), full: canonical(tool)}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// callEveryTool calls each tool at least once over p, as one agent's
// working session would, and returns the names it called. word keeps the
// memories of one run apart from another's on the same node. Every call
// must succeed, and a few must fail with their documented error: approving
// an edit that needed none, reading a retracted memory.
func callEveryTool(t *testing.T, p *mcpProc, word string) map[string]bool {
	called := map[string]bool{}
	ok := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		called[name] = true
		return p.call(t, name, args, false)
	}
	str := func(res *mcp.CallToolResult, path ...string) string {
		t.Helper()
		var v any = structured(t, res)
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		s, _ := v.(string)
		if s == "" {
			t.Fatalf("no %v in %s", path, resultText(res))
		}
		return s
	}
	subject := "u-" + word
	session := "s-" + word
	team := "team://" + word

	// The core memory tools.
	id := str(ok("mem_save", map[string]any{"content": word + " retention is seven days", "type": "decision",
		"project": "demo", "subject_type": "user", "subject_id": subject}), "id")
	wantText(t, ok("mem_get_observation", map[string]any{"id": id}), "seven days")
	ok("mem_update", map[string]any{"id": id, "title": word + " retention"})
	wantText(t, ok("mem_search", map[string]any{"query": word}), id)
	wantText(t, ok("mem_timeline", map[string]any{"observation_id": id}), id)
	wantText(t, ok("mem_context", map[string]any{"project": "demo"}), word)
	ok("mem_stats", nil)
	ok("mem_suggest_topic_key", map[string]any{"type": "decision", "title": "Retention"})
	ok("mem_session_start", map[string]any{"id": session, "project": "demo"})
	ok("mem_save_prompt", map[string]any{"content": "why seven days?", "session_id": session})
	ok("mem_session_summary", map[string]any{"content": "Settled " + word + " retention.", "session_id": session, "project": "demo"})
	ok("mem_session_end", map[string]any{"id": session, "summary": "done"})
	ok("mem_progress", map[string]any{"project": "demo", "content": "retention settled"})
	ok("mem_compact", map[string]any{"older_than_days": 1})

	// Sharing, duplicates.
	copyID := str(ok("mem_share", map[string]any{"id": id, "namespace": team}), "memory", "id")
	ok("mem_promote", map[string]any{"id": id, "namespace": "project://" + word})
	ok("mem_duplicates", nil)
	wantText(t, ok("mem_merge_duplicates", map[string]any{"ids": []string{copyID, id}, "namespace": team}), "Merged into "+copyID)

	// Governed edits.
	editID := str(ok("mem_edit", map[string]any{"id": id, "op": "amend", "reason": "wrong number",
		"text": word + " retention is thirty days"}), "edit_id")
	wantText(t, ok("mem_audit", map[string]any{"id": id}), editID)
	wantText(t, p.call(t, "mem_approve", map[string]any{"edit_id": editID}, true), "no approval")
	scratch := str(ok("mem_save", map[string]any{"content": word + " scratch note with a secret"}), "id")
	retract := str(ok("mem_edit", map[string]any{"id": scratch, "op": "retract", "reason": "private"}), "edit_id")
	wantText(t, ok("mem_audit", map[string]any{"status": "pending"}), retract)
	wantText(t, ok("mem_approve", map[string]any{"edit_id": retract}), "approved")
	wantText(t, p.call(t, "mem_get_observation", map[string]any{"id": scratch}, true), "not found")

	// Capsules and the context bundle.
	capID := str(ok("mem_capsule_create", map[string]any{"subject_type": "user", "subject_id": subject,
		"audience": []string{"agent://bob"}, "ids": []string{id}, "risks": []string{"open complaint"}}), "capsule_id")
	wantText(t, ok("mem_capsules", map[string]any{"subject_id": subject}), capID)
	wantText(t, ok("mem_capsule_get", map[string]any{"capsule_id": capID}), "thirty days", "open complaint")
	wantText(t, ok("mem_build_context", map[string]any{"subject_type": "user", "subject_id": subject, "project": "demo"}), "thirty days")
	ok("mem_capsule_revoke", map[string]any{"capsule_id": capID})

	ok("mem_delete", map[string]any{"id": id})
	return called
}
