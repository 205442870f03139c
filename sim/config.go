package sim

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/sync/replica"
)

// Config describes one simulated run. Zero fields take the defaults noted.
// Every random choice is drawn from Seed.
type Config struct {
	// Nodes in the cluster. Default 5.
	Nodes int
	// Ops is the number of workload operations (memory edits, retracts,
	// grants, revocations, forged writes). Default 200.
	Ops int
	// Seed drives every random choice of the run.
	Seed uint64
	// Loss is the probability that a message is dropped. Default 0.
	Loss float64
	// Dup is the probability that a message is delivered twice. Default 0.
	Dup float64
	// Reorder is the probability that a message gets an extra delay of up
	// to 10x the link latency, overtaking later ones. Default 0.
	Reorder float64
	// Partitions, Crashes, Stalls and Churn are the numbers of random
	// partition/heal pairs, crash/restart pairs, stalled-subscriber episodes
	// and leave/rejoin pairs in the fault schedule. Default 0.
	Partitions, Crashes, Stalls, Churn int
	// Joins is the number of nodes that start outside the membership and
	// join during the workload. Default 0.
	Joins int
	// SkewedNodes is the number of nodes (the first ones) whose wall clock
	// is off by a duration drawn from [-Skew, +Skew]; MaxSkew is the
	// forward skew every node tolerates on incoming deltas (the memory
	// service's bound; default 5s, so that skews beyond it happen within a
	// run). A delta from further ahead is refused and comes again later.
	SkewedNodes   int
	Skew, MaxSkew time.Duration
	// Teams and Projects are the numbers of team:// and project://
	// namespaces. Default 3 and 2.
	Teams, Projects int
	// Span is the virtual time over which operations and faults are spread.
	// Default 30s + 5ms per operation.
	Span time.Duration
	// LatencyMin and LatencyMax bound a link's base one-way latency (drawn
	// per link); each message adds exponential jitter of mean
	// (LatencyMax-LatencyMin)/4. Defaults 2ms and 40ms.
	LatencyMin, LatencyMax time.Duration
	// TickInterval between Engine.Tick calls on each node. Default 250ms.
	TickInterval time.Duration
	// QuietLimit bounds the virtual time allowed to converge once the last
	// fault is healed. Default 5m.
	QuietLimit time.Duration
	// Engine is the engine configuration; Self, Replica and Seed are set per
	// node. Defaults: the engine's (Window 4, AckTimeout 10s,
	// AntiEntropyInterval 10s) except QueueMaxDeltas 64, so that stalled
	// subscribers overflow their queues within a run.
	Engine replica.Config
	// BindingsOnDemandAt is each node's cluster.Config.BindingsOnDemandAt:
	// the membership from which bindings travel only where they are used.
	// Default (0) never, as on a node.
	BindingsOnDemandAt int
	// Track is the number of updates whose spread is recorded for the plot
	// and the rounds figure. Default 24.
	Track int
	// NoSetRemoves keeps element removes out of the workload (tags are only
	// added): a narrower workload, for comparing runs.
	NoSetRemoves bool
	// Trace, when set, gets a line per operation and fault and the nodes'
	// warnings (refused deltas and frames); messages go only into the
	// trace hash.
	Trace io.Writer
	// Scenario, when set, replaces the random fault schedule (and sets the
	// fields it names).
	Scenario *Scenario
	// Workers is how many goroutines run the nodes' events of a window
	// at once (window.go): 1 runs them all on the caller's goroutine;
	// 0 takes runtime.GOMAXPROCS. The trace and the report, wall
	// figures aside, are the same whatever it is, so a replay command
	// does not name it. Sweep runs each seed with 1 unless told
	// otherwise: its seeds already run at once.
	Workers int

	measureState bool  // count what state-based sync of the same workload would ship
	hooks        hooks // test-only fault injection into the checker's inputs
}

// hooks break the run on purpose, so tests can show each invariant's
// checker reports a violation. Each does what a bug would, from outside
// the node's code: the checkers must not depend on the node to catch it.
type hooks struct {
	leak           bool // a node sends a namespace's content to a node never granted it
	leakOnTick     bool // the same, from node 0's first tick after 1 s: inside a window, on a worker
	bypassWrite    bool // forged writes are also written straight into their target's store
	dropAcked      bool // the first save is acknowledged with a dot nobody has
	lostRetract    bool // a memory is reported retracted that was not
	queueBound     int  // check queues against this bound instead of the configured one
	tamper         bool // after quiet, one node saves a memory nobody else sees
	plantBug       bool // every node's loop skips the write check (cluster.Config.SkipWriteCheck)
	capsuleFlipped bool // the checker is told a live capsule was revoked, or a revoked one is live
	auditShrank    bool // the checker is told a node once showed more audit entries than it does
	relayOnly      bool // every attack on a namespace with a tree is a hostile relay (trees.go)
	bypassRelay    bool // a hostile relay's widened contexts are also written into their receivers' stores
	lyingSync      bool // a store's sync cut by the power reports success (a disk that lies about flushes)
}

