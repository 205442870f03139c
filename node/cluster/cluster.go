package cluster

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Config configures a node's replication. Zero fields take the defaults noted.
type Config struct {
	Service    *memory.Service
	Identity   acl.Identity
	Agents     func() []namespace.Address // the node's local principals, advertised in gossip; default the service's owner
	Engine     replica.Config             // queue bounds and timings (Self/Replica are filled in)
	Tick       time.Duration              // engine tick, in Clock time; default 500ms
	LocalQueue int                        // local deltas waiting for the loop; default 4096
	SendQueue  int                        // frames waiting per peer; default 256
	Logger     *slog.Logger               // default: discard
	Clock      Clock                      // default: the wall clock

	// StartTransport opens the node's frame transport; required.
	// node/cluster/realnet.Transport is QUIC (sync/quicnet).
	StartTransport func(in Inbound) (Transport, error)
	// StartMembership starts the node's membership advertising self, and
	// calls onChange with a fresh Members snapshot after every change:
	// never concurrently, possibly one call for a burst, the last call the
	// latest state, none after Membership.Close returns. onChange does not
	// block. Required. node/cluster/realnet.Membership is memberlist
	// gossip (sync/gossip).
	StartMembership func(self Advert, onChange func([]Sighting)) (Membership, error)
}

// Member is one cluster member as `GET /v1/members` shows it.
type Member struct {
	NodeID string   `json:"node_id"`
	Key    string   `json:"key"` // the node's public key (acl.EncodePublicKey): what a hand-over names
	Agents []string `json:"agents"`
	Addr   string   `json:"addr"`
	State  string   `json:"state"`
	Self   bool     `json:"self,omitempty"`
}

// Status is the replication state as `GET /v1/status` shows it.
type Status struct {
	NodeID   string              `json:"node_id"`
	Replica  string              `json:"replica"`
	QUIC     string              `json:"quic"`
	Gossip   string              `json:"gossip"`
	Peers    []replica.PeerStats `json:"peers"`
	Applied  uint64              `json:"applied"`
	Rejected uint64              `json:"rejected"`
	// BindingConflicts counts claims to host an agent that another node
	// already hosts: refused, and each logged with both nodes' ids.
	BindingConflicts uint64            `json:"binding_conflicts"`
	DroppedFrames    uint64            `json:"dropped_frames"`
	LocalOverflow    uint64            `json:"local_overflows"`
	Namespaces       []NamespaceDigest `json:"namespaces"`
}

// NamespaceDigest is one replicated namespace's state digest: equal on two
// nodes exactly when they hold the same state of it.
type NamespaceDigest struct {
	Namespace string `json:"namespace"`
	Digest    string `json:"digest,omitempty"`  // with ?digests=true
	Records   int    `json:"records,omitempty"` // with ?digests=true
}

type localDelta struct {
	ns string
	d  *crdt.Map
}

type inbound struct {
	from  ed25519.PublicKey
	frame []byte
}

