package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/sync/gossip"
)

func runNode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("node", "[flags]",
		"Runs the sidecar node until SIGINT or SIGTERM. On first start it writes an owner\ntoken to DIR/token; every /v1 request needs \"Authorization: Bearer <token>\".\nWhen ready it prints one line to stdout:\n  mnemo node ready agent=agent://NAME http=http://127.0.0.1:7070 data=DIR node=ID\n(with gossip=ADDR quic=ADDR when replicating). Logs go to stderr.", stdout, stderr)
	var cfg node.Config
	fs.StringVar(&cfg.Dir, "data", "", "data `DIR` (default $MNEMO_DATA or ~/.mnemo)")
	fs.StringVar(&cfg.HTTPAddr, "http", node.DefaultHTTPAddr, "HTTP listen `ADDR` (port 0 picks a free port; non-loopback addresses are allowed with a warning)")
	fs.StringVar(&cfg.Agent, "agent", "", "owner agent `NAME` (default from the user and host names: "+node.DefaultAgentName()+")")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 0, "request body limit in `BYTES` (default 2 MiB)")
	fs.Int64Var(&cfg.MaxImportBytes, "max-import-bytes", 0, "import body limit in `BYTES` (default 64 MiB)")
	fs.IntVar(&cfg.MCPMaxSessions, "mcp-sessions", 0, "bound on live MCP sessions on /mcp, `N` (default 256; one more closes the least recently used)")
	fs.IntVar(&cfg.MCPMaxSessionsPerPrincipal, "mcp-sessions-per-principal", 0, "bound on one principal's live MCP sessions, `N` (default 16)")
	fs.StringVar(&cfg.EmbeddingsURL, "embeddings-url", "", "turn hybrid search on with the OpenAI-compatible embeddings endpoint at `URL` (e.g. http://127.0.0.1:11434/v1 for Ollama; overrides config.json's hybrid_search)")
	fs.StringVar(&cfg.EmbeddingsModel, "embeddings-model", "", "embedding `MODEL` for hybrid search (e.g. nomic-embed-text)")
	fs.StringVar(&cfg.EmbeddingsKeyEnv, "embeddings-key-env", "", "environment `VAR` holding the embeddings endpoint's bearer key")
	verbose := fs.Bool("verbose", false, "log debug detail")
	keyFile := fs.String("cluster-key", "", "replicate with the cluster whose key is in `FILE` (base64 of 16/24/32 bytes; mnemo cluster-key makes one)")
	fs.StringVar(&cfg.GossipAddr, "gossip", "", "gossip (memberlist) bind `ADDR` (default 127.0.0.1:0; needs --cluster-key)")
	fs.StringVar(&cfg.QUICAddr, "quic", "", "QUIC listen `ADDR` (default 127.0.0.1:0; needs --cluster-key)")
	fs.IntVar(&cfg.QueueMaxDeltas, "queue-deltas", 0, "bound on each peer's queue of waiting deltas, `N` (default 10000; overflow falls back to digest sync)")
	fs.DurationVar(&cfg.AntiEntropy, "anti-entropy", 0, "interval between digest syncs of each namespace with a random peer that may read it, `DURATION` (default 10s)")
	fs.IntVar(&cfg.BindingsOnDemandAt, "bindings-on-demand", 0, "from a membership of `N` nodes (this one included), send agent bindings only where they are used instead of to every member (0, the default: always to every member)")
	fs.IntVar(&cfg.TreeThreshold, "tree-threshold", 0, "send live deltas of namespaces with `N` holders or more over epidemic broadcast trees (0, the default: direct sends to every holder)")
	join := fs.String("join", "", "gossip `ADDR[,ADDR]` of members to join (needs --cluster-key)")
	memLimit := fs.String("memory-limit", "", "soft limit on the Go runtime's memory, `SIZE` in bytes or with KiB/MiB/GiB; \"off\" for none (default "+defaultMemoryLimit+", or $GOMEMLIMIT when set). The garbage collector works harder near it; it is never a hard cap: while the live heap is above four fifths of it, the limit follows the heap at a quarter above (not when set by $GOMEMLIMIT)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	limit, err := memoryLimit(*memLimit)
	if err != nil {
		return usageError(stderr, fs, "--memory-limit: %v", err)
	}
	if cfg.Dir == "" {
		d, err := node.DefaultDir()
		if err != nil {
			return failed(stderr, fs, err)
		}
		cfg.Dir = d
	}
	if *keyFile != "" {
		b, err := node.ReadClusterKey(*keyFile) // refuses a file group or others may read
		if err != nil {
			return failed(stderr, fs, err)
		}
		cfg.ClusterKey = b
	}
	if *join != "" {
		for _, a := range strings.Split(*join, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cfg.Join = append(cfg.Join, a)
			}
		}
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
	// Set once the index is rebuilt: under the limit the rebuild of 100k
	// memories takes 2-3 times longer.
	defer applyMemoryLimit(ctx, limit)()
	ready := fmt.Sprintf("mnemo node ready agent=%s http=%s data=%s node=%s", n.Service().Owner(), n.Addr(), n.Dir(), n.NodeID())
	if cl := n.Cluster(); cl != nil {
		ready += fmt.Sprintf(" gossip=%s quic=%s", cl.GossipAddr(), cl.QUICAddr())
	}
	fmt.Fprintln(stdout, ready)
	if err := n.Serve(ctx); err != nil {
		return failed(stderr, fs, err)
	}
	return exitOK
}

