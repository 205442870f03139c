package cluster

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
)

// Cluster is a running replication loop: one goroutine owns the engine and
// takes its inputs from channels (local deltas, frames, membership
// changes, ticks, requests); one goroutine per peer sends that peer's
// frames. Its methods are safe for concurrent use.
type Cluster struct {
	*loop
	tr Transport
	ms Membership

	inbox     chan inbound
	sightings chan []Sighting // the newest membership, not yet taken
	requests  chan func()

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ driver = (*Cluster)(nil)

type inbound struct {
	from  ed25519.PublicKey
	frame []byte
}

// Start opens the transport, joins the membership and starts the loop.
func Start(cfg Config) (*Cluster, error) {
	if cfg.StartTransport == nil || cfg.StartMembership == nil {
		return nil, errors.New("cluster: a transport and a membership are required (node/cluster/realnet has the real ones)")
	}
	c := &Cluster{
		inbox:     make(chan inbound),
		sightings: make(chan []Sighting, 1),
		requests:  make(chan func()),
	}
	var err error
	if c.loop, err = newLoop(cfg, c); err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.tr, err = c.cfg.StartTransport(Inbound{Allowed: c.knownKey, Deliver: c.deliver})
	if err != nil {
		c.cancel()
		return nil, fmt.Errorf("cluster: transport: %w", err)
	}
	c.ms, err = c.cfg.StartMembership(c.advert(c.tr.Addr()), c.membershipChanged)
	if err != nil {
		c.tr.Close()
		c.cancel()
		return nil, fmt.Errorf("cluster: membership: %w", err)
	}
	c.hook()
	c.wg.Add(1)
	go c.run()
	// membership as it is now (OnChange may have fired before the loop ran)
	select {
	case <-c.sightings:
	default:
	}
	c.sightings <- c.ms.Members()
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
	case <-c.sightings:
	default:
	}
	c.sightings <- ms
}

// open is the driver's: a goroutine sends the peer's frames from a
// channel of Config.SendQueue; a full channel drops.
func (c *Cluster) open(id replica.PeerID, addr string, key ed25519.PublicKey) outlet {
	ch := make(chan []byte, c.cfg.SendQueue)
	c.wg.Add(1)
	go c.send(id, addr, key, ch)
	return chanOutlet(ch)
}

// members is the driver's: the membership's members now.
func (c *Cluster) members() []Sighting { return c.ms.Members() }

// proveTimeout bounds one attempt to prove an incarnation's address; a
// failed attempt is tried again on a later tick.
const proveTimeout = 5 * time.Second

// prove is the driver's: a goroutine asks the transport's Prover and
// reports back on the loop. A transport without one authenticates keys
// itself: proved at once.
func (c *Cluster) prove(cd candidate, addr string, key ed25519.PublicKey) bool {
	p, ok := c.tr.(Prover)
	if !ok {
		return true
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, proveTimeout)
		err := p.Prove(ctx, addr, key)
		cancel()
		select {
		case c.requests <- func() { c.proofDone(cd, err == nil) }:
		case <-c.ctx.Done():
		}
	}()
	return false
}

// chanOutlet is the channel of a peer's sending goroutine.
type chanOutlet chan []byte

func (o chanOutlet) push(frame []byte) bool {
	select {
	case o <- frame:
		return true
	default:
		return false
	}
}

func (o chanOutlet) close() { close(o) }

func (c *Cluster) send(id replica.PeerID, addr string, key ed25519.PublicKey, ch chan []byte) {
	defer c.wg.Done()
	var reported time.Time
	for frame := range ch {
		err := c.tr.Send(c.ctx, addr, key, frame)
		if err == nil {
			continue
		}
		c.dropped.Add(1)
		if c.ctx.Err() != nil {
			continue
		}
		c.log.Debug("send failed", "peer", id, "err", err)
		// The trees route around the peer (at most once a tick: a tree
		// may link it again at its next refresh).
		if now := c.cfg.Clock.Now(); now.Sub(reported) >= c.cfg.Tick {
			reported = now
			select {
			case c.requests <- func() { c.eng.PeerUnreachable(id) }:
			case <-c.ctx.Done():
			}
		}
	}
}

