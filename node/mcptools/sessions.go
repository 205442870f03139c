package mcptools

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Default bounds on the node's streamable-HTTP MCP sessions.
const (
	DefaultMaxSessions             = 256
	DefaultMaxSessionsPerPrincipal = 16
	// SessionIdleTimeout closes a session that made no request for this
	// long, so abandoned sessions do not pile up in the node.
	SessionIdleTimeout = 30 * time.Minute
)

// HTTPOptions configures NewHTTPHandler. Zero values mean the defaults.
type HTTPOptions struct {
	// MaxSessions bounds the live MCP sessions of all principals together.
	// Default DefaultMaxSessions (256).
	MaxSessions int
	// MaxSessionsPerPrincipal bounds the live sessions one principal holds.
	// Default DefaultMaxSessionsPerPrincipal (16).
	MaxSessionsPerPrincipal int
	// IdleTimeout closes a session without requests for this long. Default
	// SessionIdleTimeout (30 minutes).
	IdleTimeout time.Duration
	// Logger receives session evictions (Debug: a flood must not become a
	// log flood; HTTPHandler.Evicted counts them) and the SDK's
	// diagnostics. Default discards.
	Logger *slog.Logger
	// OnToolCall is every session's Options.OnToolCall. Default nil.
	OnToolCall func(tool string, took time.Duration, failed bool)
}

func (o *HTTPOptions) validate() error {
	if o.MaxSessions < 0 || o.MaxSessionsPerPrincipal < 0 || o.IdleTimeout < 0 {
		return errors.New("mcptools: session limits and the idle timeout must not be negative")
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerPrincipal == 0 {
		o.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	o.MaxSessionsPerPrincipal = min(o.MaxSessionsPerPrincipal, o.MaxSessions)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = SessionIdleTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// HTTPHandler serves MCP over streamable HTTP with a bounded number of
// sessions. Build it with NewHTTPHandler.
type HTTPHandler struct {
	h    *mcp.StreamableHTTPHandler
	pool *sessionPool
}

// NewHTTPHandler serves MCP over streamable HTTP (mount it at /mcp, behind
// the node's token check). getBackend is asked, on a request that opens a
// session, for the backend of the authenticated caller and the principal
// it acts as; that backend serves the whole session. Returning a nil
// backend refuses the request with 400. Requests arriving on a loopback
// listener must carry a loopback Host header (the SDK's DNS rebinding
// guard).
//
// Sessions are bounded: a principal opening one more than
// MaxSessionsPerPrincipal closes its least recently used session, and one
// more than MaxSessions in total closes the least recently used of all. A
// client of a closed session gets 404 on its next request and may
// initialize again (the MCP spec's answer to an expired session). The SDK
// keeps sessions in a map it does not bound; the pool here tracks them
// through a receiving middleware and closes them with ServerSession.Close,
// which removes them from that map.
func NewHTTPHandler(getBackend func(*http.Request) (Backend, string), opts HTTPOptions) (*HTTPHandler, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	pool := &sessionPool{maxTotal: opts.MaxSessions, maxPer: opts.MaxSessionsPerPrincipal, log: opts.Logger,
		byID: map[*mcp.ServerSession]*list.Element{}, per: map[string]int{}}
	cache := mcp.NewSchemaCache()
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		b, principal := getBackend(r)
		if b == nil {
			return nil
		}
		s := NewServer(b, Options{SchemaCache: cache, OnToolCall: opts.OnToolCall})
		s.AddReceivingMiddleware(pool.track(principal))
		return s
	}, &mcp.StreamableHTTPOptions{SessionTimeout: opts.IdleTimeout, Logger: opts.Logger})
	return &HTTPHandler{h: h, pool: pool}, nil
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Sessions is the number of live sessions.
func (h *HTTPHandler) Sessions() int { return h.pool.len() }

// Evicted is the number of sessions closed to make room for a new one.
func (h *HTTPHandler) Evicted() uint64 { return h.pool.evicted.Load() }

// sessionPool is the set of live sessions, most recently used first.
type sessionPool struct {
	maxTotal, maxPer int
	log              *slog.Logger
	evicted          atomic.Uint64

	mu   sync.Mutex
	lru  list.List // of *pooled; front = most recently used
	byID map[*mcp.ServerSession]*list.Element
	per  map[string]int // principal → live sessions
}

type pooled struct {
	ss        *mcp.ServerSession
	principal string
}

// track is the receiving middleware of a session's server: every message
// marks the session used; the first admits it, evicting as the bounds say.
//
// Evicted sessions are closed before the admitting request answers, so a
// client that got its initialize answer knows the bound holds (and the SDK
// has dropped them). ServerSession.Close waits for the evicted session's
// requests in flight, which only delays this answer: a session only ever
// closes older ones, so no two requests wait on each other.
func (p *sessionPool) track(principal string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ss, ok := req.GetSession().(*mcp.ServerSession)
			if !ok {
				return next(ctx, method, req)
			}
			evicted := p.touch(ss, principal)
			res, err := next(ctx, method, req)
			for _, v := range evicted {
				p.log.Debug("mcp: session limit reached; closed the least recently used session",
					"session", v.ss.ID(), "principal", v.principal, "per_principal", p.maxPer, "total", p.maxTotal)
				_ = v.ss.Close()
			}
			return res, err
		}
	}
}

// touch marks ss used, admitting it if new; it returns the sessions
// removed to make room, for the caller to close.
func (p *sessionPool) touch(ss *mcp.ServerSession, principal string) []*pooled {
	p.mu.Lock()
	if e, ok := p.byID[ss]; ok {
		p.lru.MoveToFront(e)
		p.mu.Unlock()
		return nil
	}
	var evict []*pooled
	if p.per[principal] >= p.maxPer {
		for e := p.lru.Back(); e != nil; e = e.Prev() {
			if v := e.Value.(*pooled); v.principal == principal {
				evict = append(evict, p.removeLocked(e))
				break
			}
		}
	}
	if p.lru.Len() >= p.maxTotal {
		evict = append(evict, p.removeLocked(p.lru.Back()))
	}
	p.byID[ss] = p.lru.PushFront(&pooled{ss, principal})
	p.per[principal]++
	p.evicted.Add(uint64(len(evict)))
	p.mu.Unlock()

	// Forget the session whatever closes it (idle timeout, DELETE, the
	// client going away); an evicted one is forgotten already.
	go func() {
		_ = ss.Wait()
		p.forget(ss)
	}()
	return evict
}

func (p *sessionPool) removeLocked(e *list.Element) *pooled {
	v := p.lru.Remove(e).(*pooled)
	delete(p.byID, v.ss)
	if p.per[v.principal]--; p.per[v.principal] == 0 {
		delete(p.per, v.principal)
	}
	return v
}

func (p *sessionPool) forget(ss *mcp.ServerSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.byID[ss]; ok {
		p.removeLocked(e)
	}
}

func (p *sessionPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}
