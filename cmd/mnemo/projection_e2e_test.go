package main

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/httpapi"
	"github.com/mnemohq/mnemo/node/memapi"
)

// TestE2EProjection: create, list and remove a projection through the real
// binary's CLI and HTTP API on one node, bob being a second principal of
// it (a bound token); bob's searches include the view while it lives.
func TestE2EProjection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "alice")
	a := startNode(t, dir, "alice")
	a.mnemo("", "save", "--type", "decision", "--title", "Token rotation", "--tags", "auth,security", "quokka tokens rotate hourly")
	a.mnemo("", "save", "--type", "decision", "--title", "Invoice rounding", "--tags", "billing", "quokka invoices round half even")
	bobTok := strings.TrimSpace(a.mnemo("", "token", "issue", "--principal", "agent://bob").stdout)
	bobEnv := []string{"MNEMO_TOKEN=" + bobTok}

	// Refused: a bad spec (400 naming the problem), no share (403).
	if code, body := a.api("POST", "/v1/projections", a.token, `{"source":"agent://alice","target":"agent://bob","filter":{"predicate":"tags ~ 1"},"level":"L2"}`); code != 400 || !strings.Contains(string(body), "predicate") {
		t.Fatalf("bad predicate: %d %s", code, body)
	}
	if code, body := a.api("POST", "/v1/projections", a.token, `{"source":"agent://alice","target":"agent://bob","level":"L7"}`); code != 400 {
		t.Fatalf("bad level: %d %s", code, body)
	}
	if code, body := a.apiAs("POST", "/v1/projections", bobTok, "", `{"source":"agent://alice","target":"agent://carol","level":"L2"}`); code != 403 || !strings.Contains(body, "permission_denied") {
		t.Fatalf("bob projecting alice's namespace: %d %s", code, body)
	}
	if r := cli(t, "", bobEnv, "projection", "create", "--source", "agent://alice", "--target", "agent://carol", "--data", dir); r.code != 1 || !strings.Contains(r.stderr, "share") {
		t.Fatalf("bob's CLI create: %+v", r)
	}

	out := a.mnemo("", "projection", "create", "--source", "agent://alice", "--target", "agent://bob", "--tags", "auth", "--level", "L2", "--json").stdout
	var info memapi.ProjectionInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.ID == "" || !info.Live || info.Memories != 1 || info.Level.String() != "L2" {
		t.Fatalf("create: %v %s", err, out)
	}
	if ls := a.mnemo("", "projection", "ls").stdout; !strings.Contains(ls, info.ID) || !strings.Contains(ls, "tags=auth") || !strings.Contains(ls, "live") {
		t.Fatalf("alice's ls:\n%s", ls)
	}
	if ls := cli(t, "", bobEnv, "projection", "ls", "--data", dir).ok(t); !strings.Contains(ls.stdout, info.ID) {
		t.Fatalf("bob's ls:\n%s", ls.stdout)
	}
	search := func() memapi.SearchResult {
		t.Helper()
		code, body := a.apiAs("GET", "/v1/search?q=quokka", bobTok, "", "")
		var res memapi.SearchResult
		if code != 200 || json.Unmarshal([]byte(body), &res) != nil {
			t.Fatalf("bob's search: %d %s", code, body)
		}
		return res
	}
	res := search()
	if res.Total != 1 || res.Results[0].Memory.ProjectedFrom != "agent://alice" || res.Results[0].Memory.Namespace != info.View || res.Results[0].Memory.Content != "" {
		t.Fatalf("bob's search: %+v", res)
	}
	// Live: a new matching memory arrives.
	a.mnemo("", "save", "--type", "note", "--tags", "auth", "quokka sessions expire")
	if res := search(); res.Total != 2 {
		t.Fatalf("bob's search after a new save: %+v", res)
	}
	// bob cannot remove alice's projection; alice can.
	if code, body := a.apiAs("DELETE", "/v1/projections/"+url.PathEscape(info.ID), bobTok, "", ""); code != 403 {
		t.Fatalf("bob deleting: %d %s", code, body)
	}
	if rm := a.mnemo("", "projection", "rm", info.ID).stdout; !strings.Contains(rm, info.ID) {
		t.Fatalf("rm: %s", rm)
	}
	if res := search(); res.Total != 0 {
		t.Fatalf("bob still sees the view: %+v", res)
	}
	code, body := a.api("GET", "/v1/projections", a.token, "")
	var ans httpapi.ProjectionsAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || len(ans.Projections) != 0 {
		t.Fatalf("list after rm: %d %s", code, body)
	}
	if code, _ := a.api("DELETE", "/v1/projections/"+info.ID, a.token, ""); code != 404 {
		t.Fatalf("second rm: %d", code)
	}
}
