package cluster

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/mnemohq/mnemo/sync/gossip"
	"github.com/mnemohq/mnemo/sync/quicnet"
)

// The default seams: QUIC frames (sync/quicnet) and memberlist gossip
// (sync/gossip), built from the Config's address and key fields. This file
// is the only one here that knows them.

// sendTimeout bounds one QUIC send: quicnet.Send waits for a stream slot
// and the peer's handler for as long as its context allows, and a peer
// that stopped reading must not hold its sender forever (the frame counts
// as dropped; the engine's ack timeout repairs it).
const sendTimeout = 10 * time.Second

// leaveTimeout bounds how long Close waits for the leave announcement.
const leaveTimeout = time.Second

// withRealNetwork fills in StartTransport and StartMembership when they
// are nil.
func (c *Config) withRealNetwork(log *slog.Logger) {
	if c.StartTransport == nil {
		addr, id := c.QUICAddr, c.Identity
		c.StartTransport = func(in Inbound) (Transport, error) {
			t, err := quicnet.Listen(quicnet.Config{ListenAddr: addr, Identity: id, Logger: log, Allowed: in.Allowed, Handler: in.Deliver})
			if err != nil {
				return nil, err
			}
			return quicTransport{t}, nil
		}
	}
	if c.StartMembership == nil {
		cfg := gossip.Config{
			BindAddr: c.GossipAddr, Join: c.Join, SecretKey: c.ClusterKey, Logger: log,
			ProbeInterval: c.GossipProbeInterval, PushPullInterval: c.GossipPushPull,
		}
		c.StartMembership = func(self Advert, onChange func([]Sighting)) (Membership, error) {
			cfg.Meta = gossipMeta(self)
			cfg.OnChange = func(ms []gossip.Member) { onChange(sightings(ms)) }
			g, err := gossip.Start(cfg)
			if err != nil {
				return nil, err
			}
			return gossipMembership{g}, nil
		}
	}
}

// quicTransport is a quicnet.Transport as a Transport.
type quicTransport struct{ t *quicnet.Transport }

var _ Transport = quicTransport{}

func (q quicTransport) Send(ctx context.Context, addr string, key ed25519.PublicKey, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return q.t.Send(ctx, addr, key, frame)
}

func (q quicTransport) Addr() string { return q.t.Addr().String() }
func (q quicTransport) Close() error { return q.t.Close() }

// gossipMembership is a gossip.Gossip as a Membership.
type gossipMembership struct{ g *gossip.Gossip }

var _ Membership = gossipMembership{}

func (m gossipMembership) Members() []Sighting       { return sightings(m.g.Members()) }
func (m gossipMembership) UpdateMeta(a Advert) error { return m.g.UpdateMeta(gossipMeta(a)) }
func (m gossipMembership) Addr() string              { return m.g.LocalAddr() }

func (m gossipMembership) Close() error {
	_ = m.g.Leave(leaveTimeout) // others then see StateLeft at once, not StateDead later
	return m.g.Shutdown()
}

func gossipMeta(a Advert) gossip.Meta {
	return gossip.Meta{NodeID: a.NodeID, PublicKey: a.PublicKey, QUICAddr: a.Addr, Agents: a.Agents}
}

func sightings(ms []gossip.Member) []Sighting {
	out := make([]Sighting, 0, len(ms))
	for _, m := range ms {
		state := StateDead
		switch m.State {
		case gossip.StateAlive:
			state = StateAlive
		case gossip.StateLeft:
			state = StateLeft
		}
		out = append(out, Sighting{State: state,
			Advert: Advert{NodeID: m.NodeID, PublicKey: m.PublicKey, Addr: m.QUICAddr, Agents: m.Agents}})
	}
	return out
}
