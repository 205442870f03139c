package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/console"
	"github.com/mnemohq/mnemo/node/httpapi"
	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/semantic"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"github.com/mnemohq/mnemo/node/metrics"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// Node is a running sidecar: a memory Service, its HTTP API on a bound
// listener, and the token and node.json files of its data directory.
type Node struct {
	cfg     Config
	svc     *memory.Service
	token   string
	ln      net.Listener
	srv     *http.Server
	url     string
	log     *slog.Logger
	baseCtx context.Context // request contexts; cancelled once shutdown gives up waiting
	cancel  context.CancelFunc

	access *access          // identity, settings, principals, tokens: access.go
	cl     *cluster.Cluster // replication, when a cluster key is set: replication.go
	meter  *metrics.Metrics // GET /metrics: the service, the API and the cluster record into it
	pages  *filePages       // hands Badger's mapped pages back past a budget: pages.go

	serving   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Open opens the data directory (taking its lock), makes sure a token
// exists, binds the HTTP listener and writes node.json. If the directory is
// held by another process the error wraps memory.ErrLocked and names that
// process.
func Open(cfg Config) (*Node, error) {
	owner, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if err := cfg.validateReplication(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("node: data directory: %w", err)
	}
	if err := securePerms(cfg.Dir, cfg.Logger, slog.LevelWarn, "data directory: removed group and other access"); err != nil {
		return nil, err
	}
	ac, err := prepareAccess(cfg.Dir, owner)
	if err != nil {
		return nil, err
	}
	feats, err := features(ac, cfg)
	if err != nil {
		return nil, fmt.Errorf("node: %s: %w", SettingsFile, err)
	}
	kv, err := badgerkv.Open(cfg.Dir, badgerkv.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("node: open %s: %w", cfg.Dir, err)
	}
	meter := metrics.New()
	// Set once memory is open; a feature may search from its Opened hook,
	// before: pages.Load is then nil, which note takes as nothing to do.
	var pages atomic.Pointer[filePages]
	timed := func(op string, took time.Duration, err error) {
		meter.MemoryOperation(op, took, err)
		if op == memory.OpSearch {
			pages.Load().note()
		}
	}
	svc, err := memory.Open(ac.memoryConfig(memory.Config{KV: kv, Agent: owner, Now: cfg.Now, Logger: cfg.Logger, Features: feats,
		Timed: timed}))
	if err != nil { // memory closed kv
		return nil, fmt.Errorf("node: open %s: %w", cfg.Dir, err)
	}
	pages.Store(newFilePages(FilePagesBudget, svc.Store().ReleaseFilePages))
	n := &Node{cfg: cfg, svc: svc, log: cfg.Logger, access: ac, meter: meter, pages: pages.Load()}
	if err := n.start(); err != nil {
		if n.ln != nil {
			n.ln.Close()
		}
		n.pages.close()
		return nil, errors.Join(err, svc.Close())
	}
	n.tightenQuietly() // the files the store created as it opened
	return n, nil
}

// tightenQuietly removes group and other access from files the node's own
// libraries created since the last pass (perms.go). Failing is logged: the
// node keeps serving, as a failed pass changes nothing it relies on.
func (n *Node) tightenQuietly() {
	if err := securePerms(n.cfg.Dir, n.log, slog.LevelDebug, "tightened a file the store created"); err != nil {
		n.log.Warn("data directory permissions", "err", err)
	}
}

// start does everything after the lock is held.
func (n *Node) start() error {
	tok, created, err := loadOrCreateToken(n.cfg.Dir)
	if err != nil {
		return err
	}
	if created {
		n.log.Info("wrote a new owner token", "file", filepath.Join(n.cfg.Dir, TokenFile))
	}
	n.token = tok
	if err := n.access.start(n); err != nil {
		return err
	}
	if err := n.startReplication(); err != nil {
		return err
	}
	var clusterView httpapi.ClusterView
	if n.cl != nil {
		clusterView = n.cl
	}
	h, err := httpapi.New(httpapi.Config{
		Cluster:        clusterView,
		NodeID:         string(n.NodeID()),
		Tokens:         issuer{n.access},
		Sessions:       n.access.resolver,
		OnPrincipal:    n.access.addPrincipal,
		Service:        n.svc,
		Token:          tok,
		Logger:         n.log,
		MaxBodyBytes:   n.cfg.MaxBodyBytes,
		MaxImportBytes: n.cfg.MaxImportBytes,
		MCP:            mcptools.HTTPOptions{MaxSessions: n.cfg.MCPMaxSessions, MaxSessionsPerPrincipal: n.cfg.MCPMaxSessionsPerPrincipal},
		Metrics:        n.meter,
	})
	if err != nil {
		return err
	}
	var consoleCluster console.Cluster
	if n.cl != nil {
		consoleCluster = n.cl
	}
	ui, err := console.New(console.Config{
		Service: n.svc, OwnerToken: tok, Tokens: issuer{n.access}, Cluster: consoleCluster,
		NodeID: string(n.NodeID()), Principals: n.Principals, Logger: n.log,
	})
	if err != nil {
		return err
	}
	n.ln, err = n.listen()
	if err != nil {
		return err
	}
	n.url = "http://" + dialable(n.cfg.HTTPAddr, n.ln.Addr().(*net.TCPAddr))
	if !n.ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		n.log.Warn("the HTTP API listens beyond loopback; the bearer token is its only protection",
			"addr", n.ln.Addr().String())
	}
	n.baseCtx, n.cancel = context.WithCancel(context.Background())
	go n.housekeep(n.baseCtx)
	n.srv = &http.Server{
		Handler:           withConsole(h, ui),
		ReadHeaderTimeout: 10e9,
		IdleTimeout:       120e9,
		BaseContext:       func(net.Listener) context.Context { return n.baseCtx },
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}
	n.srv.RegisterOnShutdown(ui.Close) // open event streams would hold Shutdown for ShutdownTimeout
	info := Info{PID: os.Getpid(), HTTP: n.url, Agent: n.svc.Owner().String()}
	if err := writeInfo(n.cfg.Dir, info); err != nil {
		n.cancel()
		return fmt.Errorf("node: write %s: %w", InfoFile, err)
	}
	return nil
}

