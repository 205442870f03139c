// Package realnet is the real network under a node's replication: frames
// over QUIC with mutual TLS pinned to the node keys (sync/quicnet) and
// membership by memberlist gossip encrypted with the cluster key
// (sync/gossip), adapted to the seams of node/cluster.
//
// It lives apart from node/cluster so that what drives the replication loop
// without a network (the simulator, tests over an in-memory network) links
// neither quic-go nor memberlist. The node wires it:
//
//	cluster.Start(cluster.Config{
//		…
//		StartTransport:  realnet.Transport(quicAddr, id, log),
//		StartMembership: realnet.Membership(realnet.Gossip{BindAddr: gossipAddr, Join: join, ClusterKey: key}, log),
//	})
package realnet
