package console

import (
	"bufio"
	"context"
	"github.com/mnemohq/mnemo/namespace"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

// alicesSecrets fills the service with what only alice (the owner) may
// see: a private memory, a pending edit on it with its reason, a capsule
// for carol, and a team namespace bob is not in.
type secrets struct {
	memory  memapi.Memory
	editID  string
	capsule string
}

const (
	secretTitle   = "alice private launch codes"
	secretContent = "the vault opens with 7431"
	secretReason  = "alice-only edit reason"
	secretTeam    = "team://alice-secret"
)

func alicesSecrets(t *testing.T, f *fixture) secrets {
	t.Helper()
	ctx := context.Background()
	alice := memorytest.Agent("alice")
	m := save(t, f.svc, "alice", memapi.SaveRequest{Type: "decision", Title: secretTitle, Content: secretContent,
		Tags: []string{"vault"}, SubjectType: "customer", SubjectID: "acme"})
	text := "amended secret"
	ed, err := surgery.Of(f.svc).Propose(ctx, alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAmend, Reason: secretReason,
		Patch: memapi.EditPatch{Text: &text}})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := capsule.Of(f.svc).Create(ctx, alice, memapi.CapsuleRequest{SubjectType: "customer", SubjectID: "acme",
		Audience: []string{"agent://carol"}, IDs: []string{m.ID}})
	if err != nil {
		t.Fatal(err)
	}
	memorytest.Create(t, f.svc, "alice", secretTeam)
	return secrets{memory: m, editID: ed.EditID, capsule: cp.CapsuleID}
}

// A principal-token session sees, on every page, only what the memory
// service lets that principal read, and every action on alice's things is
// refused and changes nothing.
func TestPrincipalSessionCannotSeeOrTouchAnotherAgentsPrivateThings(t *testing.T) {
	f := newFixture(t, nil)
	s := alicesSecrets(t, f)
	mine := save(t, f.svc, "bob", memapi.SaveRequest{Type: "observation", Title: "bob own note", Content: "hello from bob"})

	bob := f.browser()
	bob.signIn("bob-token-0123456789")
	leaks := []string{secretTitle, secretContent, secretReason, secretTeam, s.memory.ID, s.editID, s.capsule, "agent://alice/"}
	pages := []string{
		"/ui/memories", "/ui/memories?q=vault", "/ui/memories?q=launch+codes&include_quarantined=on",
		"/ui/memories?namespace=agent://alice", "/ui/memories?subject_type=customer&subject_id=acme",
		"/ui/memories/" + s.memory.ID, "/ui/governance", "/ui/namespaces", "/ui/cluster", "/ui/projections",
	}
	for _, path := range pages {
		p := bob.get(path)
		for _, leak := range leaks {
			if strings.Contains(path, leak) {
				continue // the id bob asked for may be echoed in "not found"
			}
			if strings.Contains(p.body, leak) {
				t.Errorf("bob's %s shows %q (status %d)", path, leak, p.status)
			}
		}
	}
	if p := bob.get("/ui/memories/" + s.memory.ID); p.status != http.StatusNotFound && p.status != http.StatusForbidden {
		t.Errorf("bob opens alice's memory: %d", p.status)
	}
	if p := bob.get("/ui/memories"); !strings.Contains(p.body, mine.Title) {
		t.Errorf("bob does not see his own memory")
	}
	if p := bob.get("/ui/cluster"); strings.Contains(p.body, `id="peers"`) || strings.Contains(p.body, `id="digests"`) {
		t.Errorf("bob sees the owner-only replication status")
	}

	actions := []struct {
		path string
		form url.Values
	}{
		{"/ui/memories/" + s.memory.ID + "/update", url.Values{"title": {"pwned"}, "content": {"pwned"}}},
		{"/ui/memories/" + s.memory.ID + "/delete", nil},
		{"/ui/memories/" + s.memory.ID + "/edits", url.Values{"op": {"retract"}, "reason": {"pwned"}}},
		{"/ui/edits/" + s.editID + "/approve", nil},
		{"/ui/edits/" + s.editID + "/reject", nil},
		{"/ui/capsules/" + s.capsule + "/revoke", nil},
		{"/ui/grants", url.Values{"namespace": {secretTeam}, "principal": {"agent://bob"}, "permission": {"admin"}}},
		{"/ui/grants", url.Values{"namespace": {"agent://alice"}, "principal": {"agent://bob"}, "permission": {"read"}}},
		{"/ui/revocations", url.Values{"namespace": {secretTeam}, "principal": {"agent://alice"}, "permission": {"admin"}}},
		{"/ui/memories", url.Values{"namespace": {"agent://alice"}, "type": {"observation"}, "content": {"pwned"}}},
	}
	for _, a := range actions {
		p := bob.post(a.path, a.form)
		if p.status < 400 {
			t.Errorf("bob's POST %s was accepted: %d", a.path, p.status)
		}
		for _, leak := range []string{secretTitle, secretContent, secretReason} {
			if strings.Contains(p.body, leak) {
				t.Errorf("bob's POST %s answer shows %q", a.path, leak)
			}
		}
	}

	// Nothing changed.
	alice := memorytest.Agent("alice")
	got, err := f.svc.GetFor(context.Background(), alice, s.memory.ID, memapi.GetOptions{IncludeDeleted: true, IncludeQuarantined: true})
	if err != nil || got.Title != secretTitle || got.Content != secretContent || got.DeletedAt != nil {
		t.Fatalf("alice's memory changed: %+v %v", got, err)
	}
	audit, _ := surgery.Of(f.svc).Audit(context.Background(), alice, memapi.AuditQuery{ID: s.memory.ID})
	if len(audit.Edits) != 1 || audit.Edits[0].Status != memapi.StatusPending {
		t.Fatalf("alice's edits changed: %+v", audit.Edits)
	}
	cp, err := capsule.Of(f.svc).Get(context.Background(), alice, s.capsule)
	if err != nil || cp.Status != memapi.CapsuleActive {
		t.Fatalf("alice's capsule changed: %+v %v", cp, err)
	}
	if f.svc.MayRead(bob0(), secretTeam) || f.svc.MayRead(bob0(), "agent://alice") {
		t.Fatal("bob was granted access")
	}
}

