package realnet

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/sync/gossip"
	"github.com/mnemohq/mnemo/sync/quicnet"
)

// sendTimeout bounds one QUIC send: quicnet.Send waits for a stream slot
// and the peer's handler for as long as its context allows, and a peer
// that stopped reading must not hold its sender forever (the frame counts
// as dropped; the engine's ack timeout repairs it).
const sendTimeout = 10 * time.Second

// leaveTimeout bounds how long Close waits for the leave announcement.
const leaveTimeout = time.Second

// Transport returns a cluster.Config.StartTransport: QUIC listening on
// listenAddr ("" is quicnet.DefaultListenAddr, loopback on any port), with
// mutual TLS on id, refusing keys the loop does not allow. log receives
// the transport's events; nil discards them.
func Transport(listenAddr string, id acl.Identity, log *slog.Logger) func(cluster.Inbound) (cluster.Transport, error) {
	return func(in cluster.Inbound) (cluster.Transport, error) {
		t, err := quicnet.Listen(quicnet.Config{ListenAddr: listenAddr, Identity: id, Logger: log, Allowed: in.Allowed, Handler: in.Deliver})
		if err != nil {
			return nil, err
		}
		return quicTransport{t}, nil
	}
}

// Gossip configures Membership. ClusterKey is required; every other field
// may stay zero.
type Gossip struct {
	// BindAddr is memberlist's host:port (UDP and TCP). Default
	// gossip.DefaultBindAddr (loopback, any port).
	BindAddr string
	// Join lists gossip addresses of members to contact at start; none
	// starts a cluster of one.
	Join []string
	// ClusterKey is 16, 24 or 32 bytes (gossip.ParseClusterKey); it
	// encrypts and authenticates all gossip.
	ClusterKey []byte
	// ProbeInterval between failure-detection probes and PushPullInterval
	// between full state exchanges (shorter: faster detection on a LAN, in
	// tests). Zero keeps gossip.DefaultProbeInterval and
	// gossip.DefaultPushPullInterval.
	ProbeInterval, PushPullInterval time.Duration
}

// Membership returns a cluster.Config.StartMembership: memberlist gossip
// as cfg says, advertising what the loop hands it. log receives
// memberlist's log; nil discards it.
func Membership(cfg Gossip, log *slog.Logger) func(cluster.Advert, func([]cluster.Sighting)) (cluster.Membership, error) {
	return func(self cluster.Advert, onChange func([]cluster.Sighting)) (cluster.Membership, error) {
		g, err := gossip.Start(gossip.Config{
			BindAddr: cfg.BindAddr, Join: cfg.Join, SecretKey: cfg.ClusterKey, Logger: log,
			ProbeInterval: cfg.ProbeInterval, PushPullInterval: cfg.PushPullInterval,
			Meta:     gossipMeta(self),
			OnChange: func(ms []gossip.Member) { onChange(sightings(ms)) },
		})
		if err != nil {
			return nil, err
		}
		return gossipMembership{g}, nil
	}
}

// quicTransport is a quicnet.Transport as a cluster.Transport.
type quicTransport struct{ t *quicnet.Transport }

var (
	_ cluster.Transport = quicTransport{}
	_ cluster.Prover    = quicTransport{}
)

func (q quicTransport) Send(ctx context.Context, addr string, key ed25519.PublicKey, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return q.t.Send(ctx, addr, key, frame)
}

// Prove is the TLS handshake with addr, pinned to key.
func (q quicTransport) Prove(ctx context.Context, addr string, key ed25519.PublicKey) error {
	return q.t.Prove(ctx, addr, key)
}

func (q quicTransport) Addr() string { return q.t.Addr().String() }
func (q quicTransport) Close() error { return q.t.Close() }

// gossipMembership is a gossip.Gossip as a cluster.Membership.
type gossipMembership struct{ g *gossip.Gossip }

var _ cluster.Membership = gossipMembership{}

func (m gossipMembership) Members() []cluster.Sighting       { return sightings(m.g.Members()) }
func (m gossipMembership) UpdateMeta(a cluster.Advert) error { return m.g.UpdateMeta(gossipMeta(a)) }
func (m gossipMembership) Addr() string                      { return m.g.LocalAddr() }

func (m gossipMembership) Close() error {
	_ = m.g.Leave(leaveTimeout) // others then see StateLeft at once, not StateDead later
	return m.g.Shutdown()
}

func gossipMeta(a cluster.Advert) gossip.Meta {
	return gossip.Meta{NodeID: a.NodeID, PublicKey: a.PublicKey, QUICAddr: a.Addr, Agents: a.Agents, Incarnation: a.Incarnation}
}

func sightings(ms []gossip.Member) []cluster.Sighting {
	out := make([]cluster.Sighting, 0, len(ms))
	for _, m := range ms {
		state := cluster.StateDead
		switch m.State {
		case gossip.StateAlive:
			state = cluster.StateAlive
		case gossip.StateLeft:
			state = cluster.StateLeft
		}
		out = append(out, cluster.Sighting{State: state,
			Advert: cluster.Advert{NodeID: m.NodeID, PublicKey: m.PublicKey, Addr: m.QUICAddr, Agents: m.Agents, Incarnation: m.Incarnation}})
	}
	return out
}
