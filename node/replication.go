package node

import (
	"fmt"

	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/cluster/realnet"
	"github.com/mnemohq/mnemo/node/metrics"
	"github.com/mnemohq/mnemo/sync/gossip"
	"github.com/mnemohq/mnemo/sync/replica"
)

// Replication is enabled by a cluster key: the node then joins the cluster
// (gossip on GossipAddr, frames on QUICAddr) and replicates the team and
// project namespaces its peers may read, and the inboxes addressed to their
// agents. Without a key the node is a single, complete memory service.

var _ cluster.Observer = (*metrics.Metrics)(nil)

// replicating reports whether the config asks for replication.
func (c *Config) replicating() bool { return len(c.ClusterKey) > 0 }

func (c *Config) validateReplication() error {
	if !c.replicating() {
		if c.GossipAddr != "" || c.QUICAddr != "" || len(c.Join) > 0 {
			return fmt.Errorf("node: --gossip, --quic and --join need a cluster key (--cluster-key FILE)")
		}
		return nil
	}
	if _, err := gossip.ParseClusterKey(c.ClusterKey); err != nil {
		return fmt.Errorf("node: cluster key: %w", err)
	}
	return nil
}

// startReplication starts the cluster loop; the caller holds the lock.
func (n *Node) startReplication() error {
	if !n.cfg.replicating() {
		return nil
	}
	key, err := gossip.ParseClusterKey(n.cfg.ClusterKey)
	if err != nil {
		return fmt.Errorf("node: cluster key: %w", err)
	}
	id := n.Identity()
	trees := n.cfg.TreeThreshold
	if trees == 0 {
		trees = -1 // direct sends (Config.TreeThreshold)
	}
	netLog := n.log.With("component", "cluster")
	transport := realnet.Transport(n.cfg.QUICAddr, id, netLog)
	if wrap := n.cfg.WrapTransport; wrap != nil {
		quic := transport
		transport = func(in cluster.Inbound) (cluster.Transport, error) {
			tr, err := quic(in)
			if err != nil {
				return nil, err
			}
			return wrap(id.NodeID(), tr), nil
		}
	}
	cl, err := cluster.Start(cluster.Config{
		Service:         n.svc,
		Identity:        id,
		Agents:          n.Principals,
		Logger:          n.log,
		Engine:          replica.Config{QueueMaxDeltas: n.cfg.QueueMaxDeltas, AntiEntropyInterval: n.cfg.AntiEntropy, TreeThreshold: trees},
		StartTransport:  transport,
		StartMembership: realnet.Membership(realnet.Gossip{BindAddr: n.cfg.GossipAddr, Join: n.cfg.Join, ClusterKey: key}, netLog),
		Observer:        n.meter,
		// 0 floods at any size, as cluster.Config's zero does.
		BindingsOnDemandAt: n.cfg.BindingsOnDemandAt,
	})
	if err != nil {
		return err
	}
	n.cl = cl
	n.access.onNewPrincipal = func() { go func() { _ = cl.RefreshAgents() }() }
	n.access.hostedElsewhere = cl.HostedElsewhere
	n.log.Info("replicating", "node", n.NodeID(), "gossip", cl.GossipAddr(), "quic", cl.QUICAddr())
	return nil
}

// Cluster is the replication loop, or nil on a node without a cluster key.
func (n *Node) Cluster() *cluster.Cluster { return n.cl }
