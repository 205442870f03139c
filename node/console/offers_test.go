package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

// A principal who may only read a namespace is shown its memories but
// offered no form that changes them; the owner, an admin there, is.
func TestFormsOfferedFollowThePrincipalsPermissions(t *testing.T) {
	f := newFixture(t, nil)
	memorytest.Create(t, f.svc, "alice", "team://eng")
	memorytest.Grant(t, f.svc, "alice", "team://eng", "agent://bob", "read")
	m := save(t, f.svc, "alice", memapi.SaveRequest{Namespace: "team://eng", Type: "decision", Title: "orders on postgres", Content: "postgres 16"})
	text := "postgres 17"
	if _, err := surgery.Of(f.svc).Propose(context.Background(), memorytest.Agent("alice"), memapi.EditRequest{
		TargetID: m.ID, Op: memapi.OpAmend, Reason: "upgrade", Patch: memapi.EditPatch{Text: &text}}); err != nil {
		t.Fatal(err)
	}
	forms := []string{`id="update"`, `id="propose"`, `id="delete"`, `class="approve"`}

	owner := f.browser()
	owner.signIn(ownerToken)
	page := owner.get("/ui/memories/" + m.ID)
	for _, form := range forms {
		if !strings.Contains(page.body, form) {
			t.Errorf("the owner is not offered %s", form)
		}
	}
	if ns := namespaceSection(owner.get("/ui/namespaces").body, "team://eng"); !strings.Contains(ns, `action="/ui/grants"`) {
		t.Errorf("the owner is not offered grants")
	}

	bob := f.browser()
	bob.signIn("bob-token-0123456789")
	page = bob.get("/ui/memories/" + m.ID)
	if page.status != http.StatusOK || !strings.Contains(page.body, "postgres 16") || !strings.Contains(page.body, "upgrade") {
		t.Fatalf("bob, a reader, does not see the team memory and its edit: %d", page.status)
	}
	for _, form := range forms {
		if strings.Contains(page.body, form) {
			t.Errorf("bob, a reader, is offered %s", form)
		}
	}
	eng := namespaceSection(bob.get("/ui/namespaces").body, "team://eng")
	if eng == "" || strings.Contains(eng, `action="/ui/grants"`) {
		t.Errorf("bob's namespaces page: team://eng section %q offers grants", eng)
	}
	if own := namespaceSection(bob.get("/ui/namespaces").body, "agent://bob"); !strings.Contains(own, `action="/ui/grants"`) {
		t.Errorf("bob is not offered grants on his own namespace")
	}
	if list := bob.get("/ui/memories"); strings.Contains(list.body, `id="save"`) && strings.Contains(list.body, "<option>team://eng</option>") {
		t.Errorf("bob is offered to save into team://eng")
	}
}

func TestGrantAndRevokeThroughTheNamespacesPage(t *testing.T) {
	f := newFixture(t, nil)
	memorytest.Create(t, f.svc, "alice", "team://eng")
	b := f.browser()
	b.signIn(ownerToken)
	form := url.Values{"namespace": {"team://eng"}, "principal": {"agent://carol"}, "permission": {"read", "write"}}
	if p := b.post("/ui/grants", form); p.status != http.StatusSeeOther {
		t.Fatalf("grant: %d %s", p.status, p.body)
	}
	carol := memorytest.Agent("carol").Principal
	if !f.svc.MayWrite(carol, "team://eng") {
		t.Fatal("the grant did not take")
	}
	page := b.get("/ui/namespaces")
	if !strings.Contains(page.body, "agent://carol") {
		t.Fatalf("carol's grant is not listed")
	}
	form.Del("permission")
	form.Set("permission", "write")
	if p := b.post("/ui/revocations", form); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", p.status, p.body)
	}
	if f.svc.MayWrite(carol, "team://eng") || !f.svc.MayRead(carol, "team://eng") {
		t.Fatal("the revocation did not take write, or took read too")
	}
	if p := b.post("/ui/grants", url.Values{"namespace": {"team://eng"}, "principal": {"not a principal"}, "permission": {"read"}}); p.status != http.StatusBadRequest {
		t.Fatalf("a bad principal: want 400, got %d", p.status)
	}
}