// Cluster is a running replication loop.
type Cluster struct {
	cfg   Config
	svc   *memory.Service
	log   *slog.Logger
	codec *wire.Codec
	eng   *replica.Engine
	tr    Transport
	ms    Membership
	self  replica.PeerID

	local    chan localDelta
	inbox    chan inbound
	members  chan []Sighting
	requests chan func()
	overflow sync.Map // ns → true: local deltas dropped, digest sync needed

	// loop-owned
	peers        map[replica.PeerID]peerInfo
	lastBindings time.Time               // when the bindings were last sent to every peer
	heard        map[replica.PeerID]bool // peers whose bindings frame arrived

	mu      sync.Mutex // guards senders
	senders map[replica.PeerID]*sender

	applied, rejected, dropped, localOver, conflicts atomic.Uint64

	knownMu sync.RWMutex
	known   map[string]bool // public keys of live members
	// dir binds principals to the node keys that host them, from verified
	// binding records only (bindings.go); byReplica indexes it.
	dir           *acl.Directory
	byReplica     map[crdt.ReplicaID][]namespace.Address // the principals each replica's node hosts now
	everByReplica map[crdt.ReplicaID][]namespace.Address // … or hosted before a hand-over

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type peerInfo struct {
	member Sighting
	peer   replica.Peer
}

type sender struct {
	ch   chan []byte
	addr string
	key  ed25519.PublicKey
}

// Start joins the cluster and starts the loop.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Service == nil || cfg.Identity.Private == nil {
		return nil, errors.New("cluster: a service and an identity are required")
	}
	if cfg.StartTransport == nil || cfg.StartMembership == nil {
		return nil, errors.New("cluster: a transport and a membership are required (node/cluster/realnet has the real ones)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 500 * time.Millisecond
	}
	if cfg.LocalQueue <= 0 {
		cfg.LocalQueue = 4096
	}
	if cfg.SendQueue <= 0 {
		cfg.SendQueue = 256
	}
	if cfg.Agents == nil {
		owner := cfg.Service.Owner()
		cfg.Agents = func() []namespace.Address { return []namespace.Address{owner} }
	}
	log := cfg.Logger.With("component", "cluster")
	c := &Cluster{
		cfg: cfg, svc: cfg.Service, log: log, codec: wire.NewCodec(0),
		self:     replica.PeerID(cfg.Identity.NodeID()),
		local:    make(chan localDelta, cfg.LocalQueue),
		inbox:    make(chan inbound),
		members:  make(chan []Sighting, 1),
		requests: make(chan func()),
		peers:    map[replica.PeerID]peerInfo{},
		heard:    map[replica.PeerID]bool{},
		senders:  map[replica.PeerID]*sender{},
		known:    map[string]bool{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.loadBindings()
	c.claimAgents()
	ecfg := cfg.Engine
	ecfg.Self, ecfg.Replica = c.self, cfg.Identity.ReplicaID()
	ecfg.Signer = cfg.Identity.Signer()
	c.eng = replica.New(ecfg, storeState{c.svc}, &policy{c: c})

	var err error
	c.tr, err = cfg.StartTransport(Inbound{Allowed: c.knownKey, Deliver: c.deliver})
	if err != nil {
		c.cancel()
		return nil, fmt.Errorf("cluster: transport: %w", err)
	}
	c.ms, err = cfg.StartMembership(c.advert(), c.membershipChanged)
	if err != nil {
		c.tr.Close()
		c.cancel()
		return nil, fmt.Errorf("cluster: membership: %w", err)
	}
	c.svc.SetKeyOf(c.keyOf)
	c.svc.SetAuthorCheck(c.hostedBy)
	c.svc.OnLocalDelta(c.onLocalDelta)
	c.wg.Add(1)
	go c.loop()
	// membership as it is now (OnChange may have fired before the loop ran)
	select {
	case <-c.members:
	default:
	}
	c.members <- c.ms.Members()
	return c, nil
}

// deliver is the transport's Inbound.Deliver.
func (c *Cluster) deliver(from ed25519.PublicKey, frame []byte) {
	select {
	case c.inbox <- inbound{from, frame}:
	case <-c.ctx.Done():
	}
}

// membershipChanged keeps only the newest membership for the loop; the
// membership never calls it concurrently.
func (c *Cluster) membershipChanged(ms []Sighting) {
	select {
	case <-c.members:
	default:
	}
	c.members <- ms
}

func (c *Cluster) advert() Advert {
	var agents []string
	for _, a := range c.cfg.Agents() {
		agents = append(agents, a.String())
	}
	return Advert{NodeID: c.cfg.Identity.NodeID(), PublicKey: c.cfg.Identity.Public, Addr: c.tr.Addr(), Agents: agents}
}

// RefreshAgents claims the node's new principals (after a token or rule
// adds one), sends the claims to every peer and re-advertises the names.
func (c *Cluster) RefreshAgents() error {
	if c.claimAgents() {
		_ = c.do(c.sendBindings)
	}
	return c.ms.UpdateMeta(c.advert())
}

func (c *Cluster) onLocalDelta(ns string, d *crdt.Map) {
	if !memory.Replicated(ns) {
		return
	}
	select {
	case c.local <- localDelta{ns, d}:
	default:
		// The loop is behind: never block the writer; sync this namespace instead.
		c.overflow.Store(ns, true)
		c.localOver.Add(1)
	}
}

// GossipAddr is the address other nodes join: the membership's address.
func (c *Cluster) GossipAddr() string { return c.ms.Addr() }

// QUICAddr is the address peers send frames to: the transport's address.
func (c *Cluster) QUICAddr() string { return c.tr.Addr() }

// Close leaves the cluster and stops the loop.
func (c *Cluster) Close() error {
	errMs := c.ms.Close()
	c.cancel()
	c.wg.Wait()
	return errors.Join(errMs, c.tr.Close())
}

// do runs fn on the loop goroutine and waits.
func (c *Cluster) do(fn func()) error {
	done := make(chan struct{})
	select {
	case c.requests <- func() { fn(); close(done) }:
	case <-c.ctx.Done():
		return errors.New("cluster: stopped")
	}
	select {
	case <-done:
		return nil
	case <-c.ctx.Done():
		return errors.New("cluster: stopped")
	}
}

// Status reports the replication counters and the namespaces held. With
// digests it also hashes each namespace's whole state (a full scan of each:
// for convergence checks, not for every metrics scrape).
func (c *Cluster) Status(digests bool) Status {
	st := Status{NodeID: string(c.self), Replica: c.cfg.Identity.ReplicaID().String(),
		QUIC: c.QUICAddr(), Gossip: c.GossipAddr(), Peers: []replica.PeerStats{}}
	_ = c.do(func() { st.Peers = c.eng.Stats() })
	st.Applied, st.Rejected, st.DroppedFrames, st.LocalOverflow = c.applied.Load(), c.rejected.Load(), c.dropped.Load(), c.localOver.Load()
	st.BindingConflicts = c.conflicts.Load()
	st.Namespaces = []NamespaceDigest{}
	for _, ns := range (storeState{c.svc}).Namespaces() {
		nd := NamespaceDigest{Namespace: ns}
		if digests {
			m, err := c.svc.Store().State(ns)
			if err != nil {
				continue
			}
			nd.Digest, nd.Records = m.Digest().String(), m.Len()
		}
		st.Namespaces = append(st.Namespaces, nd)
	}
	return st
}

// Members lists the cluster as gossip sees it.
func (c *Cluster) Members() []Member {
	var out []Member
	for _, m := range c.ms.Members() {
		agents := []string{}
		for _, p := range c.principalsOfKey(m.PublicKey) {
			agents = append(agents, p.String())
		}
		out = append(out, Member{NodeID: string(m.NodeID), Key: acl.EncodePublicKey(m.PublicKey), Agents: agents, Addr: m.Addr, State: m.State,
			Self: replica.PeerID(m.NodeID) == c.self})
	}
	return out
}

// Sync asks peer (a node id; "" = every peer) for a digest sync of every
// shared namespace now.
func (c *Cluster) Sync(peer string) error {
	var err error
	derr := c.do(func() {
		if peer != "" {
			err = c.eng.RequestSync(replica.PeerID(peer), "")
			return
		}
		for _, p := range c.eng.Peers() {
			_ = c.eng.RequestSync(p.ID, "")
		}
	})
	return errors.Join(derr, err)
}

func (c *Cluster) loop() {
	defer c.wg.Done()
	t := c.cfg.Clock.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			c.stopSenders()
			return
		case ld := <-c.local:
			c.eng.LocalDelta(ld.ns, ld.d)
		case in := <-c.inbox:
			c.receive(in)
		case ms := <-c.members:
			c.setMembers(ms)
		case fn := <-c.requests:
			fn()
		case <-t.C():
			c.overflow.Range(func(k, _ any) bool {
				c.overflow.Delete(k)
				for _, p := range c.eng.Peers() {
					_ = c.eng.RequestSync(p.ID, k.(string))
				}
				return true
			})
			now := c.cfg.Clock.Now()
			c.eng.Tick(now)
			if now.Sub(c.lastBindings) >= BindingsInterval {
				c.sendBindings()
			} else {
				c.askBindings()
			}
		}
		c.act()
	}
}

