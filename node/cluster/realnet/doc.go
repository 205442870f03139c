// Package realnet is the real network under a node's replication: frames
// over QUIC with mutual TLS pinned to the node keys (sync/quicnet) and
// membership by memberlist gossip encrypted with the cluster key
// (sync/gossip), adapted to the seams of node/cluster.
//
// The transport is also the loop's cluster.Prover (a QUIC handshake pinned
// to the key), and each start's incarnation rides in the gossip metadata
// and the member name, so that a node restarted on new ports is addressed
// as soon as it has proved its key there (node/cluster doc.go).
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
