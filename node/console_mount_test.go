package node

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/console"
)

// The node serves the console at /ui/ beside the API, signs in with its
// owner token and with the principal-bound tokens it issued, and the API
// keeps answering as before.
func TestNodeServesTheConsole(t *testing.T) {
	cfg, _ := testConfig(t, t.TempDir())
	n := mustOpen(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := waitHealthy(t, n.Addr()); err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := noFollow.Get(n.Addr() + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = noFollow.Get(n.Addr() + "/ui/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("/ui/signin: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	resp, err = noFollow.Get(n.Addr() + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the API without a token: %d", resp.StatusCode)
	}

	bobToken, err := issuer{n.access}.Issue(namespace.MustParse("agent://bob"))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{n.Token(): "agent://alice", bobToken: "agent://bob"} {
		req, _ := http.NewRequest("POST", n.Addr()+"/ui/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", n.Addr())
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == console.CookieName {
				session = c
			}
		}
		if resp.StatusCode != http.StatusSeeOther || session == nil {
			t.Fatalf("sign-in as %s: %d, cookie %v", want, resp.StatusCode, session)
		}
		req, _ = http.NewRequest("GET", n.Addr()+"/ui/memories", nil)
		req.AddCookie(session)
		resp, err = noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = io.Copy(&body, resp.Body)
		resp.Body.Close()
		if !strings.Contains(body.String(), `<b id="principal">`+want+`</b>`) {
			t.Fatalf("signed in as %s, the page says:\n%s", want, body.String())
		}
	}
}

// An open console page holds an event stream, a request that never ends
// by itself; shutting the node down ends it instead of waiting out
// ShutdownTimeout (an hour here: the test would time out).
func TestShutdownEndsConsoleEventStreams(t *testing.T) {
	cfg, _ := testConfig(t, t.TempDir())
	cfg.ShutdownTimeout = time.Hour
	n := mustOpen(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()
	if err := waitHealthy(t, n.Addr()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", n.Addr()+"/ui/signin", strings.NewReader(url.Values{"token": {n.Token()}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("GET", n.Addr()+"/ui/events", nil)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	stream, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if line, _ := bufio.NewReader(stream.Body).ReadString('\n'); !strings.HasPrefix(line, ":") {
		t.Fatalf("event stream's first line %q", line)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