// The owner session sees the same things, so the test above would notice
// a page that showed nothing to anyone.
func TestOwnerSessionSeesWhatThePrincipalSessionDoesNot(t *testing.T) {
	f := newFixture(t, nil)
	s := alicesSecrets(t, f)
	b := f.browser()
	b.signIn(ownerToken)
	want := map[string][]string{
		"/ui/memories?q=vault":        {secretTitle},
		"/ui/memories/" + s.memory.ID: {secretContent, secretReason, "Approve"},
		"/ui/governance":              {secretReason, s.capsule[:18], "agent://carol"},
		"/ui/namespaces":              {secretTeam, "agent://alice"},
		"/ui/cluster":                 {`id="peers"`, `id="digests"`, "node-a"},
	}
	for path, words := range want {
		p := b.get(path)
		for _, w := range words {
			if !strings.Contains(p.body, w) {
				t.Errorf("owner's %s lacks %q (status %d)", path, w, p.status)
			}
		}
	}
}

func bob0() namespace.Address { return memorytest.Agent("bob").Principal }

// Saving, updating, proposing and approving an edit, and deleting, all
// through the forms, reach the memory service and show on the page.
func TestMemoryLifecycleThroughTheForms(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn(ownerToken)
	p := b.post("/ui/memories", url.Values{"namespace": {"agent://alice"}, "type": {"decision"}, "title": {"db choice"},
		"content": {"use postgres"}, "tags": {"db, infra"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	loc := p.header.Get("Location")
	id := strings.TrimPrefix(loc, "/ui/memories/")
	if page := b.get(loc); !strings.Contains(page.body, "use postgres") || !strings.Contains(page.body, "db, infra") {
		t.Fatalf("the saved memory's page:\n%s", page.body)
	}
	if p := b.post(loc+"/update", url.Values{"title": {"db choice"}, "content": {"use postgres 17"}, "tags": {"db"}}); p.status != http.StatusSeeOther {
		t.Fatalf("update: %d %s", p.status, p.body)
	}
	if p := b.post(loc+"/edits", url.Values{"op": {"amend"}, "reason": {"version bump"}, "text": {"use postgres 18"}}); p.status != http.StatusSeeOther {
		t.Fatalf("propose: %d %s", p.status, p.body)
	}
	page := b.get("/ui/governance")
	if !strings.Contains(page.body, "version bump") {
		t.Fatalf("the pending edit is not on the governance page")
	}
	audit, _ := surgery.Of(f.svc).Audit(context.Background(), memorytest.Agent("alice"), memapi.AuditQuery{ID: id})
	if len(audit.Edits) != 1 {
		t.Fatalf("edits: %+v", audit.Edits)
	}
	if p := b.post("/ui/edits/"+audit.Edits[0].EditID+"/approve", nil); p.status != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", p.status, p.body)
	}
	if page := b.get(loc); !strings.Contains(page.body, "use postgres 18") || !strings.Contains(page.body, "approved") {
		t.Fatalf("the approved amendment is not applied:\n%s", page.body)
	}
	if p := b.post(loc+"/delete", nil); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.status, p.body)
	}
	if page := b.get(loc); !strings.Contains(page.body, "deleted") {
		t.Fatalf("the deleted memory does not say so")
	}
	if p := b.post("/ui/memories", url.Values{"type": {"decision"}, "content": {""}}); p.status != http.StatusBadRequest {
		t.Fatalf("an empty save: want 400, got %d", p.status)
	}
}

// A save (here: straight through the service, as another node's delta
// would arrive) reaches an open event stream as the namespace's name, and
// a stream of a principal that may not read the namespace hears nothing.
func TestEventStreamNamesChangedNamespacesThePrincipalMayRead(t *testing.T) {
	f := newFixture(t, nil)
	open := func(token string) *bufio.Reader {
		b := f.browser()
		b.signIn(token)
		req, _ := http.NewRequest("GET", f.srv.URL+"/ui/events", nil)
		resp, err := b.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("events content type %q", ct)
		}
		r := bufio.NewReader(resp.Body)
		if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, ":") {
			t.Fatalf("first line %q", line)
		}
		r.ReadString('\n')
		return r
	}
	// A stream is registered before its first line is written, so both
	// hear the writes below.
	owner, bob := open(ownerToken), open("bob-token-0123456789")
	save(t, f.svc, "alice", memapi.SaveRequest{Type: "observation", Content: "alice writes"})
	save(t, f.svc, "bob", memapi.SaveRequest{Type: "observation", Content: "bob writes"})
	readEvent := func(r *bufio.Reader) string {
		ev, _ := r.ReadString('\n')
		data, _ := r.ReadString('\n')
		r.ReadString('\n')
		return strings.TrimSpace(ev) + " " + strings.TrimSpace(data)
	}
	if got := readEvent(owner); got != "event: changed data: agent://alice" {
		t.Fatalf("owner's first event %q", got)
	}
	if got := readEvent(bob); got != "event: changed data: agent://bob" {
		t.Fatalf("bob's first event %q: he must not hear of alice's write", got)
	}
}