func (c *Cluster) receive(in inbound) {
	from := replica.PeerID(acl.NodeIDOf(in.from))
	m, err := c.codec.Decode(in.frame)
	if err != nil {
		c.rejected.Add(1)
		c.log.Warn("undecodable frame", "peer", from, "err", err)
		return
	}
	if m.Kind == wire.KindBindings {
		c.receiveBindings(from, m.Bindings, m.Reply)
		return
	}
	if err := c.eng.Step(from, m); err != nil {
		c.log.Debug("frame from a peer not (yet) in membership", "peer", from, "err", err)
	}
}

// act drives the engine's outputs as the replica package's loop contract
// says (its doc.go, "The loop"): apply each delta through ApplyRemote, whose
// refusals (clock skew, acl, surgery, authors, the disk) go back to the
// engine with Advance, then send; again while the engine has more (Advance
// emits acks and releases held deltas).
func (c *Cluster) act() {
	for c.eng.HasReady() {
		r := c.eng.Ready()
		var refused []replica.Refusal
		for i, a := range r.Apply {
			if err := c.svc.ApplyRemote(a.Namespace, a.Delta); err != nil {
				// counted and logged with the Rejection Advance reports
				refused = append(refused, replica.Refusal{Index: i, Err: err})
				continue
			}
			c.applied.Add(1)
		}
		c.eng.Advance(refused)
		for _, rj := range r.Rejected {
			c.rejected.Add(1)
			c.log.Warn("delta rejected", "peer", rj.From, "namespace", rj.Namespace, "err", rj.Err)
		}
		for _, err := range r.Errors {
			c.log.Error("replication state", "err", err)
		}
		c.sendAll(r.Messages)
	}
}

