// Package gossip finds the other nodes of a cluster and tells which are
// alive, using hashicorp/memberlist (SWIM: UDP probes and gossip, TCP
// push/pull) encrypted with the shared cluster key.
//
// Each node gossips small metadata ([Meta], at most 512 bytes): its node id,
// its ed25519 public key, its QUIC address and the names of its agents. The
// node id is the memberlist name and must derive from the key
// ([acl.NodeIDOf]); members whose metadata does not decode or whose key does
// not derive their name are ignored. That makes the gossiped key a safe pin
// for the QUIC transport (sync/quicnet), which then authenticates the peer
// itself. Nothing else travels through gossip: replication data goes over
// QUIC.
//
// Restarts. memberlist v0.7.0 never moves a live member to a new address:
// an alive message for a known name from another address is a conflict,
// refused whatever its incarnation number, until the old address has
// failed its probes and been declared dead (aliveNode in its state.go).
// A node restarted on new ports (a sidecar on ephemeral ports) would be
// unreachable for that long, ~30 s. So each start of a node has a name of
// its own: the node id and the start's [Meta.Incarnation] ([MemberName]),
// which a restart picks higher. The restarted node is a new member as soon
// as its join spreads, and [Gossip.Members] lists both incarnations, the
// old one until it is found dead. Which one to talk to is the caller's
// choice (node/cluster prefers the newest incarnation once its address has
// proved the key in a QUIC handshake); nothing here trusts an address.
//
//	key, err := gossip.LoadClusterKey("/etc/mnemo/cluster.key")
//	g, err := gossip.Start(gossip.Config{
//		BindAddr:  "0.0.0.0:7946",
//		Join:      []string{"10.0.0.5:7946"},
//		SecretKey: key,
//		Meta:      gossip.Meta{PublicKey: id.Public, QUICAddr: "10.0.0.7:7947", Agents: agents,
//			Incarnation: uint64(time.Now().UnixNano())}, // higher at each start
//		OnChange:  func(ms []gossip.Member) { events <- ms },
//	})
//	...
//	g.Leave(5 * time.Second)
//	g.Shutdown()
package gossip
