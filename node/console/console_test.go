package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

const ownerToken = "owner-token-0123456789abcdef"

// tokenMap is a Tokens of fixed principal-bound tokens.
type tokenMap map[string]string

func (m tokenMap) Lookup(tok string) (namespace.Address, bool) {
	p, ok := m[tok]
	if !ok {
		return namespace.Address{}, false
	}
	return namespace.MustParse(p), true
}

type fixture struct {
	t   testing.TB
	svc *memory.Service
	clk *memorytest.Clock
	c   *Console
	srv *httptest.Server
}

// newFixture serves a console over real loopback for a service owned by
// alice, on which bob and carol are local principals with tokens.
func newFixture(t testing.TB, mutate func(*Config)) *fixture {
	t.Helper()
	surg, err := surgery.New(surgery.Approvals{"*": {memapi.OpAmend}})
	if err != nil {
		t.Fatal(err)
	}
	svc, clk := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal,
		Features: []memory.Feature{surg, capsule.New(), projview.New()}})
	cfg := Config{Service: svc, OwnerToken: ownerToken, NodeID: "node-a", Now: clk.Now,
		Tokens: tokenMap{"bob-token-0123456789": "agent://bob", "carol-token-012345678": "agent://carol"}}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &fixture{t: t, svc: svc, clk: clk, c: c, srv: srv}
}

// browser is a client with a cookie jar that sends the Origin a browser
// would on a same-origin form post.
type browser struct {
	f    *fixture
	hc   *http.Client
	csrf string
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{f: f, hc: hc}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) page {
	b.f.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindStringSubmatch(string(body)); m != nil {
		b.csrf = m[1]
	}
	return page{resp.StatusCode, resp.Header, string(body)}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) get(path string) page {
	b.f.t.Helper()
	req, _ := http.NewRequest("GET", b.f.srv.URL+path, nil)
	return b.do(req)
}

// post sends a same-origin form with the session's CSRF token unless
// form sets one.
func (b *browser) post(path string, form url.Values) page {
	b.f.t.Helper()
	return b.postFrom(b.f.srv.URL, path, form)
}

func (b *browser) postFrom(origin, path string, form url.Values) page {
	b.f.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest("POST", b.f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return b.do(req)
}

func (b *browser) signIn(token string) {
	b.f.t.Helper()
	p := b.post("/ui/signin", url.Values{"token": {token}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/memories" {
		b.f.t.Fatalf("sign-in: %d %s", p.status, p.body)
	}
	if got := b.get("/ui/memories"); got.status != http.StatusOK {
		b.f.t.Fatalf("memories after sign-in: %d", got.status)
	}
}

func save(t testing.TB, svc *memory.Service, who string, req memapi.SaveRequest) memapi.Memory {
	t.Helper()
	res, err := svc.Save(context.Background(), memorytest.Agent(who), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Memory
}

func TestSignInSetsAStrictHttpOnlySessionCookieAndNoTokenInURLs(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	if p := b.get("/ui/memories"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/signin" {
		t.Fatalf("signed out: want a redirect to sign-in, got %d %q", p.status, p.header.Get("Location"))
	}
	p := b.post("/ui/signin", url.Values{"token": {ownerToken}})
	ck := p.header.Get("Set-Cookie")
	for _, want := range []string{CookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/ui/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("Set-Cookie %q lacks %s", ck, want)
		}
	}
	if strings.Contains(ck, ownerToken) || strings.Contains(p.header.Get("Location"), ownerToken) {
		t.Fatal("the token leaked into the cookie or the redirect")
	}
	page := b.get("/ui/memories")
	if !strings.Contains(page.body, "agent://alice") || !strings.Contains(page.body, "owner token") {
		t.Fatalf("the page does not say who is signed in:\n%s", page.body)
	}
	if strings.Contains(page.body, ownerToken) {
		t.Fatal("the page shows the token")
	}
}

func TestWrongTokenDoesNotSignIn(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	p := b.post("/ui/signin", url.Values{"token": {"not-a-token-of-this-node"}})
	if p.status != http.StatusUnauthorized || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("want 401 and no cookie, got %d %q", p.status, p.header.Get("Set-Cookie"))
	}
	if f.c.Sessions() != 0 {
		t.Fatalf("%d sessions after a failed sign-in", f.c.Sessions())
	}
}

func TestEveryAnswerCarriesAStrictContentSecurityPolicy(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	for _, path := range []string{"/ui/signin", "/ui/static/console.js", "/ui/nowhere"} {
		p := b.get(path)
		csp := p.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline code: %q", path, csp)
		}
	}
}

