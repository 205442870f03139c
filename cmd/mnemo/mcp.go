package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/mcpservice"
	"github.com/mnemohq/mnemo/node/mcptools"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/metrics"
)

const mcpUsage = `Usage: mnemo mcp [--data DIR] [--agent NAME] [--node URL] [--http ADDR]

Serves mnemo's memory tools to an MCP client (Claude Code, Codex, Cursor, …)
over stdin/stdout. Logs go to stderr.

By default it runs the node in this process on the data directory, with the
HTTP API on --http (falling back to a free loopback port when that one is
taken) so other agents can attach. If another process already holds the
directory, it attaches to that node instead (its URL from DIR/node.json, the
token from DIR/token), and takes the directory over if that node goes away.

Flags:
  --data DIR    data directory; default $MNEMO_DATA or ~/.mnemo
  --agent NAME  owner agent of a node started here; default user-host.
                An attached process acts as the running node's owner.
  --node URL    attach to this node instead (token: $MNEMO_TOKEN, else DIR/token)
  --http ADDR   listen address of a node started here; default 127.0.0.1:7070
`

// attachWait bounds how long mnemo mcp waits for the node holding the
// directory to publish node.json and answer, or for its lock to be freed.
const attachWait = 15 * time.Second

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	data := fs.String("data", "", "")
	agent := fs.String("agent", "", "")
	nodeURL := fs.String("node", "", "")
	httpAddr := fs.String("http", node.DefaultHTTPAddr, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mcpUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "mnemo mcp: %v\n%s", err, mcpUsage)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mnemo mcp: unexpected argument %q\n%s", fs.Arg(0), mcpUsage)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("cmd", "mcp")
	dir := *data
	if dir == "" {
		d, err := node.DefaultDir()
		if err != nil {
			fmt.Fprintf(stderr, "mnemo mcp: %v\n", err)
			return exitError
		}
		dir = d
	}

	l := &link{
		cfg:     node.Config{Dir: dir, Agent: *agent, HTTPAddr: *httpAddr, FallbackPort: true, Logger: log},
		nodeURL: *nodeURL,
		agent:   *agent,
		log:     log,
	}
	if err := l.connect(ctx); err != nil {
		fmt.Fprintf(stderr, "mnemo mcp: %v\n", err)
		return exitError
	}
	defer func() {
		if err := l.close(); err != nil {
			log.Error("closing the node", "err", err)
		}
	}()

	// The SDK narrates every session at Info; only its warnings matter here.
	sdkLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("cmd", "mcp", "component", "mcp-sdk")
	srv := mcptools.NewServer(l, mcptools.Options{Version: version, Logger: sdkLog, OnToolCall: l.toolCall})
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err := srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	if err != nil && ctx.Err() == nil {
		log.Error("MCP session ended", "err", err)
		return exitError
	}
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// link is the Backend the tools use. It is an in-process node when this
// process holds the data directory, or a client of the node that does.
// When an attached node stops answering, the next call looks again: it
// takes the directory over, or follows the node.json of whoever did.
type link struct {
	cfg     node.Config
	nodeURL string // --node: only ever talk to this URL
	agent   string
	log     *slog.Logger

	// served is the metrics of the node this process runs, once it does:
	// the stdio tool calls count there, as /mcp's do.
	served atomic.Pointer[metrics.Metrics]

	mu      sync.Mutex
	b       mcptools.Backend
	n       *node.Node
	stop    context.CancelFunc
	stopped chan error // Serve's result
}

var _ mcptools.Backend = (*link)(nil)

// connect makes the first backend.
func (l *link) connect(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := l.dial(ctx)
	if err != nil {
		return err
	}
	l.b = b
	return nil
}