func (c *Config) withDefaults() {
	if c.Scenario != nil {
		c.Scenario.apply(c)
	}
	if c.Nodes <= 0 {
		c.Nodes = 5
	}
	if c.Ops <= 0 {
		c.Ops = 200
	}
	if c.Teams <= 0 && c.Projects <= 0 {
		c.Teams, c.Projects = 3, 2
	}
	if c.Span <= 0 {
		c.Span = 30*time.Second + time.Duration(c.Ops)*5*time.Millisecond
	}
	if c.LatencyMin <= 0 {
		c.LatencyMin = 2 * time.Millisecond
	}
	if c.LatencyMax <= c.LatencyMin {
		c.LatencyMax = c.LatencyMin + 38*time.Millisecond
	}
	if c.TickInterval <= 0 {
		c.TickInterval = 250 * time.Millisecond
	}
	if c.QuietLimit <= 0 {
		c.QuietLimit = 5 * time.Minute
	}
	if c.Engine.QueueMaxDeltas <= 0 {
		c.Engine.QueueMaxDeltas = 64
	}
	if c.Engine.Window <= 0 {
		c.Engine.Window = 4
	}
	if c.Engine.AckTimeout <= 0 {
		c.Engine.AckTimeout = 10 * time.Second // the engine's default
	}
	if c.Engine.AntiEntropyInterval <= 0 {
		c.Engine.AntiEntropyInterval = 10 * time.Second // the engine's default
	}
	if c.MaxSkew <= 0 {
		c.MaxSkew = 5 * time.Second
	}
	if c.SkewedNodes > c.Nodes {
		c.SkewedNodes = c.Nodes
	}
	if c.Track <= 0 {
		c.Track = 24
	}
	if c.Joins >= c.Nodes {
		c.Joins = c.Nodes - 1
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
}

func (c *Config) validate() error {
	switch {
	case c.Loss < 0 || c.Loss >= 1:
		return fmt.Errorf("sim: loss %v outside [0,1)", c.Loss)
	case c.Dup < 0 || c.Dup > 1, c.Reorder < 0 || c.Reorder > 1:
		return fmt.Errorf("sim: dup and reorder must be in [0,1]")
	case c.Nodes > 10000:
		return fmt.Errorf("sim: %d nodes is too many", c.Nodes)
	case c.Partitions < 0 || c.Crashes < 0 || c.Stalls < 0 || c.Churn < 0 || c.Joins < 0 || c.SkewedNodes < 0:
		return fmt.Errorf("sim: fault counts must not be negative")
	case c.Skew < 0 || c.Skew > time.Hour:
		return fmt.Errorf("sim: skew %v outside [0, 1h]", c.Skew)
	case c.Workers > 256:
		return fmt.Errorf("sim: %d workers is too many", c.Workers)
	}
	if c.Scenario != nil {
		return c.Scenario.check(c.Nodes)
	}
	return nil
}

// ReplayCommand is the one-line command that replays this run.
func (c Config) ReplayCommand() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mnemo sim --nodes %d --ops %d --seed %d", c.Nodes, c.Ops, c.Seed)
	if c.Scenario != nil && c.Scenario.Path != "" {
		fmt.Fprintf(&b, " --scenario %s", c.Scenario.Path)
		return b.String()
	}
	if c.NoSetRemoves {
		b.WriteString(" --no-set-removes")
	}
	if c.Loss > 0 {
		fmt.Fprintf(&b, " --loss %g", c.Loss)
	}
	if c.Dup > 0 {
		fmt.Fprintf(&b, " --dup %g", c.Dup)
	}
	if c.Reorder > 0 {
		fmt.Fprintf(&b, " --reorder %g", c.Reorder)
	}
	if c.SkewedNodes > 0 && c.Skew > 0 {
		fmt.Fprintf(&b, " --skewed-nodes %d --skew %v", c.SkewedNodes, c.Skew)
	}
	if c.Engine.BatchMaxBytes > 0 {
		fmt.Fprintf(&b, " --batch %d", c.Engine.BatchMaxBytes)
	}
	if c.Engine.TreeThreshold != 0 {
		fmt.Fprintf(&b, " --tree-threshold %d", c.Engine.TreeThreshold)
	}
	if c.BindingsOnDemandAt != 0 {
		fmt.Fprintf(&b, " --bindings-on-demand %d", c.BindingsOnDemandAt)
	}
	if c.MaxSkew != 5*time.Second {
		fmt.Fprintf(&b, " --max-skew %v", c.MaxSkew)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"partitions", c.Partitions}, {"crashes", c.Crashes}, {"stalls", c.Stalls}, {"churn", c.Churn}, {"joins", c.Joins}} {
		if f.v > 0 {
			fmt.Fprintf(&b, " --%s %d", f.name, f.v)
		}
	}
	return b.String()
}

// GCPercent is the garbage-collector setting `mnemo sim` runs with unless
// GOGC is set: the simulator is a batch job whose heap churns through
// millions of short-lived messages, and collecting a quarter as often
// roughly halves its wall time (100 nodes, 10k ops: 57–62 s against 83–90 s)
// for a few GB of peak memory on a large run.
const GCPercent = 400