// withConsole serves the web console at /ui/ beside the API: the console
// has its own sign-in (a session cookie, not a bearer token), so it is not
// one of the API's routes.
func withConsole(api, ui http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui)
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusSeeOther))
	mux.Handle("/", api)
	return mux
}

func (n *Node) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err == nil || !n.cfg.FallbackPort || !errors.Is(err, syscall.EADDRINUSE) {
		if err != nil {
			return nil, fmt.Errorf("node: listen on %s: %w", n.cfg.HTTPAddr, err)
		}
		return ln, nil
	}
	host, _, _ := net.SplitHostPort(n.cfg.HTTPAddr)
	ln, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return nil, fmt.Errorf("node: listen on %s: %w (fallback to a free port: %v)", n.cfg.HTTPAddr, err, err2)
	}
	n.log.Info("HTTP port busy; using a free port", "wanted", n.cfg.HTTPAddr, "addr", ln.Addr().String())
	return ln, nil
}

// dialable is the address a local client should dial: an unspecified
// listen host becomes loopback, ::1 only when "::" was asked for (Go
// listens dual-stack on [::] for "0.0.0.0" and "" too).
func dialable(want string, a *net.TCPAddr) string {
	ip := a.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if host, _, _ := net.SplitHostPort(want); host != "" {
			if h := net.ParseIP(host); h != nil && h.To4() == nil {
				ip = net.IPv6loopback
			}
		}
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(a.Port))
}

