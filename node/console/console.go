package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
)

//go:embed assets
var assets embed.FS

// Defaults of Config.
const (
	DefaultMaxSessions     = 64
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultSessionLifetime = 12 * time.Hour
)

// CookieName is the session cookie.
const CookieName = "mnemo_console"

// Tokens is what the console needs of the node's principal-bound tokens.
// Lookup is called concurrently from request goroutines.
type Tokens interface {
	Lookup(token string) (principal namespace.Address, ok bool)
}

// Cluster is what the cluster page reads; *cluster.Cluster implements it.
// Both methods are called concurrently from request goroutines.
type Cluster interface {
	Members() []cluster.Member
	Status(digests bool) cluster.Status
}

var _ Cluster = (*cluster.Cluster)(nil)

// Config configures the console.
type Config struct {
	// Service is the node's memory service. Required.
	Service *memory.Service
	// OwnerToken is the node's owner token. Required, at least 16 bytes.
	OwnerToken string
	// Tokens authenticates principal-bound tokens. Default nil: only the
	// owner token signs in.
	Tokens Tokens
	// Cluster feeds the cluster page. Default nil: a node without
	// replication, shown alone.
	Cluster Cluster
	// NodeID names this node on the cluster page.
	NodeID string
	// Principals lists the node's local principals, which an owner-token
	// session may view the console as (the API's X-Mnemo-Session). Called
	// concurrently. Default: the owner agent only.
	Principals func() []namespace.Address
	// MaxSessions bounds the signed-in sessions; one more signs the least
	// recently used out. Default 64.
	MaxSessions int
	// IdleTimeout ends a session unused this long. Default 30 minutes.
	IdleTimeout time.Duration
	// SessionLifetime ends a session this long after sign-in, used or not.
	// Default 12 hours.
	SessionLifetime time.Duration
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger receives failed requests. Default discards.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Service == nil {
		return errors.New("console: Config.Service is required")
	}
	if len(c.OwnerToken) < 16 {
		return errors.New("console: Config.OwnerToken is required (at least 16 bytes)")
	}
	if c.MaxSessions < 0 || c.IdleTimeout < 0 || c.SessionLifetime < 0 {
		return errors.New("console: session bounds must not be negative")
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.SessionLifetime == 0 {
		c.SessionLifetime = DefaultSessionLifetime
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Principals == nil {
		owner := c.Service.Owner()
		c.Principals = func() []namespace.Address { return []namespace.Address{owner} }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Console is the web console's handler, to be mounted at /ui/.
type Console struct {
	cfg       Config
	svc       *memory.Service
	surgery   *surgery.Surgery      // nil: no surgery feature
	capsules  *capsule.Capsules     // nil: no capsule feature
	projViews *projview.Projections // nil: no projection-view feature
	ownerHash [sha256.Size]byte
	sessions  *sessionStore
	broker    *broker
	pages     map[string]*template.Template
	static    http.Handler
	mux       *http.ServeMux
	origin    *http.CrossOriginProtection
	closing   chan struct{} // closed by Close: event streams end
	closeOnce sync.Once
}

// New returns the console. It registers a change listener on the service
// for live updates.
func New(cfg Config) (*Console, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &Console{
		cfg:       cfg,
		svc:       cfg.Service,
		surgery:   surgery.Of(cfg.Service),
		capsules:  capsule.Of(cfg.Service),
		projViews: projview.Of(cfg.Service),
		ownerHash: sha256.Sum256([]byte(cfg.OwnerToken)),
		sessions:  newSessionStore(cfg.MaxSessions, cfg.IdleTimeout, cfg.SessionLifetime),
		broker:    &broker{},
		pages:     pages,
		static:    http.StripPrefix("/ui/static/", http.FileServerFS(static)),
		mux:       http.NewServeMux(),
		origin:    http.NewCrossOriginProtection(),
		closing:   make(chan struct{}),
	}
	c.svc.OnChanged(c.broker.changed)
	c.routes()
	return c, nil
}

// securityHeaders go on every answer: no script but the console's own
// file, no inline code or style, no framing, no referrer, no caching.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if !hostAllowed(r) {
		http.Error(w, fmt.Sprintf("Forbidden: a request to a loopback listener must name a loopback host, not %q", r.Host), http.StatusForbidden)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// hostAllowed is the DNS rebinding guard (the one the MCP endpoint has):
// a request that arrived on a loopback address must carry a loopback Host
// header, so a page of another site whose name was made to resolve to
// 127.0.0.1 cannot reach the console as same-origin.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// resolveToken resolves a token as the API does: the owner token acts as the
// node's owner, a principal-bound token as its principal.
func (c *Console) resolveToken(tok string) (p namespace.Address, owner bool, ok bool) {
	got := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(got[:], c.ownerHash[:]) == 1 {
		return c.svc.Owner(), true, true
	}
	if c.cfg.Tokens != nil {
		if p, ok := c.cfg.Tokens.Lookup(tok); ok {
			return p, false, true
		}
	}
	return namespace.Address{}, false, false
}

// sessionOf returns the request's live session, or nil.
func (c *Console) sessionOf(r *http.Request) *session {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil
	}
	return c.sessions.get(ck.Value, c.cfg.Now())
}

func (ss *session) caller() memapi.Caller { return memapi.Caller{Principal: ss.principal} }

// Close ends every open event stream, so that a server shutting down
// need not wait for them (http.Server.RegisterOnShutdown(c.Close)): an
// event stream is a request that never finishes by itself. Pages keep
// working; a stream opened after Close ends at once.
func (c *Console) Close() { c.closeOnce.Do(func() { close(c.closing) }) }

// Sessions is the number of signed-in sessions.
func (c *Console) Sessions() int { return c.sessions.len() }
