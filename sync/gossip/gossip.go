package gossip

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/mnemohq/mnemo/acl"
)

// Member states. memberlist v0.7.0 reports no event when it starts to
// suspect a member, so a suspected member stays StateAlive until it is
// declared dead (or refutes the suspicion).
const (
	StateAlive = "alive"
	StateDead  = "dead"
	StateLeft  = "left"
)

// Member is a node as this node currently sees it.
type Member struct {
	Meta
	// GossipAddr is the member's memberlist host:port.
	GossipAddr string
	// State is StateAlive, StateDead (failed probes) or StateLeft
	// (announced its departure with Leave).
	State string
}

var (
	// ErrClosed: the Gossip has been shut down.
	ErrClosed = errors.New("gossip: shut down")
	// ErrJoin: none of the addresses to join could be reached, or they
	// refused us (another cluster key, for one).
	ErrJoin = errors.New("gossip: could not join the cluster")
)

// Defaults of Config fields left zero. The timings are memberlist's
// DefaultLANConfig except PushPullInterval (30 s there): clusters here are
// small, so a full state exchange twice as often is cheap and repairs
// missed gossip sooner. With them, in-process, a node sees a joiner in
// ~200 ms and declares a crashed node dead in ~5-15 s.
const (
	DefaultBindAddr         = "127.0.0.1:0"
	DefaultProbeInterval    = time.Second
	DefaultProbeTimeout     = 500 * time.Millisecond
	DefaultGossipInterval   = 200 * time.Millisecond
	DefaultSuspicionMult    = 4
	DefaultPushPullInterval = 15 * time.Second
	DefaultTCPTimeout       = 10 * time.Second
	DefaultBroadcastTimeout = 5 * time.Second
)

// maxGone bounds the dead and left members kept for Members; the oldest
// are forgotten first. memberlist itself forgets them after
// GossipToTheDeadTime, but reports no event for it.
const maxGone = 256

// Config configures Start. SecretKey is required; every other field has a
// default or may stay empty.
type Config struct {
	// BindAddr is the host:port for memberlist's UDP and TCP listeners
	// (the same port for both). Port 0 picks a free one. Default
	// DefaultBindAddr (loopback).
	BindAddr string
	// AdvertiseAddr is the host:port other members reach us at, when it
	// differs from BindAddr (NAT, or binding 0.0.0.0). Default: the bind
	// address, or a private IP of this host when bound to 0.0.0.0.
	AdvertiseAddr string
	// Join lists members (host:port) to contact at Start. Empty: start a
	// cluster of one, to be joined by others or via Join.
	Join []string
	// SecretKey is the cluster key, 16, 24 or 32 bytes (LoadClusterKey).
	// All gossip is encrypted and authenticated with it; a node with
	// another key cannot join or be joined.
	SecretKey []byte
	// Meta is this node's metadata. NodeID may be empty (it is derived
	// from PublicKey); it becomes the memberlist name.
	Meta Meta
	// OnChange, if set, is called with a fresh Members snapshot after the
	// membership changes: a member joins, updates its metadata, fails or
	// leaves. Calls come from one goroutine, never concurrently, and are
	// coalesced: a burst of changes may produce one call, but the last
	// call always reflects the latest state. The first call reports this
	// node alone. OnChange may call Members but must not call Shutdown;
	// a slow OnChange delays later calls, never gossip.
	OnChange func([]Member)
	// Logger receives memberlist's log (at the levels it uses) and
	// rejected members. Default: discard.
	Logger *slog.Logger

	// ProbeInterval is the time between failure-detection probes of a
	// random member. Default DefaultProbeInterval.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack before trying
	// indirect probes. Default DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// GossipInterval is the time between gossip rounds. Default
	// DefaultGossipInterval.
	GossipInterval time.Duration
	// SuspicionMult scales how long a suspected member has to refute
	// before it is declared dead (SuspicionMult * log10(N+1) *
	// ProbeInterval). Default DefaultSuspicionMult.
	SuspicionMult int
	// PushPullInterval is the time between full state exchanges with a
	// random member. Default DefaultPushPullInterval.
	PushPullInterval time.Duration
	// TCPTimeout bounds a push/pull exchange, including the one Join
	// makes. Default DefaultTCPTimeout.
	TCPTimeout time.Duration
	// BroadcastTimeout is how long UpdateMeta waits for its broadcast to
	// go out. Default DefaultBroadcastTimeout.
	BroadcastTimeout time.Duration
}

