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
//	key, err := gossip.LoadClusterKey("/etc/mnemo/cluster.key")
//	g, err := gossip.Start(gossip.Config{
//		BindAddr:  "0.0.0.0:7946",
//		Join:      []string{"10.0.0.5:7946"},
//		SecretKey: key,
//		Meta:      gossip.Meta{PublicKey: id.Public, QUICAddr: "10.0.0.7:7947", Agents: agents},
//		OnChange:  func(ms []gossip.Member) { events <- ms },
//	})
//	...
//	g.Leave(5 * time.Second)
//	g.Shutdown()
package gossip