// The pages carry no inline script or style and no handler attributes, so
// the policy above holds them working.
func TestPagesHaveNoInlineCode(t *testing.T) {
	f := newFixture(t, nil)
	m := save(t, f.svc, "alice", memapi.SaveRequest{Type: "decision", Content: "use postgres"})
	b := f.browser()
	b.signIn(ownerToken)
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\son[a-z]+=|style="|javascript:`)
	for _, path := range []string{"/ui/memories", "/ui/memories/" + m.ID, "/ui/governance", "/ui/namespaces", "/ui/cluster", "/ui/projections", "/ui/signin"} {
		p := b.get(path)
		if p.status != http.StatusOK && p.status != http.StatusSeeOther {
			t.Errorf("%s: %d", path, p.status)
		}
		if loc := inline.FindString(p.body); loc != "" {
			t.Errorf("%s has inline code %q", path, loc)
		}
	}
}

func TestStateChangesNeedTheSessionCSRFTokenAndThisOrigin(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn(ownerToken)
	form := func(extra ...string) url.Values {
		v := url.Values{"type": {"observation"}, "content": {"forged write"}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return v
	}
	other := "x" + b.csrf[1:] // a token one character off this session's
	if other == b.csrf {
		other = "y" + b.csrf[1:]
	}
	cases := []struct {
		name   string
		origin string
		form   url.Values
		want   int
	}{
		{"no token", b.f.srv.URL, form("csrf", ""), http.StatusForbidden},
		{"another session's token", b.f.srv.URL, form("csrf", other), http.StatusForbidden},
		{"another origin", "https://evil.example", form(), http.StatusForbidden},
	}
	for _, tc := range cases {
		p := b.postFrom(tc.origin, "/ui/memories", tc.form)
		if p.status != tc.want {
			t.Errorf("%s: want %d, got %d %s", tc.name, tc.want, p.status, p.body)
		}
	}
	if ms, _, _ := f.svc.Memories(context.Background(), memorytest.Agent("alice"), memapi.Filter{}, 10); len(ms) != 0 {
		t.Fatalf("a refused post saved %d memories", len(ms))
	}
	// A browser's cross-site fetch says so in Sec-Fetch-Site even without Origin.
	req, _ := http.NewRequest("POST", f.srv.URL+"/ui/memories", strings.NewReader(url.Values{"csrf": {b.csrf}, "type": {"observation"}, "content": {"x"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := b.do(req); p.status != http.StatusForbidden {
		t.Fatalf("cross-site fetch: want 403, got %d", p.status)
	}
	if p := b.post("/ui/memories", form()); p.status != http.StatusSeeOther {
		t.Fatalf("a same-origin post with the token: %d %s", p.status, p.body)
	}
}

func TestSignInFromAnotherSiteIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	p := b.postFrom("https://evil.example", "/ui/signin", url.Values{"token": {ownerToken}})
	if p.status != http.StatusForbidden || f.c.Sessions() != 0 {
		t.Fatalf("want 403 and no session, got %d with %d sessions", p.status, f.c.Sessions())
	}
}

func TestLoopbackListenerRefusesAForeignHostHeader(t *testing.T) {
	f := newFixture(t, nil)
	for host, want := range map[string]int{"evil.example": http.StatusForbidden, "evil.example:80": http.StatusForbidden,
		"localhost": http.StatusOK, "127.0.0.1:9": http.StatusOK, "[::1]:80": http.StatusOK} {
		req, _ := http.NewRequest("GET", f.srv.URL+"/ui/signin", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: want %d, got %d", host, want, resp.StatusCode)
		}
	}
}

func TestSessionsAreBoundedAndExpire(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxSessions = 2; c.IdleTimeout = time.Minute; c.SessionLifetime = time.Hour })
	first, second, third := f.browser(), f.browser(), f.browser()
	first.signIn(ownerToken)
	second.signIn(ownerToken)
	third.signIn(ownerToken)
	if n := f.c.Sessions(); n != 2 {
		t.Fatalf("%d sessions, want the bound 2", n)
	}
	if p := first.get("/ui/memories"); p.status != http.StatusSeeOther {
		t.Fatalf("the least recently used session still works: %d", p.status)
	}
	f.clk.Advance(2 * time.Minute)
	if p := third.get("/ui/memories"); p.status != http.StatusSeeOther {
		t.Fatalf("an idle session still works after its idle timeout: %d", p.status)
	}
	// Used every half minute, a session still ends at its lifetime.
	b := f.browser()
	b.signIn(ownerToken)
	for i := 0; i < 121; i++ {
		f.clk.Advance(30 * time.Second)
		if p := b.get("/ui/memories"); p.status != http.StatusOK {
			if i < 119 {
				t.Fatalf("session ended early, after %d half-minutes", i+1)
			}
			return
		}
	}
	t.Fatal("a session outlived its lifetime")
}

func TestSignOutEndsTheSession(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn(ownerToken)
	if p := b.post("/ui/signout", nil); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	if p := b.get("/ui/memories"); p.status != http.StatusSeeOther || f.c.Sessions() != 0 {
		t.Fatalf("still signed in after sign-out: %d, %d sessions", p.status, f.c.Sessions())
	}
}
