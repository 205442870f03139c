// Package cluster runs a node's replication: the pure replica.Engine driven
// by one goroutine over the real network (sync/quicnet for frames,
// sync/gossip for membership) and the node's Badger store.
//
// The loop owns the engine. Its inputs are local deltas (from the memory
// service, after they are durable), inbound frames, membership changes, a
// ticker and operator requests (status, sync now); after each input it acts
// on the engine's Ready: deltas that passed the engine's checks are applied
// through memory.Service.ApplyRemote (which checks clock skew, persists and
// reindexes), messages are encoded and handed to a per-peer sender.
//
// Every queue here is bounded. Local deltas wait in a channel of
// Config.LocalQueue; when it is full the namespace is marked for a digest
// sync with every peer instead of blocking the writer (agents never wait on
// the network). Each peer's sender has a channel of Config.SendQueue frames;
// a full channel drops the frame, which the engine's ack timeout turns into
// a digest sync. Inbound frames block the sending peer's QUIC stream until
// the loop takes them, so a slow node slows its senders rather than growing
// a buffer.
//
// Which peers hold what: team and project namespaces replicate to every
// member whose advertised agents may read them (by this node's policy), and
// an inbox (agent://TARGET/.inbox/WRITER/...) to the node advertising
// TARGET; writes are accepted from replicas whose node advertises an agent
// that may write, counting the signed acl records the delta itself carries
// (a grant travels inside the namespace it governs). A member's replica id
// derives from the public key its gossip metadata carries, and QUIC pins
// that key. The principal → node-key bindings learned from membership are
// stored, so a node restarted alone still verifies the grants it holds.
package cluster