func (c *Config) validate() error {
	if c.BindAddr == "" {
		c.BindAddr = DefaultBindAddr
	}
	if !validKeySize(len(c.SecretKey)) {
		return fmt.Errorf("gossip: config: SecretKey is %d bytes, want 16, 24 or 32: %w", len(c.SecretKey), ErrBadClusterKey)
	}
	if c.Meta.NodeID == "" && len(c.Meta.PublicKey) == 32 {
		c.Meta.NodeID = acl.NodeIDOf(c.Meta.PublicKey)
	}
	if err := c.Meta.check(); err != nil {
		return fmt.Errorf("gossip: config: Meta: %w", err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&c.ProbeInterval, DefaultProbeInterval)
	setDefault(&c.ProbeTimeout, DefaultProbeTimeout)
	setDefault(&c.GossipInterval, DefaultGossipInterval)
	setDefault(&c.SuspicionMult, DefaultSuspicionMult)
	setDefault(&c.PushPullInterval, DefaultPushPullInterval)
	setDefault(&c.TCPTimeout, DefaultTCPTimeout)
	setDefault(&c.BroadcastTimeout, DefaultBroadcastTimeout)
	return nil
}

func setDefault[T time.Duration | int](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

func splitHostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", port, err)
	}
	return host, int(p), nil
}

// Gossip is this node's membership in the cluster. Its methods are safe for
// concurrent use.
type Gossip struct {
	cfg       Config
	self      acl.NodeID
	localAddr string
	log       *slog.Logger
	ml        *memberlist.Memberlist

	metaMu  sync.Mutex
	meta    []byte // encoded local metadata, served to memberlist
	current Meta   // what meta encodes
	leaving bool   // meta carries the leaving flag

	mu      sync.Mutex
	members map[string]*entry
	seq     uint64 // orders entries by last change, to forget the oldest gone ones
	warned  map[string]string

	changed      chan struct{} // capacity 1: a change not yet reported
	stop         chan struct{} // closed by Shutdown
	notifierDone chan struct{}

	life sync.RWMutex // guards shut; held shared by calls into memberlist
	shut bool
}

type entry struct {
	m       Member
	leaving bool // its metadata carried the leaving flag
	seq     uint64
}

