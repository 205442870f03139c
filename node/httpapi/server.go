package httpapi

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"github.com/mnemohq/mnemo/node/metrics"
)

// Default body limits.
const (
	DefaultMaxBodyBytes   = 2 << 20  // 2 MiB
	DefaultMaxImportBytes = 64 << 20 // 64 MiB
)

// Config configures the API handler.
type Config struct {
	// Service answers every /v1 request. Required.
	Service *memory.Service
	// Token is the owner's bearer token. Required, at least 16 bytes.
	Token string
	// Logger receives failed requests (5xx). Default discards.
	Logger *slog.Logger
	// MaxBodyBytes caps a request body, in bytes. Default 2 MiB.
	MaxBodyBytes int64
	// MaxImportBytes caps the body of POST /v1/import, in bytes. Default 64 MiB.
	MaxImportBytes int64
	// Tokens authenticates principal-bound tokens and issues new ones
	// (POST /v1/tokens). Default nil: only the owner token is accepted and
	// POST /v1/tokens answers 501.
	Tokens Tokens
	// Sessions maps the X-Mnemo-Session header of owner-token requests to
	// a principal. Default nil: every owner-token request is the owner.
	Sessions *namespace.Resolver
	// OnPrincipal, if set, is told every principal a session key resolved
	// to (the node keeps the set of its local principals).
	OnPrincipal func(namespace.Address)
	// Cluster serves /v1/members, /v1/status, /v1/sync and the replication
	// metrics; nil on a node without replication.
	Cluster ClusterView
	// NodeID names this node in those answers.
	NodeID string
	// MCP bounds the sessions of /mcp; zero values are mcptools'
	// defaults (256 sessions, 16 per principal, closed after 30 idle
	// minutes). Its Logger defaults to Logger, its OnToolCall to Metrics.
	MCP mcptools.HTTPOptions
	// Metrics records every request's duration and serves GET /metrics
	// (metrics.go). Default: a registry of the handler's own.
	Metrics *metrics.Metrics
}

