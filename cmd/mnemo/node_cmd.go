package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mnemohq/mnemo/node"
)

func runNode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("node", "[flags]",
		"Runs the sidecar node until SIGINT or SIGTERM. On first start it writes an owner\ntoken to DIR/token; every /v1 request needs \"Authorization: Bearer <token>\".\nWhen ready it prints one line to stdout:\n  mnemo node ready agent=agent://NAME http=http://127.0.0.1:7070 data=DIR\nLogs go to stderr.", stdout, stderr)
	var cfg node.Config
	fs.StringVar(&cfg.Dir, "data", "", "data `DIR` (default $MNEMO_DATA or ~/.mnemo)")
	fs.StringVar(&cfg.HTTPAddr, "http", node.DefaultHTTPAddr, "HTTP listen `ADDR` (port 0 picks a free port; non-loopback addresses are allowed with a warning)")
	fs.StringVar(&cfg.Agent, "agent", "", "owner agent `NAME` (default from the user and host names: "+node.DefaultAgentName()+")")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 0, "request body limit in `BYTES` (default 2 MiB)")
	fs.Int64Var(&cfg.MaxImportBytes, "max-import-bytes", 0, "import body limit in `BYTES` (default 64 MiB)")
	verbose := fs.Bool("verbose", false, "log debug detail")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	if cfg.Dir == "" {
		d, err := node.DefaultDir()
		if err != nil {
			return failed(stderr, fs, err)
		}
		cfg.Dir = d
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	n, err := node.Open(cfg)
	if err != nil {
		return failed(stderr, fs, err)
	}
	fmt.Fprintf(stdout, "mnemo node ready agent=%s http=%s data=%s\n", n.Service().Owner(), n.Addr(), n.Dir())
	if err := n.Serve(ctx); err != nil {
		return failed(stderr, fs, err)
	}
	return exitOK
}
