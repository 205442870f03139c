package cluster

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/mnemohq/mnemo/acl"
)

// The loop's three seams: how frames travel, who the members are, and what
// time it is. Each holds only what the loop uses. The real transport and
// membership, QUIC and memberlist gossip, are in node/cluster/realnet; the
// clock defaults to the wall clock; tests supply in-memory ones through
// Config.

// Transport carries frames between members.
type Transport interface {
	// Send delivers frame to the member at addr whose key is key, and
	// returns nil once that member's Inbound.Deliver has returned with it.
	// It blocks while the member is slow to take frames, until ctx ends; an
	// error means the frame may or may not have arrived (the engine's ack
	// timeout repairs either case). The loop calls Send from one goroutine
	// per peer, so concurrently for different peers; frame is not retained.
	Send(ctx context.Context, addr string, key ed25519.PublicKey, frame []byte) error
	// Addr is the address other members send to; the loop advertises it in
	// its membership Advert.
	Addr() string
	// Close stops receiving and returns once no Deliver call is in flight.
	// Sends after Close fail. Idempotent.
	Close() error
}

// Prover is an optional Transport capability: checking that an address
// holds a key before the loop sends there instead of to where the key was
// already reached. A node restarted on new ports is announced by the
// membership as a second incarnation at a new address (Advert.Incarnation);
// the loop moves its frames there only once the new address has proved the
// key (incarnations.go), so that whoever can announce members (anyone with
// the cluster key) cannot turn a live node's frames away. A transport
// without it is taken to authenticate keys itself: the loop moves at once.
type Prover interface {
	// Prove returns nil once the member at addr has proved that it holds
	// key (QUIC: the TLS handshake, pinned to key). It blocks until then
	// or until ctx ends. The loop calls it from goroutines of their own,
	// concurrently with Send and with each other.
	Prove(ctx context.Context, addr string, key ed25519.PublicKey) error
}

// Inbound is what a transport hands arriving frames to. Both functions are
// called from transport goroutines, concurrently.
type Inbound struct {
	// Allowed reports whether key belongs to a live member; a transport
	// refuses frames (and connections) from any other key. Fast and safe
	// for concurrent use.
	Allowed func(key ed25519.PublicKey) bool
	// Deliver hands the loop a frame from the member whose key is from, as
	// the transport authenticated it. It blocks until the loop takes the
	// frame or the cluster stops, which is how a slow node slows its
	// senders. The frame becomes the loop's.
	Deliver func(from ed25519.PublicKey, frame []byte)
}

// Membership discovers the members and detects their failures.
type Membership interface {
	// Members is every member known, this node included, sorted by NodeID.
	// Members that failed or left stay listed, not StateAlive, for a while.
	// The slice is the caller's. Safe for concurrent use.
	Members() []Sighting
	// UpdateMeta replaces what this node advertises (same node id and key)
	// and spreads it; it may block for a bounded time while it does.
	UpdateMeta(Advert) error
	// Addr is the address other nodes join (Config.Join).
	Addr() string
	// Close announces that this node leaves, waiting a bounded time, and
	// stops. No change is reported after it returns. Idempotent.
	Close() error
}

// Advert is what a node tells the cluster about itself.
type Advert struct {
	NodeID    acl.NodeID
	PublicKey ed25519.PublicKey // what peers pin when they send to Addr
	Addr      string            // its Transport.Addr
	// Agents names the node's principals. Informational only: which
	// agents a member hosts is read from its signed bindings (bindings.go).
	Agents []string
	// Incarnation tells the starts of one node apart: each start
	// advertises a higher one (Config.Incarnation). A membership may list
	// a node twice, a restarted incarnation beside the old one it has not
	// yet found dead; the loop addresses one of them (incarnations.go).
	Incarnation uint64
}

// Sighting is one member as the membership sees it.
type Sighting struct {
	Advert
	State string // StateAlive, StateDead or StateLeft
}

// Member states, as Sighting and Member report them.
const (
	StateAlive = "alive"
	StateDead  = "dead" // failed the membership's probes
	StateLeft  = "left" // announced its departure
)

// Clock is the loop's time: the engine's ticks, binding timestamps and
// when bindings were last sent. Called from the loop and from API calls,
// concurrently.
type Clock interface {
	Now() time.Time
	// NewTicker delivers the clock's time every d (d > 0), dropping ticks
	// a slow receiver misses, as time.Ticker does.
	NewTicker(d time.Duration) Ticker
}

// Ticker is a Clock's ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// wallClock is the default Clock.
type wallClock struct{}

var _ Clock = wallClock{}

func (wallClock) Now() time.Time                   { return time.Now() }
func (wallClock) NewTicker(d time.Duration) Ticker { return wallTicker{time.NewTicker(d)} }

type wallTicker struct{ t *time.Ticker }

func (w wallTicker) C() <-chan time.Time { return w.t.C }
func (w wallTicker) Stop()               { w.t.Stop() }