func (c *Config) validate() error {
	if c.Service == nil {
		return errors.New("httpapi: Config.Service is required")
	}
	if len(c.Token) < 16 {
		return errors.New("httpapi: Config.Token is required (at least 16 bytes)")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxBodyBytes < 0 || c.MaxImportBytes < 0 {
		return errors.New("httpapi: body limits must not be negative")
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxImportBytes == 0 {
		c.MaxImportBytes = DefaultMaxImportBytes
	}
	return nil
}

// api holds what every handler needs. Handlers return an error instead of
// writing one, so the status mapping lives in writeError alone.
type api struct {
	svc       *memory.Service
	capsules  *capsule.Capsules     // nil: the node has no capsule feature
	surgery   *surgery.Surgery      // nil: the node has no surgery feature
	dedup     *dedup.Dedup          // nil: the node has no dedup feature
	projViews *projview.Projections // nil: the node has no projection-view feature
	transfer  *transfer.Transfer    // nil: the node has no export and import feature
	tokenHash [sha256.Size]byte
	log       *slog.Logger
	maxBody   int64
	maxImport int64
	mux       *http.ServeMux

	tokens      Tokens
	sessions    *namespace.Resolver
	onPrincipal func(namespace.Address)

	cluster ClusterView
	nodeID  string

	mcpSessions *mcptools.HTTPHandler

	meter       *metrics.Metrics
	figureDescs *figureDescs

	// searchBufs holds idle buffers search answers are encoded into
	// (writeBuffered), so a response is sent with its length, in one
	// write, not chunked. A bounded channel rather than a sync.Pool: a
	// pool is emptied by collections, and under the node's soft memory
	// limit the collector runs most of the time, so each answer would
	// allocate its buffer afresh.
	searchBufs chan *bytes.Buffer
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// New returns the API handler.
func New(cfg Config) (http.Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &api{
		searchBufs: make(chan *bytes.Buffer, searchBufsKept),
		svc:        cfg.Service,
		capsules:   capsule.Of(cfg.Service),
		surgery:    surgery.Of(cfg.Service),
		dedup:      dedup.Of(cfg.Service),
		projViews:  projview.Of(cfg.Service),
		transfer:   transfer.Of(cfg.Service),
		tokenHash:  sha256.Sum256([]byte(cfg.Token)),
		log:        cfg.Logger,
		maxBody:    cfg.MaxBodyBytes,
		maxImport:  cfg.MaxImportBytes,
		mux:        http.NewServeMux(),

		tokens:      cfg.Tokens,
		sessions:    cfg.Sessions,
		onPrincipal: cfg.OnPrincipal,

		cluster: cfg.Cluster,
		nodeID:  cfg.NodeID,

		meter:       meterOrNew(cfg.Metrics),
		figureDescs: newFigureDescs(),
	}
	routes := []struct {
		method, path string
		h            handlerFunc
	}{
		{"POST", "/v1/memories", a.save},
		{"GET", "/v1/memories/{id}", a.get},
		{"PATCH", "/v1/memories/{id}", a.update},
		{"DELETE", "/v1/memories/{id}", a.delete},
		{"GET", "/v1/search", a.search},
		{"GET", "/v1/timeline", a.timeline},
		{"GET", "/v1/context", a.context},
		{"POST", "/v1/compact", a.compact},
		{"GET", "/v1/stats", a.stats},
		{"POST", "/v1/sessions", a.startSession},
		{"POST", "/v1/sessions/{id}/end", a.endSession},
		{"POST", "/v1/sessions/{id}/summary", a.sessionSummary},
		{"POST", "/v1/prompts", a.prompt},
		{"POST", "/v1/progress", a.progress},
	}
	routes = append(routes, a.accessRoutes()...)
	routes = append(routes, a.projectionRoutes()...)
	routes = append(routes, a.capsuleRoutes()...)  // capsule_handlers.go
	routes = append(routes, a.dedupRoutes()...)    // dedup_handlers.go
	routes = append(routes, a.transferRoutes()...) // transfer_handlers.go
	routes = append(routes, a.surgeryRoutes()...)
	allowed := map[string][]string{}
	routes = append(routes, a.clusterRoutes()...)
	for _, rt := range routes {
		a.mux.Handle(rt.method+" "+rt.path, a.authed(rt.h))
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// A pattern without a method catches the methods no route claims, so
	// 405 answers in the same JSON shape as every other error.
	for path, methods := range allowed {
		a.mux.Handle(path, a.authed(methodNotAllowed(methods)))
	}
	// MCP over streamable HTTP: the caller is fixed by the request that
	// opens the MCP session, through the same callerFor as every route.
	mcpOpts := cfg.MCP
	if mcpOpts.Logger == nil {
		mcpOpts.Logger = a.log
	}
	if mcpOpts.OnToolCall == nil {
		mcpOpts.OnToolCall = a.meter.ToolCall
	}
	sessions, err := mcptools.NewHTTPHandler(func(r *http.Request) (mcptools.Backend, string) {
		c, err := a.callerFor(r)
		if err != nil {
			return nil, ""
		}
		return mcpservice.New(a.svc, c), c.Principal.String()
	}, mcpOpts)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	a.mcpSessions = sessions
	mcpHandler := a.bindMCPSessions(sessions)
	a.mux.Handle("/mcp", a.authed(func(w http.ResponseWriter, r *http.Request) error {
		mcpHandler.ServeHTTP(w, r)
		return nil
	}))
	a.mux.Handle("GET /metrics", a.authed(a.metrics))
	a.mux.Handle("GET /debug/pprof/{profile}", a.authed(a.debugProfile)) // debug_handlers.go
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	a.mux.Handle("/healthz", a.wrap(methodNotAllowed([]string{"GET"})))
	a.mux.Handle("/", a.wrap(func(w http.ResponseWriter, r *http.Request) error {
		if isV1(r.URL.Path) && !a.authorized(r) {
			return errUnauthorized
		}
		return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)}
	}))
	return a, nil
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	a.serveTimed(w, r) // metrics.go
}

func isV1(path string) bool { return path == "/v1" || strings.HasPrefix(path, "/v1/") }

func methodNotAllowed(methods []string) handlerFunc {
	ms := append([]string(nil), methods...)
	if contains(ms, "GET") {
		ms = append(ms, "HEAD")
	}
	sort.Strings(ms)
	allow := strings.Join(ms, ", ")
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Allow", allow)
		return &apiError{http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// wrap turns a handlerFunc into an http.Handler that writes its error.
func (a *api) wrap(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			a.writeError(w, r, err)
		}
	})
}

// authed is wrap behind the bearer-token check.
func (a *api) authed(h handlerFunc) http.Handler {
	return a.wrap(func(w http.ResponseWriter, r *http.Request) error {
		if !a.authorized(r) {
			return errUnauthorized
		}
		return h(w, r)
	})
}

var errUnauthorized = &apiError{http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token (Authorization: Bearer <token from the node's data directory>)"}

// authorized compares the bearer token in constant time. Hashing first makes
// the comparison independent of the presented token's length too.
// A principal-bound token (Config.Tokens) is accepted as well.
func (a *api) authorized(r *http.Request) bool {
	tok, ok := bearerToken(r)
	if !ok {
		return false
	}
	if a.isOwnerToken(tok) {
		return true
	}
	_, ok = a.boundPrincipal(tok)
	return ok
}

func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

func (a *api) isOwnerToken(tok string) bool {
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], a.tokenHash[:]) == 1
}

// callerFor decides who a request acts for, here and only here (see
// resolveCaller in access.go): the owner token acts for the principal its
// X-Mnemo-Session header maps to (the owner without one); a
// principal-bound token acts only as its principal.
func (a *api) callerFor(r *http.Request) (memapi.Caller, error) {
	c, _, err := a.resolveCaller(r)
	return c, err
}

// limitBody caps r.Body at n bytes; reading past it fails with
// *http.MaxBytesError, which writeError maps to 413.
func limitBody(w http.ResponseWriter, r *http.Request, n int64) {
	r.Body = http.MaxBytesReader(w, r.Body, n)
}

// readAll reads a capped body.
func readAll(w http.ResponseWriter, r *http.Request, n int64) ([]byte, error) {
	limitBody(w, r, n)
	return io.ReadAll(r.Body)
}
