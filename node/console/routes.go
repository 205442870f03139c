package console

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
)

// maxFormBytes caps a form post; a memory's content is the largest field.
const maxFormBytes = 1 << 20

type pageFunc func(w http.ResponseWriter, r *http.Request, ss *session) error

func (c *Console) routes() {
	m := c.mux
	m.Handle("GET /ui/static/", c.static)
	m.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/memories", http.StatusSeeOther)
	})
	m.HandleFunc("GET /ui/signin", c.signInPage)
	m.HandleFunc("POST /ui/signin", c.signIn)
	m.Handle("POST /ui/signout", c.action(c.signOut))
	m.Handle("POST /ui/view-as", c.action(c.viewAs))
	m.Handle("GET /ui/events", c.page(c.events))

	m.Handle("GET /ui/memories", c.page(c.memoriesPage))
	m.Handle("GET /ui/memories/{id}", c.page(c.memoryPage))
	m.Handle("POST /ui/memories", c.action(c.saveMemory))
	m.Handle("POST /ui/memories/{id}/update", c.action(c.updateMemory))
	m.Handle("POST /ui/memories/{id}/delete", c.action(c.deleteMemory))
	m.Handle("POST /ui/memories/{id}/edits", c.action(c.proposeEdit))

	m.Handle("GET /ui/governance", c.page(c.governancePage))
	m.Handle("POST /ui/edits/{id}/approve", c.action(c.decideEdit(true)))
	m.Handle("POST /ui/edits/{id}/reject", c.action(c.decideEdit(false)))
	m.Handle("POST /ui/capsules/{id}/revoke", c.action(c.revokeCapsule))

	m.Handle("GET /ui/namespaces", c.page(c.namespacesPage))
	m.Handle("POST /ui/grants", c.action(c.grant))
	m.Handle("POST /ui/revocations", c.action(c.revoke))

	m.Handle("GET /ui/cluster", c.page(c.clusterPage))
	m.Handle("GET /ui/projections", c.page(c.projectionsPage))
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		c.renderError(w, r, nil, &httpError{http.StatusNotFound, "There is no console page at " + r.URL.Path + "."})
	})
}

// page serves a GET for a signed-in session; without one it sends the
// browser to the sign-in page.
func (c *Console) page(h pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss := c.sessionOf(r)
		if ss == nil {
			http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
			return
		}
		if err := h(w, r, ss); err != nil {
			c.renderError(w, r, ss, err)
		}
	})
}

// action serves a state-changing POST: it must come from this origin
// (Sec-Fetch-Site / Origin against Host), from a signed-in session, and
// carry that session's CSRF token in the form. Anything else is refused
// before the form is read further and changes nothing.
func (c *Console) action(h pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := c.origin.Check(r); err != nil {
			c.renderError(w, r, nil, &httpError{http.StatusForbidden, "Refused: this request came from another site (" + err.Error() + ")."})
			return
		}
		ss := c.sessionOf(r)
		if ss == nil {
			c.renderError(w, r, nil, &httpError{http.StatusUnauthorized, "Your session has ended: sign in again."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			c.renderError(w, r, ss, &httpError{http.StatusBadRequest, "The form could not be read: " + err.Error()})
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(ss.csrf)) != 1 {
			c.renderError(w, r, ss, &httpError{http.StatusForbidden, "Refused: the form's session token is missing or stale. Reload the page and try again."})
			return
		}
		if err := h(w, r, ss); err != nil {
			c.renderError(w, r, ss, err)
		}
	})
}

// httpError is an error with the status and text the page shows.
type httpError struct {
	status int
	text   string
}

func (e *httpError) Error() string { return e.text }

// statusOf maps the memory service's errors as the API does.
func statusOf(err error) (int, string) {
	var he *httpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status, he.text
	case errors.Is(err, acl.ErrDenied):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, memapi.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, memapi.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, memapi.ErrConflict):
		return http.StatusConflict, err.Error()
	case errors.Is(err, memapi.ErrTooLarge), errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, err.Error()
	}
	return http.StatusInternalServerError, "internal error"
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, ss *session, err error) {
	status, text := statusOf(err)
	if status == http.StatusInternalServerError {
		c.cfg.Logger.Error("console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	c.render(w, status, "error", ss, "Error", map[string]any{"Status": status, "Text": text})
}

// seeOther answers an action with a redirect to path and the query q.
func seeOther(w http.ResponseWriter, r *http.Request, path string, q url.Values) error {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
	return nil
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if c.sessionOf(r) != nil {
		http.Redirect(w, r, "/ui/memories", http.StatusSeeOther)
		return
	}
	c.render(w, http.StatusOK, "signin", nil, "Sign in", nil)
}

// signIn is POST /ui/signin {token}: the token goes in the body, never
// in a URL, and is not kept; the session cookie is HttpOnly and
// SameSite=Strict, scoped to /ui/.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if err := c.origin.Check(r); err != nil {
		c.renderError(w, r, nil, &httpError{http.StatusForbidden, "Refused: this request came from another site (" + err.Error() + ")."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, nil, &httpError{http.StatusBadRequest, "The form could not be read: " + err.Error()})
		return
	}
	p, owner, ok := c.resolveToken(r.PostForm.Get("token"))
	if !ok {
		c.render(w, http.StatusUnauthorized, "signin", nil, "Sign in",
			map[string]any{"Failed": true})
		return
	}
	if old := c.sessionOf(r); old != nil {
		c.sessions.remove(old.id)
	}
	ss := c.sessions.create(p, owner, c.cfg.Now())
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: ss.id, Path: "/ui/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		MaxAge: int(c.cfg.SessionLifetime.Seconds()),
	})
	http.Redirect(w, r, "/ui/memories", http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, ss *session) error {
	c.sessions.remove(ss.id)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/ui/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
	return nil
}

func notFeature(what string) error {
	return &httpError{http.StatusNotImplemented, fmt.Sprintf("This node does not run the %s feature.", what)}
}

// viewAs is POST /ui/view-as {principal}: an owner-token session acts as
// another local principal from then on, as the API's owner token does
// with an X-Mnemo-Session header; it stays an owner session (the owner
// token is the operator's credential whatever principal it acts as). A
// principal-token session may not: its token acts only as its principal.
func (c *Console) viewAs(w http.ResponseWriter, r *http.Request, ss *session) error {
	if !ss.owner {
		return fmt.Errorf("%w: only an owner-token session may view the console as another principal", acl.ErrDenied)
	}
	p, err := namespace.ParsePrincipal(strings.TrimSpace(r.PostForm.Get("principal")))
	if err != nil {
		return &httpError{http.StatusBadRequest, "principal: " + err.Error()}
	}
	if !slices.Contains(c.cfg.Principals(), p) {
		return &httpError{http.StatusBadRequest, p.String() + " is not a principal of this node"}
	}
	c.sessions.setPrincipal(ss.id, p)
	return seeOther(w, r, "/ui/memories", nil)
}