func (c *Cluster) run() {
	defer c.wg.Done()
	t := c.cfg.Clock.NewTicker(c.cfg.Tick)
	defer t.Stop()
	trees := c.cfg.Clock.NewTicker(c.cfg.TreeTick)
	defer trees.Stop()
	for {
		select {
		case <-c.ctx.Done():
			c.closeOutlets()
			c.storeUnsavedBindings() // peers' bindings admitted since the last tick
			return
		case ld := <-c.local:
			c.eng.LocalDelta(ld.ns, ld.d)
		case in := <-c.inbox:
			c.receive(in.from, in.frame)
		case ms := <-c.sightings:
			c.setMembers(ms)
		case fn := <-c.requests:
			fn()
		case <-t.C():
			c.tick()
		case <-trees.C():
			c.flushTrees()
		}
		c.act()
	}
}

// do runs fn on the loop goroutine and waits. Errors: ErrStopped.
func (c *Cluster) do(fn func()) error {
	done := make(chan struct{})
	select {
	case c.requests <- func() { fn(); close(done) }:
	case <-c.ctx.Done():
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-c.ctx.Done():
		return ErrStopped
	}
}

// RefreshAgents claims the node's new principals (after a token or rule
// adds one), sends the claims to every peer and re-advertises the names.
func (c *Cluster) RefreshAgents() error {
	if added := c.claimAgents(); len(added) > 0 {
		_ = c.do(func() { c.sendNewBindings(added) })
	}
	return c.ms.UpdateMeta(c.advert(c.tr.Addr()))
}

// GossipAddr is the address other nodes join: the membership's address.
func (c *Cluster) GossipAddr() string { return c.ms.Addr() }

// QUICAddr is the address peers send frames to: the transport's address.
func (c *Cluster) QUICAddr() string { return c.tr.Addr() }

// Close leaves the cluster and stops the loop.
func (c *Cluster) Close() error {
	c.stopped.Store(true)
	errMs := c.ms.Close()
	c.cancel()
	c.wg.Wait()
	return errors.Join(errMs, c.tr.Close())
}

// Status reports the replication counters and the namespaces held. With
// digests it also hashes each namespace's whole state (a full scan of each:
// for convergence checks, not for every metrics scrape) and compares each
// peer's last told context with this node's (Status.Agreement).
func (c *Cluster) Status(digests bool) Status {
	peers := []replica.PeerStats{}
	var agreement []replica.PeerAgreement
	var trees replica.TreeStats
	var syncs replica.SyncStats
	_ = c.do(func() {
		peers = c.eng.Stats()
		trees = c.eng.TreeStats()
		syncs = c.eng.SyncStats()
		if digests {
			agreement = c.eng.Agreement()
		}
	})
	st := c.status(peers, agreement, digests)
	st.Trees = trees
	st.Syncs = syncs
	st.QUIC, st.Gossip = c.QUICAddr(), c.GossipAddr()
	return st
}

// Members lists the cluster as gossip sees it.
func (c *Cluster) Members() []Member { return c.memberList(c.ms.Members()) }

// Sync asks peer (a node id; "" = every peer) for a digest sync of every
// shared namespace now. Errors: ErrStopped, or the engine's for an
// unknown peer.
func (c *Cluster) Sync(peer string) error {
	var err error
	derr := c.do(func() { err = c.requestSync(peer) })
	return errors.Join(derr, err)
}

// HostedElsewhere reports whether p is bound to another node's key: this
// node may not act for it (no token, no claim).
func (c *Cluster) HostedElsewhere(p namespace.Address) (acl.NodeID, bool) {
	return c.hostedElsewhere(p)
}

// Handover moves principal p, which this node hosts, to the node whose key
// is to: it signs the hand-over, admits it and sends it to every peer. From
// then on every node binds p to the new host; records p signed here before
// stay p's. The caller should stop acting for p here (its tokens, its
// rules): records this node signs for p no longer count elsewhere. Errors
// wrap ErrNotHosted or acl.ErrInvalid.
func (c *Cluster) Handover(p namespace.Address, to ed25519.PublicKey) (acl.Binding, error) {
	b, err := c.handover(p, to)
	if err != nil {
		return acl.Binding{}, err
	}
	_ = c.do(func() { c.announceHandover(b) })
	return b, nil
}
