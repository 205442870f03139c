// Package cluster runs a node's replication: the pure replica.Engine driven
// by one goroutine over a transport for frames, a membership and a clock,
// and the node's memory service (Start, Cluster), or driven call by call
// by a simulator (NewStepped, Stepped).
//
// Those three are seams (seams.go), each declared here with only what the
// loop uses and a contract for blocking and concurrency: a Transport sends
// a frame to a member and hands arriving ones to Inbound.Deliver; a
// Membership lists the members and reports their changes; a Clock gives
// the time and the loop's ticker. Config.StartTransport and
// Config.StartMembership supply the first two and are required; the real
// ones, QUIC (sync/quicnet) and memberlist gossip (sync/gossip), are in
// node/cluster/realnet, which the node wires, so that this package links
// neither. Config.Clock left nil is the wall clock. Tests run whole
// clusters in one process over an in-memory network and a stepped clock
// (memnet_test.go, inmemory_test.go), and cut a partition with a transport
// wrapper, never a hook in Config; the same tests run over the real
// network in realnet_test.go.
//
// The loop owns the engine. Its inputs are local deltas (from the memory
// service, after they are durable), inbound frames, membership changes, a
// ticker and operator requests (status, sync now); after each input it acts
// on the engine's Ready: deltas that passed the engine's checks are applied
// through memory.Service.ApplyRemote (which checks clock skew, persists and
// reindexes), the ones it refuses are reported back with Advance (so the
// engine does not ack them), messages are encoded and handed to a per-peer
// sender, until the engine has nothing more (sync/replica doc.go, "The loop").
//
// Config.Observer, when set, is told what the loop measures (observe.go):
// each applied delta's lag from its newest write, live or from a sync
// answer; each sync this node asked for, from request to the answer's last
// message, and the state it brought; every frame's kind and size. Times
// come from Config.Clock; the syncs watched are bounded (maxSyncWatches)
// and forgotten with their peer. The node wires node/metrics to it; the
// simulator sets none.
//
// Every queue here is bounded. Local deltas wait in a channel of
// Config.LocalQueue; when it is full the namespace is marked for a digest
// sync with every peer instead of blocking the writer (agents never wait on
// the network). Each peer's sender has a channel of Config.SendQueue frames;
// a full channel drops the frame, which the engine's ack timeout turns into
// a digest sync. A send the transport fails is reported to the engine
// (replica.Engine.PeerUnreachable, at most once a tick per peer), whose
// broadcast trees then drop their link to that peer rather than push into
// it until the membership finds it dead. Inbound frames block the sending peer's Send (with QUIC,
// its stream) until the loop takes them, so a slow node slows its senders
// rather than growing a buffer.
//
// Two drivers run the same loop (loop.go): its handling of each input, of
// the engine's Ready and of the bindings is one code. A Cluster (Start) is
// the node's: a goroutine selects over the channels of the inputs above
// and a ticker, and a goroutine per peer sends. A Stepped (NewStepped) is
// the deterministic simulator's (package sim), which runs the real node
// over no network: no goroutine, channel reader or ticker; the caller
// feeds each input with a method (Deliver, SetMembers, Tick, Pump, Sync,
// RefreshAgents, Handover), and before it returns the loop has taken the
// local deltas waiting, acted on the engine until it has nothing ready and
// called the send function given to NewStepped for every frame, in the
// order the engine emitted them. Frames for a member not alive in the last
// SetMembers are dropped and counted, as a Cluster drops frames without a
// sender; Deliver refuses frames from such a member, as a transport does.
// Reading (Status, Members, Advert) steps nothing. Its contract is
// determinism: the same calls with the same inputs give byte-identical
// frames in the same order. So the loop reads the time only from
// Config.Clock.Now, draws randomness only from the engine's
// Config.Engine.Seed, and sorts whatever reaches a frame from a map (the
// peers that join, the peers a bindings frame goes to, the namespaces
// whose local deltas overflowed). The service it is hooked to must be
// deterministic too (memory.Config.Now and Rand; the simulator's
// store.MemKV).
//
// Which peers hold what: team and project namespaces replicate to every
// member whose agents may read them (by this node's policy), and an inbox
// (agent://TARGET/.inbox/WRITER/...) to the node hosting TARGET. Which
// agents a member hosts is never taken from what it advertises: every node
// claims its local principals with bindings signed by its key (bindings.go,
// acl.Binding), sends its claims to each member that joins (again, once
// the answer is overdue, until it hears from the member: the member's
// own probe, crossing, answers it), sends each BindingsInterval a digest
// of all it holds to a few members (bindingsSummaryFanout, in turns that
// are mutual: a pair's round is the same at both ends) that
// may not hold the same (the digest says how many: a node that holds fewer
// bindings than a peer, or as many but others, asks that peer for what it
// lacks by an index of short ids), and admits what it receives into its
// acl.Directory (first claim stands, a conflicting claim is refused and counted in
// Status.BindingConflicts, only a hand-over moves an agent). The directory
// is stored, so a node restarted alone still verifies the grants it holds,
// and it is the memory service's key lookup and author check: a record's
// author must be hosted by the node of the replica that wrote it.
//
// Why every node still holds every binding (issue 14's N=1,000 bytes and
// connections). Counted with temporary instrumentation of the policy and
// the lookups above (go test ./sim -run TestScaleFigures -scale 1000/20/0,
// one project namespace every node holds; counted per node as the peers
// whose binding a decision read): the content's own checks need few (the
// author checks read 1,998 (node, peer) bindings in all, about two a node;
// the namespace's grant signer is read through the key lookup, not
// counted apart), but the engine's choices among peers read all 999 of
// them. A namespace's readers are decided per peer as it joins
// (Policy.PeerMayRead for every member: 999,000 pairs; even a project
// namespace, which every agent reads, needs the peer's bound agents to say
// it hosts one); ReplicaMayWrite, asked of peers when the engine picks
// writers (Engine.writersOf scans every peer) and when it checks what they
// send, read ~700 a node, and the memory service's key lookup ~670. A peer
// whose binding a node lacks is neither reader nor writer to it (the
// policy finds no agent of it), so narrowing the exchange narrows those
// choices by itself. What it needs besides (stop 36's design (b)) is a
// bounded view to exchange bindings with (the overlay's, sync/epidemic),
// and a pull of the binding a refused delta lacked from its sender, which
// holds it or could not have accepted the delta. The pull is built
// (bindings_pull.go): a delta refused for its writer (the engine's
// replica.WriterError) or its authors (memory's checkRemoteAuthors,
// acl.ErrDenied) has its writers' bindings asked of its sender at once
// (wire.Message.BindingsOf, at most once a second per peer and replica),
// and admitting them lets the refused delta pass: the engine holds one
// whose writer is bound to no agent here (Rejection.Held,
// sync/replica/writerhold.go; the loop pulls those bindings again while
// it does, pullHeldWriters),
// and for the memory service's refusals the loop syncs the refused
// namespace again (noteRefused, resyncRefused: once a binding of a
// replica the refusal lacked comes, or at once for a refusal that does
// not say; the replicas include the signers of the delta's acl records
// that did not count for want of theirs); before, it waited for the digest exchange, up to
// BindingsInterval or, when the sender's digest round skipped this node,
// for a later one. The narrowed exchange is built too, as an option
// (Config.BindingsOnDemandAt, bindings_demand.go): no probes, digests or
// indexes, a reader's binding pulled from the member advertising it, a
// first claim admitted only from the one member advertising its agent.
// It sends 3% of the bindings frames at 1,000 nodes and cuts the
// connections a node makes to 78 on average; with the engine's hold its
// bytes at 1,000 nodes and 20 writes are 0.79 of the minimum against
// flooding's 1.66, but under loss and many writers it costs more than
// the bindings saved, so it is off by default (its "Measured").
//
// Every frame's namespace deltas are signed with the node key and every
// transaction the store commits is sealed with it (crdt.Seal); the engine
// checks both on arrival and accepts a namespace's content only from
// members that may write it (sync/replica/doc.go). A member's replica id
// derives from its key, which the transport pins (QUIC: the TLS
// certificate's key must be the one the membership advertised).
//
// A node restarted on new ports (issue 14: any sidecar on ephemeral ports)
// is reachable and caught up in well under a second, not after the
// failure detector retires its old incarnation (~30 s, and ~100 s when
// frames kept riding a QUIC connection to the dead address). Each start
// advertises a higher Advert.Incarnation (Config.Incarnation: the start
// time), and the membership lists the new incarnation beside the old one
// at once (sync/gossip names each start apart, since memberlist never
// moves a live name to a new address). The loop addresses one incarnation
// per node (incarnations.go): the one it addresses already, until a newer
// one proves the node's key at its address, then that one. The proof is
// the transport's (Prover: a QUIC handshake pinned to the key), so anyone
// who can announce members (whoever holds the cluster key) cannot move a
// live node's frames to an address of theirs: an announcement that never
// proves the key moves nothing, and frames never go to an unproved address
// while a trusted one is alive (and every send pins the key regardless).
// Once proved, the peer starts over as one that joins: its sender moves,
// the two exchange claims as nodes that join do, and the engine drops
// what was queued or in flight to the old incarnation and syncs every
// shared namespace with it (replica.Peer.Incarnation); the restarted node
// does the same with each peer it finds, so catch-up runs both ways. The
// old incarnation's key stays allowed to send until it is found dead: its
// frames are the node's. A node whose clock stepped back across a restart
// advertises a lower incarnation and is taken for the old one until that
// is found dead, as before.
package cluster