// Start creates this node's memberlist, listening on cfg.BindAddr, and
// joins cfg.Join if given. If none of those can be joined it shuts down and
// returns an error wrapping ErrJoin: a node with the wrong cluster key
// fails here. Start blocks for at most cfg.TCPTimeout per address joined.
func Start(cfg Config) (*Gossip, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	meta, kept, err := encodeMeta(cfg.Meta, false)
	if err != nil {
		return nil, err
	}
	host, port, err := splitHostPort(cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("gossip: bind address %q: %w", cfg.BindAddr, err)
	}
	g := &Gossip{
		cfg:          cfg,
		self:         cfg.Meta.NodeID,
		log:          cfg.Logger.With("node", string(cfg.Meta.NodeID)),
		meta:         meta,
		current:      cfg.Meta.clone(),
		members:      make(map[string]*entry),
		warned:       make(map[string]string),
		changed:      make(chan struct{}, 1),
		stop:         make(chan struct{}),
		notifierDone: make(chan struct{}),
	}
	if kept < len(cfg.Meta.Agents) {
		g.log.Warn("gossip: agent list truncated to fit the metadata limit", "agents", len(cfg.Meta.Agents), "kept", kept)
	}

	mc := memberlist.DefaultLANConfig()
	mc.Name = MemberName(g.self, cfg.Meta.Incarnation)
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	if cfg.AdvertiseAddr != "" {
		ahost, aport, err := splitHostPort(cfg.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("gossip: advertise address %q: %w", cfg.AdvertiseAddr, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ahost, aport
	}
	mc.SecretKey = slices.Clone(cfg.SecretKey)
	mc.ProbeInterval = cfg.ProbeInterval
	mc.ProbeTimeout = cfg.ProbeTimeout
	mc.GossipInterval = cfg.GossipInterval
	mc.SuspicionMult = cfg.SuspicionMult
	mc.PushPullInterval = cfg.PushPullInterval
	mc.TCPTimeout = cfg.TCPTimeout
	// Names derive from keys (and incarnations), so a dead name
	// reappearing at a new address is that node restarted; let it reclaim
	// its name at once. (An impostor gains nothing: QUIC dials pin the
	// key.) A live name never moves in memberlist v0.7.0, whatever its
	// incarnation number: that is why a restart takes a new name.
	mc.DeadNodeReclaimTime = time.Nanosecond
	d := delegate{g}
	mc.Delegate, mc.Events, mc.Alive = d, d, d
	mc.Logger = newLogBridge(cfg.Logger.With("component", "memberlist", "node", string(g.self)))

	go g.notifyLoop()
	ml, err := memberlist.Create(mc)
	if err != nil {
		close(g.stop)
		<-g.notifierDone
		return nil, fmt.Errorf("gossip: start: %w", err)
	}
	g.ml = ml
	// The advertised address is fixed once created; reading LocalNode
	// later would race with memberlist rewriting it.
	g.localAddr = ml.LocalNode().Address()

	if len(cfg.Join) > 0 {
		if _, err := g.Join(cfg.Join); err != nil {
			_ = g.Shutdown()
			return nil, err
		}
	}
	return g, nil
}

// Join contacts the given members (host:port) and exchanges state with
// each, returning how many it reached. The error wraps ErrJoin if it
// reached none (unreachable, or refused: another cluster key), or ErrClosed.
// It blocks for at most cfg.TCPTimeout per address.
func (g *Gossip) Join(addrs []string) (int, error) {
	g.life.RLock()
	defer g.life.RUnlock()
	if g.shut {
		return 0, ErrClosed
	}
	n, err := g.ml.Join(addrs)
	if err != nil {
		return n, fmt.Errorf("%w: %w", ErrJoin, err)
	}
	return n, nil
}

// Members returns every member this node knows of, itself included (its
// NodeID is Config.Meta's), sorted by NodeID, then Incarnation: a node
// restarted at a new address is listed twice, as its new incarnation and
// as its old one until that is found dead (this node's own old
// incarnation too). Dead and left members stay
// listed, with their state, until they rejoin or until more than 256 are
// gone (the oldest are dropped). Members with bad metadata are never
// listed. The slice and its contents are the caller's.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	out := make([]Member, 0, len(g.members))
	for _, e := range g.members {
		m := e.m
		m.Meta = m.Meta.clone()
		out = append(out, m)
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.Incarnation, b.Incarnation))
	})
	return out
}

// LocalAddr returns the host:port this node advertises for gossip: what
// other nodes put in their Join lists.
func (g *Gossip) LocalAddr() string { return g.localAddr }

