package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/cluster"
)

// DefaultHTTPAddr is where a node listens unless told otherwise.
const DefaultHTTPAddr = "127.0.0.1:7070"

// Config configures a Node. Zero values mean the documented default.
type Config struct {
	// Dir is the data directory, created (mode 0700) if missing. Required;
	// DefaultDir gives $MNEMO_DATA or ~/.mnemo.
	Dir string
	// HTTPAddr is the listen address, host:port. Default DefaultHTTPAddr;
	// port 0 picks a free port (see Node.Addr).
	HTTPAddr string
	// Agent is the owner agent, "NAME" or "agent://NAME". Default
	// DefaultAgentName().
	Agent string
	// Logger receives lifecycle events and failed requests. Default discards.
	Logger *slog.Logger
	// MaxBodyBytes caps an API request body, in bytes. Default 2 MiB.
	MaxBodyBytes int64
	// MaxImportBytes caps an import body, in bytes. Default 64 MiB.
	MaxImportBytes int64
	// FallbackPort, when HTTPAddr's port is in use, listens on a free port
	// of the same host instead of failing. Default false.
	FallbackPort bool
	// ShutdownTimeout bounds how long Serve waits for running requests after
	// its context is done. Default 5s.
	ShutdownTimeout time.Duration
	// Now is the wall clock handed to the memory Service. Default time.Now.
	Now func() time.Time
	// MCPMaxSessions bounds the live MCP sessions on /mcp; opening one more
	// closes the least recently used. Default 256.
	MCPMaxSessions int
	// MCPMaxSessionsPerPrincipal bounds the live MCP sessions of one
	// principal, the same way. Default 16.
	MCPMaxSessionsPerPrincipal int

	// EmbeddingsURL, when set, turns hybrid search on with that
	// OpenAI-compatible endpoint (e.g. http://127.0.0.1:11434/v1),
	// overriding config.json's hybrid_search base_url; EmbeddingsModel
	// (required then, unless config.json names one) and EmbeddingsKeyEnv
	// (the variable holding a bearer key) override its model and
	// api_key_env. Default: as config.json says (off).
	EmbeddingsURL, EmbeddingsModel, EmbeddingsKeyEnv string

	// ClusterKey (base64 text of a 16, 24 or 32-byte key, as in a key file)
	// turns replication on; empty keeps the node alone. See replication.go.
	ClusterKey []byte
	// GossipAddr is the memberlist bind address. Default 127.0.0.1:0.
	GossipAddr string
	// QUICAddr is the QUIC listen address. Default 127.0.0.1:0.
	QUICAddr string
	// Join lists gossip addresses of members to join.
	Join []string
	// QueueMaxDeltas bounds each peer's queue of waiting deltas; on overflow
	// the pair falls back to digest sync. Default 10000.
	QueueMaxDeltas int
	// AntiEntropy is the interval between digest syncs of each namespace
	// with a random peer that may read it. Default 10s.
	AntiEntropy time.Duration
	// TreeThreshold, when 2 or more, sends the live deltas of namespaces
	// with that many holders or more over epidemic broadcast trees
	// (sync/replica, "Trees"). 0, the default, keeps direct sends: at the
	// sizes measured so far (100 simulated nodes, 20 real ones) the trees
	// cost more bytes and more latency than they save the writer.
	TreeThreshold int
	// BindingsOnDemandAt, when 2 or more, is the membership (this node
	// included) from which bindings travel only where they are used:
	// pulled for the deltas refused for want of them and from the members
	// advertising the readers of team and inbox namespaces held, instead
	// of flooded to every member (node/cluster's bindings_demand.go). 0,
	// the default, floods at any size: on demand costs more bytes under
	// loss and many writers, and fewer where writes are few beside the
	// members (README, "bindings on demand").
	BindingsOnDemandAt int
	// WrapTransport, when set, wraps the QUIC transport the node (self)
	// replicates over. Tests use it to put a hostile relay's send path in a
	// real node (node/cluster/clustertest); `mnemo node` never sets it.
	WrapTransport func(self acl.NodeID, tr cluster.Transport) cluster.Transport
}

// validate fills defaults and checks the rest; it returns the owner address.
func (c *Config) validate() (namespace.Address, error) {
	if c.Dir == "" {
		return namespace.Address{}, errors.New("node: Config.Dir is required")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return namespace.Address{}, fmt.Errorf("node: data directory %q: %w", c.Dir, err)
	}
	c.Dir = dir
	if c.TreeThreshold < 0 || c.TreeThreshold == 1 {
		return namespace.Address{}, fmt.Errorf("node: tree threshold %d: want 0 (direct sends) or 2 and more holders", c.TreeThreshold)
	}
	if c.BindingsOnDemandAt < 0 || c.BindingsOnDemandAt == 1 {
		return namespace.Address{}, fmt.Errorf("node: bindings on demand from %d members: want 0 (never) or 2 and more", c.BindingsOnDemandAt)
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.Agent == "" {
		c.Agent = DefaultAgentName()
	}
	owner, err := namespace.ParsePrincipal(c.Agent)
	if err != nil {
		return namespace.Address{}, fmt.Errorf("node: agent %q: %w", c.Agent, err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxBodyBytes < 0 || c.MaxImportBytes < 0 {
		return namespace.Address{}, errors.New("node: body limits must not be negative")
	}
	if c.MCPMaxSessions < 0 || c.MCPMaxSessionsPerPrincipal < 0 {
		return namespace.Address{}, errors.New("node: MCP session limits must not be negative")
	}
	if c.ShutdownTimeout < 0 {
		return namespace.Address{}, errors.New("node: ShutdownTimeout must not be negative")
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return owner, nil
}

// DefaultDir is $MNEMO_DATA, or ~/.mnemo.
func DefaultDir() (string, error) {
	if d := os.Getenv("MNEMO_DATA"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("node: no data directory: set MNEMO_DATA or --data (%w)", err)
	}
	return filepath.Join(home, ".mnemo"), nil
}

// DefaultAgentName derives an agent name from the user and host names
// ("alice-laptop"); "agent" when nothing usable remains.
func DefaultAgentName() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if s := namespace.SanitizeName(name + "-" + host); s != "" {
		return s
	}
	return "agent"
}