// sendAll encodes messages and hands them to their peers' senders.
func (c *Cluster) sendAll(msgs []replica.Envelope) {
	for _, env := range msgs {
		frame, err := c.codec.Encode(env.Msg)
		if err != nil {
			c.log.Error("encode frame", "peer", env.To, "err", err)
			continue
		}
		c.mu.Lock()
		s := c.senders[env.To]
		c.mu.Unlock()
		if s == nil {
			c.dropped.Add(1)
			continue
		}
		select {
		case s.ch <- frame:
		default:
			c.dropped.Add(1) // the engine's ack timeout turns this into a digest sync
		}
	}
}

func (c *Cluster) setMembers(ms []Sighting) {
	var peers []replica.Peer
	next := map[replica.PeerID]peerInfo{}
	known := map[string]bool{}
	for _, m := range ms {
		id := replica.PeerID(m.NodeID)
		if id == c.self || m.State != StateAlive || len(m.PublicKey) != ed25519.PublicKeySize {
			continue
		}
		// Which agents the member hosts comes from verified bindings, never
		// from the names its metadata advertises.
		p := replica.Peer{ID: id, Key: m.PublicKey, Replica: acl.ReplicaIDOf(m.PublicKey), Principals: c.principalsOfKey(m.PublicKey)}
		peers = append(peers, p)
		next[id] = peerInfo{member: m, peer: p}
		known[string(m.PublicKey)] = true
	}
	c.peers = next
	for id := range c.heard {
		if _, ok := next[id]; !ok {
			delete(c.heard, id) // a member that comes back is asked again
		}
	}
	c.knownMu.Lock()
	c.known = known
	c.knownMu.Unlock()
	c.mu.Lock()
	for id, s := range c.senders {
		if pi, ok := next[id]; !ok || pi.member.Addr != s.addr {
			close(s.ch)
			delete(c.senders, id)
		}
	}
	for id, pi := range next {
		if _, ok := c.senders[id]; !ok {
			s := &sender{ch: make(chan []byte, c.cfg.SendQueue), addr: pi.member.Addr, key: pi.member.PublicKey}
			c.senders[id] = s
			c.wg.Add(1)
			go c.send(id, s)
			queueFrame(s, c.bindingsFrame(true)) // tell the newcomer who hosts whom, and ask it
		}
	}
	c.mu.Unlock()
	slices.SortFunc(peers, func(a, b replica.Peer) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	c.eng.SetPeers(peers)
}

func (c *Cluster) send(id replica.PeerID, s *sender) {
	defer c.wg.Done()
	for frame := range s.ch {
		if err := c.tr.Send(c.ctx, s.addr, s.key, frame); err != nil {
			c.dropped.Add(1)
			if c.ctx.Err() == nil {
				c.log.Debug("send failed", "peer", id, "err", err)
			}
		}
	}
}

func (c *Cluster) stopSenders() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.senders {
		close(s.ch)
		delete(c.senders, id)
	}
}

// knownKey reports whether pub belongs to a live member: the transport's
// Inbound.Allowed.
func (c *Cluster) knownKey(pub ed25519.PublicKey) bool {
	c.knownMu.RLock()
	defer c.knownMu.RUnlock()
	return c.known[string(pub)]
}
