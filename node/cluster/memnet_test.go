package cluster

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/acl"
)

// memNet is an in-process network and membership for cluster tests: a
// Send calls the receiver's Deliver directly, and every member sees every
// other as soon as it starts, until it closes.
type memNet struct {
	mu      sync.Mutex
	ends    map[string]*memEnd        // transports by address
	members map[acl.NodeID]*memMember // memberships by node id

	// rounds serializes the rounds of onChange calls, so no member's
	// onChange runs concurrently, and lets Close wait out a round.
	rounds sync.Mutex
}

func newMemNet() *memNet {
	return &memNet{ends: map[string]*memEnd{}, members: map[acl.NodeID]*memMember{}}
}

var (
	errMemClosed      = errors.New("memnet: transport closed")
	errMemUnreachable = errors.New("memnet: no transport at that address")
	errMemKey         = errors.New("memnet: peer key does not match the pinned key")
	errMemNotAllowed  = errors.New("memnet: the peer does not know our key")
)

// network is a test network (startNodesWith) over n.
func (n *memNet) network(_ int, id acl.Identity, cfg *Config, _ []*Cluster) {
	cfg.StartTransport, cfg.StartMembership = n.transport(id.Public), n.membership
}

// transport returns a Config.StartTransport for the node whose key is key.
func (n *memNet) transport(key ed25519.PublicKey) func(Inbound) (Transport, error) {
	return func(in Inbound) (Transport, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		e := &memEnd{net: n, key: key, in: in, addr: fmt.Sprintf("mem:%d", len(n.ends))}
		n.ends[e.addr] = e
		return e, nil
	}
}

// memEnd is one node's Transport on a memNet.
type memEnd struct {
	net    *memNet
	addr   string
	key    ed25519.PublicKey
	in     Inbound
	closed bool           // under net.mu
	calls  sync.WaitGroup // Deliver calls in flight to this end
}

var _ Transport = (*memEnd)(nil)

// Send hands frame to the receiver's Deliver on the calling goroutine, as
// the receiver's transport would: checked against its pinned key and its
// Allowed. Like QUIC it returns once Deliver has; ctx is not consulted
// (Deliver returns when the receiver's loop stops).
func (e *memEnd) Send(_ context.Context, addr string, key ed25519.PublicKey, frame []byte) error {
	e.net.mu.Lock()
	to := e.net.ends[addr]
	switch {
	case e.closed:
		e.net.mu.Unlock()
		return errMemClosed
	case to == nil || to.closed:
		e.net.mu.Unlock()
		return errMemUnreachable
	case !to.key.Equal(key):
		e.net.mu.Unlock()
		return errMemKey
	}
	to.calls.Add(1) // under mu while open, so Close's Wait sees it
	e.net.mu.Unlock()
	defer to.calls.Done()
	if !to.in.Allowed(e.key) {
		return errMemNotAllowed
	}
	to.in.Deliver(e.key, slices.Clone(frame))
	return nil
}

func (e *memEnd) Addr() string { return e.addr }

func (e *memEnd) Close() error {
	e.net.mu.Lock()
	e.closed = true
	e.net.mu.Unlock()
	e.calls.Wait()
	return nil
}

// membership is a Config.StartMembership.
func (n *memNet) membership(self Advert, onChange func([]Sighting)) (Membership, error) {
	m := &memMember{net: n, self: self, onChange: onChange}
	n.mu.Lock()
	if _, dup := n.members[self.NodeID]; dup {
		n.mu.Unlock()
		return nil, fmt.Errorf("memnet: %s is already a member", self.NodeID)
	}
	n.members[self.NodeID] = m
	n.mu.Unlock()
	n.changed()
	return m, nil
}

// changed calls every open member's onChange with the membership now.
func (n *memNet) changed() {
	n.rounds.Lock()
	defer n.rounds.Unlock()
	n.mu.Lock()
	var notify []func([]Sighting)
	for _, m := range n.members {
		if !m.closed {
			notify = append(notify, m.onChange)
		}
	}
	n.mu.Unlock()
	for _, f := range notify {
		f(n.sightings())
	}
}

func (n *memNet) sightings() []Sighting {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Sighting, 0, len(n.members))
	for _, m := range n.members {
		state := StateAlive
		if m.closed {
			state = StateLeft
		}
		a := m.self
		a.Agents = slices.Clone(a.Agents)
		out = append(out, Sighting{Advert: a, State: state})
	}
	slices.SortFunc(out, func(a, b Sighting) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}

// memMember is one node's Membership on a memNet.
type memMember struct {
	net      *memNet
	onChange func([]Sighting)
	self     Advert // under net.mu
	closed   bool   // under net.mu
}

var _ Membership = (*memMember)(nil)

func (m *memMember) Members() []Sighting { return m.net.sightings() }
func (m *memMember) Addr() string        { return "memgossip:" + string(m.self.NodeID) }

func (m *memMember) UpdateMeta(a Advert) error {
	m.net.mu.Lock()
	if m.closed {
		m.net.mu.Unlock()
		return errMemClosed
	}
	m.self = a
	m.net.mu.Unlock()
	m.net.changed()
	return nil
}

func (m *memMember) Close() error {
	m.net.rounds.Lock() // a round under way finishes first: none reaches m after Close
	m.net.mu.Lock()
	already := m.closed
	m.closed = true
	m.net.mu.Unlock()
	m.net.rounds.Unlock()
	if !already {
		m.net.changed()
	}
	return nil
}

// stepClock is a Clock that moves only when the test steps it. Unlike
// time.Ticker its tickers drop nothing: Step hands each due ticker its tick
// and returns once the ticker's receiver took it, so a test knows the
// clock's time reached every loop.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*stepTicker
}

var _ Clock = (*stepClock)(nil)

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &stepTicker{clock: c, ch: make(chan time.Time), stopped: make(chan struct{}), every: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

// Step moves the clock d forward and delivers one tick to every ticker
// whose next tick is due (one, however many periods d spans).
func (c *stepClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	var due []*stepTicker
	for _, t := range c.tickers {
		if t.next.After(now) {
			continue
		}
		due = append(due, t)
		for !t.next.After(now) {
			t.next = t.next.Add(t.every)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		select {
		case t.ch <- now:
		case <-t.stopped:
		}
	}
}

type stepTicker struct {
	clock   *stepClock
	ch      chan time.Time
	stopped chan struct{}
	every   time.Duration
	next    time.Time // under clock.mu
}

func (t *stepTicker) C() <-chan time.Time { return t.ch }

func (t *stepTicker) Stop() {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	if i := slices.Index(t.clock.tickers, t); i >= 0 {
		t.clock.tickers = slices.Delete(t.clock.tickers, i, i+1)
		close(t.stopped)
	}
}