// readyRE matches the line runNode prints once it serves: the owner agent,
// the HTTP URL, the data directory, the node id and, when replicating, the
// real gossip and QUIC addresses (ports the OS picked for :0). The tests and
// the soak read a node's addresses from it.
var readyRE = regexp.MustCompile(`^mnemo node ready agent=(\S+) http=(\S+) data=(\S+) node=(\S+)( gossip=(\S+) quic=(\S+))?$`)

func runClusterKey(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("cluster-key", "[FILE]", "Writes a new random 32-byte cluster key (base64) for --cluster-key to FILE,\ncreated with mode 0600 (an existing FILE is not replaced); without FILE, prints it.\nEvery node of one cluster uses the same key; keep it secret.", stdout, stderr)
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) > 1 {
		return usageError(stderr, fs, "takes at most one FILE, got %q", pos)
	}
	key := gossip.GenerateClusterKey()
	if len(pos) == 0 {
		fmt.Fprintln(stdout, key)
		return exitOK
	}
	if err := node.WriteClusterKey(pos[0], key); err != nil {
		return failed(stderr, fs, err)
	}
	fmt.Fprintf(stdout, "wrote a new cluster key to %s (mode 0600)\n", pos[0])
	return exitOK
}

// defaultMemoryLimit is the soft memory limit of `mnemo node` when neither
// --memory-limit nor GOMEMLIMIT is given. A node holding 100k memories has
// ~45 MiB of live heap (the index ~31, Badger's memtable arena 10.4); with
// GOGC=100 alone the heap may grow to twice that between collections. The
// limit makes the collector run earlier instead, once the process nears it,
// which keeps the node under 100 MiB resident while it searches (README,
// "Search at 100k over HTTP"; the figures are in memlimit.go).
const defaultMemoryLimit = "80MiB"

// memoryLimit is the soft memory limit to set once the node is open, from
// the flag value: "" means the default unless GOMEMLIMIT is set (the
// runtime applied it at start; 0 is returned), "off" or "0" means none
// (math.MaxInt64, the runtime's "no limit").
func memoryLimit(v string) (int64, error) { return memoryLimitOr(v, defaultMemoryLimit) }

// memoryLimitOr is memoryLimit with def for the default.
func memoryLimitOr(v, def string) (int64, error) {
	if v == "" {
		if os.Getenv("GOMEMLIMIT") != "" {
			return 0, nil
		}
		v = def
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		n = math.MaxInt64
	}
	return n, nil
}

// parseSize reads "off", a byte count, or a number with a KiB, MiB or GiB
// suffix.
func parseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	if strings.EqualFold(s, "off") {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size (bytes, or a number with KiB, MiB or GiB, or \"off\")", v)
	}
	return n * mult, nil
}