// dial opens the directory or attaches to its holder, retrying for up to
// attachWait while the holder starts up or shuts down. l.mu is held.
func (l *link) dial(ctx context.Context) (mcptools.Backend, error) {
	if l.nodeURL != "" {
		return l.attach(ctx, l.nodeURL)
	}
	deadline := time.Now().Add(attachWait)
	for {
		n, err := node.Open(l.cfg)
		if err == nil {
			return l.serve(n), nil
		}
		if !errors.Is(err, memory.ErrLocked) {
			return nil, err
		}
		var aerr error
		info, ierr := node.ReadInfo(l.cfg.Dir)
		if ierr == nil {
			var b mcptools.Backend
			if b, aerr = l.attach(ctx, info.HTTP); aerr == nil {
				if l.agent != "" && !strings.HasSuffix(info.Agent, "://"+l.agent) && info.Agent != l.agent {
					l.log.Warn("attached to a node of another agent; --agent is ignored, calls act as the node's owner",
						"node_agent", info.Agent, "agent", l.agent)
				}
				return b, nil
			}
		} else {
			aerr = ierr
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w; and attaching to the node holding it failed: %v", err, aerr)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serve runs n in this process and returns its in-process backend.
func (l *link) serve(n *node.Node) mcptools.Backend {
	sctx, stop := context.WithCancel(context.Background())
	l.n, l.stop, l.stopped = n, stop, make(chan error, 1)
	l.served.Store(n.Metrics())
	go func() { l.stopped <- n.Serve(sctx) }()
	l.log.Info("running the node in this process", "http", n.Addr(), "agent", n.Service().Owner().String(), "data", n.Dir())
	return mcpservice.New(n.Service(), memapi.Caller{Principal: n.Service().Owner()})
}

// toolCall counts a tool call in the metrics of the node this process
// runs (mcptools.Options.OnToolCall). Through a node attached to, the
// calls are that node's HTTP requests, counted there by route.
func (l *link) toolCall(tool string, took time.Duration, failed bool) {
	if m := l.served.Load(); m != nil {
		m.ToolCall(tool, took, failed)
	}
}

// attach checks that the node at url answers an authenticated call.
func (l *link) attach(ctx context.Context, url string) (mcptools.Backend, error) {
	tok := os.Getenv("MNEMO_TOKEN")
	if tok == "" {
		var err error
		if tok, err = node.ReadToken(l.cfg.Dir); err != nil {
			return nil, err
		}
	}
	cl, err := client.New(url, tok)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cl.Stats(cctx, ""); err != nil {
		return nil, fmt.Errorf("node at %s: %w", url, err)
	}
	l.log.Info("attached to a running node", "http", url, "data", l.cfg.Dir)
	return mcptools.ClientBackend(cl), nil
}

// current is the backend to use now.
func (l *link) current() mcptools.Backend {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b
}

// redial replaces failed with a fresh backend, unless another call did so
// already.
func (l *link) redial(ctx context.Context, failed mcptools.Backend) (mcptools.Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b != failed {
		return l.b, nil
	}
	l.log.Warn("the node stopped answering; looking for it again")
	b, err := l.dial(ctx)
	if err != nil {
		return nil, err
	}
	l.b = b
	return b, nil
}

// close stops the in-process node, if any, and waits for it.
func (l *link) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		return nil
	}
	l.stop()
	return <-l.stopped
}

// retry runs f on the current backend and, if the node could not be
// reached at all, once more on a redialled one. A request that never got
// an answer may still have been applied, so a retried save, edit or
// capsule can rarely be recorded twice (a second edit or capsule of the
// same content, both in the audit log); every other operation is
// idempotent or fails cleanly.
func retry[T any](ctx context.Context, l *link, f func(mcptools.Backend) (T, error)) (T, error) {
	b := l.current()
	v, err := f(b)
	if err == nil || !errors.Is(err, client.ErrUnreachable) {
		return v, err
	}
	nb, rerr := l.redial(ctx, b)
	if rerr != nil {
		return v, fmt.Errorf("%w (and reconnecting failed: %v)", err, rerr)
	}
	return f(nb)
}