// UpdateMeta replaces this node's metadata (same key, node id and
// incarnation, which may be left zero; the agent list is cut to fit as
// for Config.Meta) and broadcasts it, waiting
// up to cfg.BroadcastTimeout for the broadcast to go out. If the wait
// times out the error says so, but the new metadata is in effect and
// spreads with later gossip. Other errors: invalid metadata, ErrClosed.
func (g *Gossip) UpdateMeta(m Meta) error {
	if m.NodeID == "" {
		m.NodeID = g.self
	}
	if m.Incarnation == 0 {
		m.Incarnation = g.cfg.Meta.Incarnation
	}
	if m.NodeID != g.self || !m.PublicKey.Equal(g.cfg.Meta.PublicKey) || m.Incarnation != g.cfg.Meta.Incarnation {
		return fmt.Errorf("%w: metadata of %s, this node is %s with another key or incarnation", ErrIdentity, MemberName(m.NodeID, m.Incarnation), MemberName(g.self, g.cfg.Meta.Incarnation))
	}
	g.life.RLock()
	defer g.life.RUnlock()
	if g.shut {
		return ErrClosed
	}
	g.metaMu.Lock()
	b, kept, err := encodeMeta(m, g.leaving)
	if err != nil {
		g.metaMu.Unlock()
		return err
	}
	g.meta, g.current = b, m.clone()
	g.metaMu.Unlock()
	if kept < len(m.Agents) {
		g.log.Warn("gossip: agent list truncated to fit the metadata limit", "agents", len(m.Agents), "kept", kept)
	}
	if err := g.ml.UpdateNode(g.cfg.BroadcastTimeout); err != nil {
		return fmt.Errorf("gossip: update metadata: %w", err)
	}
	return nil
}

