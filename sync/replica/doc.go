// Package replica is the replication engine: transport-agnostic and pure. It
// takes inputs — a local delta (LocalDelta), a message from a peer (Step), a
// tick carrying the time (Tick), a membership change (SetPeers) — and
// returns outputs through Ready: messages to send and deltas to apply. It
// starts no goroutines, opens no sockets and reads no clock, so the node
// drives it over QUIC and Badger and the simulator drives the very same code
// over a virtual network.
//
// # Delivery
//
// A local delta goes straight to every peer that should hold its namespace
// (Policy.PeerMayRead); peers do not forward deltas they received, so a
// delta never goes back to where it came from, and the bytes on the wire are
// the minimum K·(N−1)·delta for K updates on N nodes when nothing is lost.
// What is lost or missed is repaired by digest sync.
//
// Each peer has a bounded queue (Config.QueueMaxDeltas and QueueMaxBytes).
// Deltas of one namespace are joined while they wait (so repeated updates of
// one memory cost one entry's bytes). At most Config.Window batches are in
// flight unacknowledged per peer; a stalled peer therefore stops draining its
// queue, and when the queue would overflow it is dropped whole and the pair
// falls back to digest sync for the namespaces it held. Memory per peer is
// bounded by the queue bounds whatever the backlog.
//
// # Digest sync
//
// SyncRequest carries the requester's causal context per namespace (a
// version vector plus a few cloud dots: a few bytes per replica) and a digest
// of its retracted ids. The answer carries only what is missing: the records
// holding a dot outside that context, in batches. A batch's context claims
// the dots both sides have seen plus the batch's own dots, so a dot the
// requester still holds in a sent record but this side removed is dropped
// there; the last batch also claims the dots removed here that the requester
// never saw, and carries the retracted ids when the digests differ. No batch
// claims a dot of a record still to come, so a lost batch is found missing
// again by the next sync. Sync runs on queue overflow, after an ack timeout
// (unless this side has answered a sync of that namespace from the peer
// since the batch left: that answer already carried what the batch did),
// on request (RequestSync: catch-up), when a peer joins, and every
// AntiEntropyInterval with one random peer. Requests ask for the responder's
// context back, so one exchange repairs both directions.
//
// Finding a record through its dots needs every change to a record to add a
// dot that stays: the node writes updated_at with every edit, and an edit
// that removes an element also leaves a witness dot (crdt.WitnessSet) that
// a concurrent field write cannot overwrite.
//
// # Order
//
// A live delta claims the dots it overwrote. Applied before the delta that
// made those dots, it would hide that delta's effects from every later
// comparison of contexts, so a receiver holds it (Config.PendingMax, oldest
// dropped into a digest sync) until crdt.Map.DependsOn holds; the sender
// marks where its own new dots begin (wire.NamespaceDelta.From). A peer that
// has just become a reader of a namespace with history gets no live delta of
// it before its first sync answer, which carries them: nothing reaches it
// ahead of the signed grant that authorises it.
//
// # Checks on arrival
//
// Every namespace delta is decoded with crdt limits, its namespace must be
// one this node holds (Policy.ShouldHold), and every dot in its records must
// belong to a replica that may write the namespace (Policy.ReplicaMayWrite);
// retracts need the sending peer's replica to hold write.
// A failing namespace delta is rejected whole, counted, and reported in
// Ready.Rejected with the peer's id; nothing of it applies. Causal-context
// claims themselves are not attributed to authors: a cluster member could
// claim dots it never saw, which membership (mutual TLS and the cluster key)
// is trusted to prevent.
package replica
