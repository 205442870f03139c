package epidemic

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes a Node. Zero fields take the defaults noted; New validates
// the result. The defaults suit clusters up to about 10,000 nodes over
// links with a one-way latency of at most ~100ms.
type Config struct {
	// Self is this node's id. Required.
	Self PeerID
	// Seed drives every random choice of the node (mixed with Self, so
	// nodes given one seed still differ). A failing simulation seed
	// replays exactly.
	Seed uint64

	// ActiveSize bounds the active view: the peers this node keeps a
	// connection to and sends broadcasts over. Default 5 (HyParView's
	// log10(N)+1 for N up to 10^4).
	ActiveSize int
	// PassiveSize bounds the passive view: known peers kept as
	// replacements for failed active ones. Default 30 (6 × ActiveSize).
	PassiveSize int
	// ActiveWalk is the length of a join's random walk (HyParView's ARWL)
	// and of a shuffle's. Default 6.
	ActiveWalk int
	// PassiveWalk is the hop of the join's walk at which the joining node
	// is added to the passive view (PRWL). Default 3; at most ActiveWalk.
	PassiveWalk int
	// ShuffleInterval is the time between shuffles, which refresh the
	// passive view with peers sampled along a random walk, and between
	// rounds of retrying passive peers while the active view is short.
	// Default 10s.
	ShuffleInterval time.Duration
	// ShuffleActive and ShufflePassive are how many active and passive
	// peers a shuffle carries (HyParView's ka, kp). Default 3 and 4.
	ShuffleActive, ShufflePassive int
	// NoShuffle: this node starts no shuffles, for a driver that keeps
	// the passive view fresh itself, with Hint (the replica engine offers
	// each tree a random sample of its readers at every anti-entropy
	// round). ShuffleInterval still paces the retries of passive peers,
	// and shuffles from peers are still walked and answered.
	NoShuffle bool
	// NeighborTimeout: a neighbor request unanswered this long is taken
	// as refused and the peer dropped from the passive view. Default 2s.
	NeighborTimeout time.Duration
	// ProbeSilence: Probe asks an active peer heard nothing from for this
	// long, and not asked for as long, whether it still holds the link.
	// Default 1s.
	ProbeSilence time.Duration

	// IHaveInterval is how long announcements wait to be batched into one
	// IHave per peer (flushed by Tick). Default 50ms.
	IHaveInterval time.Duration
	// IHaveMaxBatch bounds the announcements waiting for one peer (and so
	// the ids of one IHave): a full batch leaves at once. Default 256.
	IHaveMaxBatch int
	// GraftTimeout is how long a node that heard of a payload by an IHave
	// waits for it to arrive before grafting an announcer. Set it a little
	// above the one-way latency. Default 150ms.
	GraftTimeout time.Duration
	// GraftRetry is the wait before grafting the next announcer when a
	// graft brought nothing. Default 100ms.
	GraftRetry time.Duration
	// GraftTries bounds the grafts for one payload (cycling through its
	// announcers); then it is given up (the replica layer's anti-entropy
	// repairs it). Default 6.
	GraftTries int
	// MaxMissing bounds the payloads announced but not received; the
	// oldest is given up on overflow. Default 4096.
	MaxMissing int
	// MaxAnnouncers bounds the announcers remembered per missing payload.
	// Default 8.
	MaxAnnouncers int
	// Threshold is the Plumtree tree optimisation: when a peer announces a
	// payload held here that reached it in Threshold or more hops fewer
	// than it took to reach this node, the link to that peer becomes eager
	// and the one the payload came over lazy. Default 3; negative turns
	// the optimisation off.
	Threshold int

	// RecentAnnounce: a new link is sent announcements of the payloads
	// received this recently (at most IHaveMaxBatch), which a payload
	// under way when the link was made may have missed its new end by.
	// Default 2s; negative turns it off.
	RecentAnnounce time.Duration
	// MaxTrees bounds the origins whose trees are kept; the least recently
	// used is dropped, and its origin's next payload starts a tree again
	// from the links' last states. Default 1024.
	MaxTrees int

	// CacheMaxIDs bounds the ids of payloads received, remembered so a
	// payload is delivered once; the oldest are forgotten first. Default
	// 65536.
	CacheMaxIDs int
	// CacheTTL is how long a received id is remembered. A payload arriving
	// again after that is delivered again (the application's apply must
	// be idempotent, as a CRDT join is). Default 10m.
	CacheTTL time.Duration
	// PayloadTTL is how long a received payload is kept to answer grafts.
	// Default 30s.
	PayloadTTL time.Duration
	// PayloadMaxBytes bounds the payloads kept; the oldest go first.
	// Default 16 MiB.
	PayloadMaxBytes int
}