// Leave announces that this node is leaving, so that others mark it
// StateLeft at once instead of finding it StateDead after failed probes,
// and waits up to timeout (0: no limit) for the announcement to go out.
// It takes two broadcasts: metadata flagged "leaving", then memberlist's
// leave message; a member that missed the first reports StateDead. The
// node keeps answering gossip until Shutdown, which should follow. Errors:
// the timeout, ErrClosed.
func (g *Gossip) Leave(timeout time.Duration) error {
	g.life.RLock()
	defer g.life.RUnlock()
	if g.shut {
		return ErrClosed // memberlist panics on Leave after Shutdown
	}
	start := time.Now()
	remaining := func() time.Duration {
		if timeout <= 0 {
			return 0
		}
		return max(timeout-time.Since(start), time.Nanosecond)
	}
	g.metaMu.Lock()
	b, _, err := encodeMeta(g.current, true)
	if err == nil {
		g.meta, g.leaving = b, true
	}
	g.metaMu.Unlock()
	if err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	// The leave message supersedes queued news about this node, so the
	// flag must have gone out first.
	if err := g.ml.UpdateNode(remaining()); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	if err := g.ml.Leave(remaining()); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossiping and listening, without announcing anything
// (call Leave first for a graceful exit; otherwise others find this node
// dead after their probes fail). It waits for a running OnChange call to
// return, and no call follows. Idempotent.
func (g *Gossip) Shutdown() error {
	g.life.Lock()
	if g.shut {
		g.life.Unlock()
		return nil
	}
	g.shut = true
	err := g.ml.Shutdown()
	g.life.Unlock()
	// Not under life: an OnChange in progress may call UpdateMeta or Leave
	// (they return ErrClosed now).
	close(g.stop)
	<-g.notifierDone
	if err != nil {
		return fmt.Errorf("gossip: shutdown: %w", err)
	}
	return nil
}

func (g *Gossip) notifyLoop() {
	defer close(g.notifierDone)
	for {
		select {
		case <-g.stop:
			return
		case <-g.changed:
			if g.cfg.OnChange != nil {
				g.cfg.OnChange(g.Members())
			}
		}
	}
}

// upsert records a member that is alive with new or updated metadata.
func (g *Gossip) upsert(n *memberlist.Node) {
	meta, leaving, err := decodeMeta(n.Name, n.Meta)
	if err != nil {
		// NotifyAlive already refused such members; this is a guard.
		g.reject(n, err)
		return
	}
	m := Member{Meta: meta.clone(), GossipAddr: n.Address(), State: StateAlive}
	g.mu.Lock()
	old, ok := g.members[n.Name]
	same := ok && sameMember(old.m, m)
	g.seq++
	g.members[n.Name] = &entry{m: m, leaving: leaving, seq: g.seq}
	delete(g.warned, n.Name)
	g.mu.Unlock()
	if !same { // a flag-only update changes nothing callers see
		g.signal()
	}
}

func sameMember(a, b Member) bool {
	return a.State == b.State && a.GossipAddr == b.GossipAddr && a.NodeID == b.NodeID && a.Incarnation == b.Incarnation &&
		a.PublicKey.Equal(b.PublicKey) && a.QUICAddr == b.QUICAddr && slices.Equal(a.Agents, b.Agents)
}

// gone records that a member failed or left; n.State does not say which
// (see wireMeta.L).
func (g *Gossip) gone(n *memberlist.Node) {
	g.mu.Lock()
	e, ok := g.members[n.Name]
	if !ok { // never accepted: nothing to report
		g.mu.Unlock()
		return
	}
	state := StateDead
	if e.leaving {
		state = StateLeft
	}
	g.seq++
	e.m.State, e.seq = state, g.seq
	g.forgetOldestGone()
	g.mu.Unlock()
	g.signal()
}

// forgetOldestGone keeps at most maxGone dead or left members. g.mu held.
func (g *Gossip) forgetOldestGone() {
	var (
		count  int
		oldest string
		seq    uint64
	)
	for name, e := range g.members {
		if e.m.State == StateAlive {
			continue
		}
		count++
		if oldest == "" || e.seq < seq {
			oldest, seq = name, e.seq
		}
	}
	if count > maxGone {
		delete(g.members, oldest)
	}
}

// reject logs a member ignored for its metadata: at Warn the first time
// for each member and reason, at Debug when gossip repeats it.
func (g *Gossip) reject(n *memberlist.Node, err error) {
	g.mu.Lock()
	repeat := g.warned[n.Name] == err.Error()
	if !repeat {
		if len(g.warned) >= maxGone {
			clear(g.warned)
		}
		g.warned[n.Name] = err.Error()
	}
	g.mu.Unlock()
	level := slog.LevelWarn
	if repeat {
		level = slog.LevelDebug
	}
	g.log.Log(context.Background(), level, "gossip: ignoring member with bad metadata", "member", n.Name, "addr", n.Address(), "err", err)
}

func (g *Gossip) signal() {
	select {
	case g.changed <- struct{}{}:
	default: // a report is already pending; it will read the latest state
	}
}

// delegate implements memberlist's callbacks without putting them in
// Gossip's API. memberlist calls the event and alive methods with its node
// lock held, so they only touch Gossip's own state.
type delegate struct{ g *Gossip }

var (
	_ memberlist.Delegate      = delegate{}
	_ memberlist.EventDelegate = delegate{}
	_ memberlist.AliveDelegate = delegate{}
)

func (d delegate) NodeMeta(limit int) []byte {
	d.g.metaMu.Lock()
	defer d.g.metaMu.Unlock()
	if len(d.g.meta) > limit { // unreachable: encodeMeta keeps within MaxMetaBytes
		return nil
	}
	return slices.Clone(d.g.meta)
}

// NotifyAlive is the gate: memberlist drops an alive message (a join, a
// metadata update, a push/pull entry) when it returns an error, so a
// member with bad metadata never enters the member list at all.
func (d delegate) NotifyAlive(n *memberlist.Node) error {
	if _, _, err := decodeMeta(n.Name, n.Meta); err != nil {
		d.g.reject(n, err)
		return err
	}
	return nil
}

func (d delegate) NotifyJoin(n *memberlist.Node)   { d.g.upsert(n) }
func (d delegate) NotifyUpdate(n *memberlist.Node) { d.g.upsert(n) }
func (d delegate) NotifyLeave(n *memberlist.Node)  { d.g.gone(n) }

// No user messages or state ride on gossip: replication data goes over
// QUIC.
func (delegate) NotifyMsg([]byte)                           {}
func (delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (delegate) LocalState(join bool) []byte                { return nil }
func (delegate) MergeRemoteState(buf []byte, join bool)     {}
