package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

// surgeryFixture: alice owns the node; bob is a local principal (session
// key "bob") and a member of team://t, where retracts need approval.
func surgeryFixture(t *testing.T) *fixture {
	t.Helper()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	alice := namespace.MustParse("agent://alice")
	local := func(p namespace.Address) bool {
		return p.Kind == namespace.KindAgent && p.Path == "" && (p.Name == "alice" || p.Name == "bob")
	}
	surg, err := surgery.New(surgery.Approvals{"team://t": {memapi.OpRetract}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := memory.Open(memory.Config{Agent: alice, Now: func() time.Time { return now }, IsLocal: local,
		Features: []memory.Feature{surg, capsule.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	res, err := namespace.NewResolver([]namespace.Rule{{Mode: "map", Match: "bob", Principal: "bob"}}, alice)
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	h, err := New(Config{Service: svc, Token: testToken, Sessions: res, Logger: slog.New(slog.NewTextHandler(tlog{t, buf}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, h: h, svc: svc, log: buf}
	wantStatus(t, f.do("POST", "/v1/namespaces", `{"namespace":"team://t"}`), http.StatusCreated, "")
	wantStatus(t, f.do("POST", "/v1/grants", `{"namespace":"team://t","principal":"bob","permissions":["member"]}`), http.StatusCreated, "")
	return f
}

func (f *fixture) as(who, method, path, body string) answer {
	f.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(SessionHeader, who)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return answer{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func (f *fixture) audit(query string) []memapi.Edit {
	f.t.Helper()
	a := f.do("GET", "/v1/audit"+query, "")
	wantStatus(f.t, a, http.StatusOK, "")
	var res memapi.AuditResult
	a.decode(f.t, &res)
	return res.Edits
}

func TestSurgeryHTTP(t *testing.T) {
	f := surgeryFixture(t)
	m := f.save(`{"namespace":"team://t","content":"kafka retention is seven days","channel":"public"}`)
	other := f.save(`{"namespace":"team://t","content":"kafka brokers on three hosts"}`)

	// Validation: 400 with a message, nothing recorded.
	for _, body := range []string{
		`{"target_id":"` + m.ID + `","op":"quarantine"}`,
		`{"target_id":"` + m.ID + `","op":"erase","reason":"r"}`,
		`{"target_id":"` + m.ID + `","op":"amend","reason":"r"}`,
		`{"target_id":"` + m.ID + `","op":"attenuate","reason":"r"}`,
		`{"target_id":"` + m.ID + `","op":"block","reason":"r"}`,
		`{"target_id":"` + m.ID + `","op":"amend","reason":"r","patch":{"txt":"x"}}`,
	} {
		a := f.do("POST", "/v1/edits", body)
		wantStatus(t, a, http.StatusBadRequest, "")
		if a.errBody(t).Message == "" {
			t.Fatalf("%s: no message", body)
		}
	}
	wantStatus(t, f.do("POST", "/v1/edits", `{"target_id":"01NOSUCH000000000000000000","op":"quarantine","reason":"r"}`), http.StatusNotFound, "")
	if n := len(f.audit("")); n != 0 {
		t.Fatalf("refused edits recorded: %d", n)
	}

	// amend + block, approved at once.
	a := f.as("bob", "POST", "/v1/edits", `{"target_id":"`+m.ID+`","op":"amend","reason":"wrong","patch":{"text":"kafka retention is thirty days","importance":0.9}}`)
	wantStatus(t, a, http.StatusCreated, "")
	var er memapi.EditResult
	a.decode(t, &er)
	if er.Status != "approved" || er.EditID == "" {
		t.Fatalf("amend: %+v", er)
	}
	wantStatus(t, f.do("POST", "/v1/edits", `{"target_id":"`+m.ID+`","op":"block","reason":"internal","patch":{"channel":"public"}}`), http.StatusCreated, "")
	a = f.do("GET", "/v1/search?q=seven", "")
	var sr memapi.SearchResult
	a.decode(t, &sr)
	if sr.Total != 0 {
		t.Fatalf("old text searchable: %s", a.body)
	}
	a = f.do("GET", "/v1/search?q=kafka&channel=public", "")
	a.decode(t, &sr)
	if sr.Total != 0 {
		t.Fatalf("blocked memory in a public search: %s", a.body)
	}
	wantStatus(t, f.do("GET", "/v1/memories/"+m.ID+"?channel=public", ""), http.StatusNotFound, "")
	a = f.do("GET", "/v1/memories/"+m.ID, "")
	var got memapi.Memory
	a.decode(t, &got)
	if got.Content != "kafka retention is thirty days" || got.Importance != 0.9 || !slices.Equal(got.BlockedChannels, []string{"public"}) {
		t.Fatalf("get: %s", a.body)
	}

	// quarantine: out of context and default search, back with include_quarantined.
	wantStatus(t, f.do("POST", "/v1/edits", `{"target_id":"`+other.ID+`","op":"quarantine","reason":"unverified"}`), http.StatusCreated, "")
	a = f.do("GET", "/v1/context", "")
	var cx memapi.ContextResult
	a.decode(t, &cx)
	if strings.Contains(cx.Text, "brokers") {
		t.Fatalf("quarantined memory in context: %s", cx.Text)
	}
	a = f.do("GET", "/v1/search?q=brokers&include_quarantined=true", "")
	a.decode(t, &sr)
	if sr.Total != 1 {
		t.Fatalf("include_quarantined: %s", a.body)
	}
	wantStatus(t, f.do("GET", "/v1/memories/"+other.ID, ""), http.StatusNotFound, "")
	wantStatus(t, f.do("GET", "/v1/memories/"+other.ID+"?include_quarantined=true", ""), http.StatusOK, "")

	// retract needs approval: pending, bob cannot approve, alice can.
	a = f.as("bob", "POST", "/v1/edits", `{"target_id":"`+m.ID+`","op":"retract","reason":"pii"}`)
	wantStatus(t, a, http.StatusCreated, "")
	a.decode(t, &er)
	if er.Status != "pending" {
		t.Fatalf("retract: %+v", er)
	}
	if p := f.audit("?status=pending"); len(p) != 1 || p[0].EditID != er.EditID {
		t.Fatalf("pending: %+v", p)
	}
	wantStatus(t, f.do("GET", "/v1/memories/"+m.ID, ""), http.StatusOK, "")
	wantStatus(t, f.as("bob", "POST", "/v1/edits/"+er.EditID+"/approve", ""), http.StatusForbidden, "")
	wantStatus(t, f.do("POST", "/v1/edits/nosuch/approve", ""), http.StatusNotFound, "")
	a = f.do("POST", "/v1/edits/"+er.EditID+"/approve", "")
	wantStatus(t, a, http.StatusOK, "")
	var e memapi.Edit
	a.decode(t, &e)
	if e.Status != "approved" || e.Approver != "agent://alice" || e.DecidedAt == nil {
		t.Fatalf("approve: %s", a.body)
	}
	wantStatus(t, f.do("POST", "/v1/edits/"+er.EditID+"/reject", ""), http.StatusConflict, "")
	wantStatus(t, f.do("GET", "/v1/memories/"+m.ID+"?include_deleted=true", ""), http.StatusNotFound, "")
	hist := f.audit("?id=" + m.ID)
	if len(hist) != 3 || hist[0].Op != "amend" || hist[0].Proposer != "agent://bob" || hist[2].Op != "retract" {
		t.Fatalf("history: %+v", hist)
	}
	wantStatus(t, f.do("GET", "/v1/audit?status=maybe", ""), http.StatusBadRequest, "")
	wantStatus(t, f.do("DELETE", "/v1/audit", ""), http.StatusMethodNotAllowed, "")
	if n := len(f.audit("")); n != 4 {
		t.Fatalf("audit: %d", n)
	}
}