// Addr is the base URL of the HTTP API, with the real port, e.g.
// "http://127.0.0.1:7070". For an unspecified listen host it names loopback.
func (n *Node) Addr() string { return n.url }

// Service is the node's memory Service, for in-process use (MCP).
func (n *Node) Service() *memory.Service { return n.svc }

// Metrics is the node's registry, served by GET /metrics, for what else
// in the process records into it (the stdio MCP server's tool calls).
func (n *Node) Metrics() *metrics.Metrics { return n.meter }

// Token is the owner's bearer token.
func (n *Node) Token() string { return n.token }

// Dir is the absolute data directory.
func (n *Node) Dir() string { return n.cfg.Dir }

// Serve answers HTTP requests until ctx is done, then shuts down: it stops
// accepting, waits up to ShutdownTimeout for running requests, cancels the
// rest, and closes the Node. It returns nil after a clean shutdown. Serve
// may be called once.
func (n *Node) Serve(ctx context.Context) error {
	if !n.serving.CompareAndSwap(false, true) {
		return errors.New("node: Serve called twice")
	}
	errc := make(chan error, 1)
	go func() { errc <- n.srv.Serve(n.ln) }()
	n.log.Info("serving", "http", n.url, "agent", n.svc.Owner().String(), "data", n.cfg.Dir)
	select {
	case err := <-errc:
		// Serve failed on its own (or Close was called concurrently).
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		return errors.Join(err, n.Close())
	case <-ctx.Done():
	}
	n.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	var err error
	if serr := n.srv.Shutdown(sctx); serr != nil {
		n.log.Warn("requests still running at the shutdown deadline; cancelling them", "err", serr)
		n.cancel()
		n.srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return errors.Join(err, n.Close())
}

// Close stops the HTTP server at once, removes node.json and closes the
// Service (releasing the directory lock). It is safe to call more than once
// and after Serve returned; later calls return the first call's result.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.cancel()
		_ = n.srv.Close()
		_ = n.ln.Close() // Serve may never have taken ownership of it
		var errs []error
		if err := os.Remove(filepath.Join(n.cfg.Dir, InfoFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("node: remove %s: %w", InfoFile, err))
		}
		if n.cl != nil {
			if err := n.cl.Close(); err != nil {
				errs = append(errs, fmt.Errorf("node: leave the cluster: %w", err))
			}
		}
		n.pages.close() // no hand-back runs on a closed store
		if err := n.svc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: close memory: %w", err))
		}
		n.tightenQuietly()
		n.closeErr = errors.Join(errs...)
		n.log.Info("closed")
	})
	return n.closeErr
}

// features are the feature packages every node attaches to its memory
// service (memory.Config.Features), in the order the core consults them:
// surgery first (its view and audit records are what copies, capsules and
// projections see), then capsules, projection views, duplicate detection,
// export and import (which registers no hook, so its place is free), and
// hybrid search (which only observes memories and ranks them). The
// settings file's were checked when it was read (loadSettings), and dedup
// built; hybrid search is built here, with the flags' overrides.
func features(ac *access, cfg Config) ([]memory.Feature, error) {
	surg, err := surgery.New(ac.settings.Approvals)
	if err != nil {
		return nil, err
	}
	hs := ac.settings.HybridSearch
	if cfg.EmbeddingsURL != "" {
		hs.Enabled, hs.BaseURL = true, cfg.EmbeddingsURL
	}
	if cfg.EmbeddingsModel != "" {
		hs.Model = cfg.EmbeddingsModel
	}
	if cfg.EmbeddingsKeyEnv != "" {
		hs.APIKeyEnv = cfg.EmbeddingsKeyEnv
	}
	sem, err := semantic.New(hs)
	if err != nil {
		return nil, err
	}
	ac.settings.HybridSearch = sem.Config() // as in effect
	return []memory.Feature{surg, capsule.New(), projview.New(), ac.dedup, transfer.New(), sem}, nil
}
