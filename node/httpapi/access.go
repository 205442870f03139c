package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
)

// SessionHeader carries the agent runtime's session key (an MCP session
// id, "agent:alice:main", …) on owner-token requests; the node's principal
// rules map it to the principal the request acts for.
const SessionHeader = "X-Mnemo-Session"

// Tokens is what the API needs of the node's principal-bound tokens.
// Both methods are called concurrently from request goroutines.
type Tokens interface {
	// Lookup returns the principal token is bound to; ok is false for a
	// token the node did not issue.
	Lookup(token string) (principal namespace.Address, ok bool)
	// Issue makes and records a new token bound to principal.
	Issue(principal namespace.Address) (token string, err error)
}

func (a *api) boundPrincipal(tok string) (namespace.Address, bool) {
	if a.tokens == nil {
		return namespace.Address{}, false
	}
	return a.tokens.Lookup(tok)
}

// resolveCaller is callerFor's body; owner reports whether the request
// carries the owner token. Decisions:
//
//   - Owner token: the principal is what the node's rules make of the
//     X-Mnemo-Session header; no header (or no matching rule) gives the
//     owner agent. The owner token stands for every local principal.
//   - Principal-bound token: the request acts as that principal and the
//     header is ignored. A session key is a label, not a credential, so it
//     can neither widen nor narrow what a bound token may do; ignoring it
//     (rather than refusing a header that maps elsewhere) lets an agent
//     runtime send its session key everywhere without knowing the rules.
func (a *api) resolveCaller(r *http.Request) (c memapi.Caller, owner bool, err error) {
	tok, ok := bearerToken(r)
	if !ok {
		return memapi.Caller{}, false, errUnauthorized
	}
	if a.isOwnerToken(tok) {
		p := a.svc.Owner()
		if a.sessions != nil {
			if key := r.Header.Get(SessionHeader); key != "" {
				p = a.sessions.Resolve(key)
			}
		}
		if a.onPrincipal != nil && p != a.svc.Owner() {
			a.onPrincipal(p)
		}
		return memapi.Caller{Principal: p}, true, nil
	}
	if p, ok := a.boundPrincipal(tok); ok {
		return memapi.Caller{Principal: p}, false, nil
	}
	return memapi.Caller{}, false, errUnauthorized
}

// issueToken is POST /v1/tokens {"principal"}: owner token only.
func (a *api) issueToken(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Principal string `json:"principal"`
	}
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	if err := a.requireOwner(r, "issue tokens"); err != nil {
		return err
	}
	if a.tokens == nil {
		return &apiError{http.StatusNotImplemented, "not_implemented", "this node does not issue principal-bound tokens"}
	}
	if req.Principal == "" {
		return badRequest("principal is required (agent://NAME)")
	}
	p, err := namespace.ParsePrincipal(req.Principal)
	if err != nil {
		return badRequest("principal: %v", err)
	}
	tok, err := a.tokens.Issue(p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, TokenAnswer{Principal: p.String(), Token: tok})
	return nil
}

// requireOwner refuses (acl.ErrDenied, 403) a request that does not carry
// the owner token, naming what only the owner may do. The owner token with
// an X-Mnemo-Session header still passes: it is the operator's credential
// whatever principal the header selects.
func (a *api) requireOwner(r *http.Request, what string) error {
	_, owner, err := a.resolveCaller(r)
	if err != nil {
		return err
	}
	if !owner {
		return fmt.Errorf("%w: only the owner token (the node's data directory) may %s", acl.ErrDenied, what)
	}
	return nil
}

// TokenAnswer is the answer to POST /v1/tokens. The token is shown once;
// the node keeps only its hash.
type TokenAnswer struct {
	Principal string `json:"principal"`
	Token     string `json:"token"`
}

// bindMCPSessions ties each MCP session to the principal that opened it:
// the SDK refuses (403) a request on an existing session whose caller, as
// callerFor resolves it, is another principal. Without it a request with
// a narrower token could ride a session opened with a wider one, since
// the session's backend is fixed when it opens. Tokens do not expire, so
// the TokenInfo carries no expiration.
func (a *api) bindMCPSessions(h http.Handler) http.Handler {
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		c, err := a.callerFor(r)
		if err != nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: c.Principal.String()}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}