// DefaultConfig returns the defaults for self.
func DefaultConfig(self PeerID) Config {
	c := Config{Self: self}
	c.withDefaults()
	return c
}

func (c *Config) withDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.ActiveSize, 5)
	def(&c.PassiveSize, 6*c.ActiveSize)
	def(&c.ActiveWalk, 6)
	def(&c.PassiveWalk, 3)
	defD(&c.ShuffleInterval, 10*time.Second)
	def(&c.ShuffleActive, 3)
	def(&c.ShufflePassive, 4)
	defD(&c.NeighborTimeout, 2*time.Second)
	defD(&c.ProbeSilence, time.Second)
	defD(&c.IHaveInterval, 50*time.Millisecond)
	def(&c.IHaveMaxBatch, 256)
	defD(&c.GraftTimeout, 150*time.Millisecond)
	defD(&c.GraftRetry, 100*time.Millisecond)
	def(&c.GraftTries, 6)
	def(&c.MaxMissing, 4096)
	def(&c.MaxAnnouncers, 8)
	def(&c.Threshold, 2)
	def(&c.MaxTrees, 1024)
	defD(&c.RecentAnnounce, 2*time.Second)
	def(&c.CacheMaxIDs, 65536)
	defD(&c.CacheTTL, 10*time.Minute)
	defD(&c.PayloadTTL, 30*time.Second)
	def(&c.PayloadMaxBytes, 16<<20)
}

// ErrConfig is returned by New for a configuration it cannot run with.
var ErrConfig = errors.New("epidemic: invalid config")

// maxView bounds the view sizes: views are scanned linearly.
const maxView = 1024

func (c *Config) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case c.Self == "":
		return bad("Self is required")
	case c.ActiveSize < 1 || c.ActiveSize > maxView:
		return bad("ActiveSize %d not in [1, %d]", c.ActiveSize, maxView)
	case c.PassiveSize < 1 || c.PassiveSize > maxView:
		return bad("PassiveSize %d not in [1, %d]", c.PassiveSize, maxView)
	case c.ActiveWalk < 1 || c.PassiveWalk < 1 || c.PassiveWalk > c.ActiveWalk:
		return bad("walk lengths ActiveWalk %d, PassiveWalk %d: want 1 ≤ PassiveWalk ≤ ActiveWalk", c.ActiveWalk, c.PassiveWalk)
	case c.ShuffleActive < 0 || c.ShufflePassive < 0 || c.ShuffleActive+c.ShufflePassive+1 > c.PassiveSize:
		return bad("a shuffle of %d+%d+1 peers does not fit a passive view of %d", c.ShuffleActive, c.ShufflePassive, c.PassiveSize)
	case c.ShuffleInterval < 0 || c.NeighborTimeout < 0 || c.ProbeSilence < 0 || c.IHaveInterval < 0 ||
		c.GraftTimeout < 0 || c.GraftRetry < 0 || c.CacheTTL < 0 || c.PayloadTTL < 0:
		return bad("negative duration")
	case c.IHaveMaxBatch < 1 || c.GraftTries < 1 || c.MaxMissing < 1 || c.MaxAnnouncers < 1 ||
		c.CacheMaxIDs < 1 || c.PayloadMaxBytes < 1 || c.MaxTrees < 1:
		return bad("a bound below 1")
	case c.PayloadTTL > c.CacheTTL:
		return bad("PayloadTTL %v longer than CacheTTL %v", c.PayloadTTL, c.CacheTTL)
	}
	return nil
}