func TestRevokeACapsuleThroughTheGovernancePage(t *testing.T) {
	f := newFixture(t, nil)
	m := save(t, f.svc, "alice", memapi.SaveRequest{Type: "decision", Content: "acme renews in march", SubjectType: "customer", SubjectID: "acme"})
	cp, err := capsule.Of(f.svc).Create(context.Background(), memorytest.Agent("alice"), memapi.CapsuleRequest{
		SubjectType: "customer", SubjectID: "acme", Audience: []string{"agent://bob"}, IDs: []string{m.ID}})
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.signIn(ownerToken)
	page := b.get("/ui/governance")
	if !strings.Contains(page.body, fmt.Sprintf(`action="/ui/capsules/%s/revoke"`, cp.CapsuleID)) || !strings.Contains(page.body, "agent://bob") {
		t.Fatalf("the capsule and its revoke form are not on the page")
	}
	if p := b.post("/ui/capsules/"+cp.CapsuleID+"/revoke", nil); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", p.status, p.body)
	}
	got, err := capsule.Of(f.svc).Get(context.Background(), memorytest.Agent("alice"), cp.CapsuleID)
	if err != nil || got.Status != memapi.CapsuleRevoked {
		t.Fatalf("capsule after revoke: %+v %v", got, err)
	}
}

// namespaceSection is the part of the namespaces page about ns, or "".
func namespaceSection(body, ns string) string {
	_, rest, ok := strings.Cut(body, `data-namespace="`+ns+`"`)
	if !ok {
		return ""
	}
	sec, _, _ := strings.Cut(rest, "</section>")
	return sec
}

// An owner-token session may view the console as another local principal
// (the API's X-Mnemo-Session) and then sees what that principal sees; a
// principal-token session may not, nor may anyone view as a principal the
// node does not host.
func TestOwnerViewsAsALocalPrincipal(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Principals = func() []namespace.Address {
			return []namespace.Address{namespace.MustParse("agent://alice"), namespace.MustParse("agent://bob")}
		}
	})
	save(t, f.svc, "alice", memapi.SaveRequest{Type: "decision", Title: "alice private plan", Content: "x"})
	save(t, f.svc, "bob", memapi.SaveRequest{Type: "observation", Title: "bob private note", Content: "y"})
	owner := f.browser()
	owner.signIn(ownerToken)
	if p := owner.get("/ui/memories"); !strings.Contains(p.body, `id="view-as"`) || !strings.Contains(p.body, "alice private plan") {
		t.Fatal("the owner is not offered view-as, or does not see alice's memory")
	}
	if p := owner.post("/ui/view-as", url.Values{"principal": {"agent://mallory"}}); p.status != http.StatusBadRequest {
		t.Fatalf("view as a principal the node does not host: want 400, got %d", p.status)
	}
	if p := owner.post("/ui/view-as", url.Values{"principal": {"agent://bob"}}); p.status != http.StatusSeeOther {
		t.Fatalf("view as bob: %d %s", p.status, p.body)
	}
	p := owner.get("/ui/memories")
	if !strings.Contains(p.body, `<b id="principal">agent://bob</b>`) || !strings.Contains(p.body, "bob private note") || strings.Contains(p.body, "alice private plan") {
		t.Fatalf("viewing as bob shows:\n%s", p.body)
	}
	if p := owner.get("/ui/cluster"); !strings.Contains(p.body, `id="peers"`) {
		t.Fatal("viewing as bob, the owner session lost the owner-only status")
	}

	bob := f.browser()
	bob.signIn("bob-token-0123456789")
	if p := bob.get("/ui/memories"); strings.Contains(p.body, `id="view-as"`) {
		t.Fatal("a principal session is offered view-as")
	}
	if p := bob.post("/ui/view-as", url.Values{"principal": {"agent://alice"}}); p.status != http.StatusForbidden {
		t.Fatalf("bob views as alice: want 403, got %d", p.status)
	}
	if p := bob.get("/ui/memories"); strings.Contains(p.body, "alice private plan") {
		t.Fatal("bob sees alice's memory after asking to view as her")
	}
}
