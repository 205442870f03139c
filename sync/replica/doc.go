// Package replica is the replication engine: transport-agnostic and pure. It
// takes inputs — a local delta (LocalDelta), a message from a peer (Step), a
// tick carrying the time (Tick), a membership change (SetPeers) — and
// returns outputs through Ready: messages to send and deltas to apply. It
// starts no goroutines, opens no sockets and reads no clock, so the node
// drives it over QUIC and Badger and the simulator drives the very same code
// over a virtual network.
//
// # The loop
//
// The driver owns the loop, as with etcd-io/raft's Ready and Advance. After
// each input it takes Ready, applies every Ready.Apply in order (the node
// through its own gates: clock skew, acl, surgery, authors), reports the
// deltas it refused with Advance, sends Ready.Messages, and takes Ready again
// while HasReady: Advance emits acks and releases held deltas. Both the node
// (node/cluster) and the simulator drive the engine this way. Decisions:
//
//   - An ack means the batch arrived and applied. The ack of a live batch
//     that brought something to apply is emitted by Advance, not by Step; a
//     batch with a refused delta is not acked at all, so the sender's ack
//     timeout falls back to a digest sync of its namespaces, which retries
//     the delta. Refusals are mostly passing (a clock ahead, a grant or a
//     binding not here yet): the timeout is the retry delay, and a lasting
//     refusal costs one refused sync answer per batch. (The wire has no
//     negative ack; a sync asked for at once would mostly repeat the
//     refusal.) One refusal asks at once: a live delta whose author this
//     node does not know may write (ErrNotAllowed) makes it ask the author
//     for a sync of that namespace, unless one is owed (askAuthority): the
//     grant travels in the namespace, so the answer brings it with the
//     writes, in a round trip where the batch's fallback took AckTimeout.
//     The request goes even when this node cannot tell the author may read
//     the namespace (a context, no content). In mnemo sim --nodes 100 --ops
//     1000 --loss 0.1 --partitions 3 --tree-threshold -1, seeds 1–3,
//     refused live deltas 1,649/1,548/1,425 → 167/208/219, for 1–2% more
//     bytes (the fallbacks, mostly a partition's, stay). Since
//     writerhold.go such a delta (and a sync answer or relayed delta
//     refused the same way) whose writer's node hosts no agent known
//     here is held for WriterHoldFor first, checked again when a
//     binding or a delta of its namespace comes, and the author asked
//     only if its right has not come by then: with bindings
//     pulled on demand (node/cluster), go test ./sim -run
//     TestScaleFigures -scale 1000/20/0 -bindings-on-demand 2 went from
//     1.83 to 0.79 bytes on the wire / minimum, the re-sent content gone.
//   - A refused delta is counted as a rejection of its sender and reported in
//     Ready.Rejected, wrapping the driver's error in ErrRefused. It is not
//     what this node has: held deltas are released only on account of the
//     state itself, never of deltas handed out whose outcome is unknown.
//   - A held delta's batch is acked when it is held (nothing of it is left to
//     apply then); if the node refuses it once released, the refusal is
//     reported and anti-entropy repairs it.
//   - Errors of State while answering or asking for a sync are counted
//     (PeerStats.StateErrors) and reported in Ready.Errors; that namespace
//     of the sync is not answered at all (no batch goes without the removal
//     claims, known only at the walk's end), and the requester's next sync
//     asks again.
//   - A Ready taken without Advance since the last one counts the earlier
//     deltas as all applied (a driver that never refuses).
//
// # Delivery
//
// A local delta of a namespace whose replica set (this node and the peers
// that may read it, Policy.PeerMayRead) is smaller than
// Config.TreeThreshold goes straight to every such peer; peers do not
// forward deltas they received, so a delta never goes back to where it
// came from, and the bytes on the wire are the minimum K·(N−1)·delta for K
// updates on N nodes when nothing is lost. What is lost or missed is
// repaired by digest sync. A larger replica set carries live deltas over
// a broadcast tree instead ("Trees" below).
//
// Each peer has a bounded queue (Config.QueueMaxDeltas and QueueMaxBytes).
// Deltas of one namespace are joined while they wait (so repeated updates of
// one memory cost one entry's bytes). At most Config.Window batches are in
// flight unacknowledged per peer; a stalled peer therefore stops draining its
// queue, and when the queue would overflow it is dropped whole and the pair
// falls back to digest sync for the namespaces it held. Memory per peer is
// bounded by the queue bounds whatever the backlog. A batch that comes
// again after its ack left tells the receiver an ack was lost: its acks
// to that peer then go twice for a minute (retransmit.go: bytes on the
// wire / minimum 2.04/1.93/1.91 → 2.00/1.91/1.90 on the run quoted in
// "Just become a reader", direct sends).
//
// # Digest sync
//
// SyncRequest carries the requester's causal context per namespace (a
// version vector plus a few cloud dots: a few bytes per replica) and a digest
// of its retracted ids. The answer carries only what is missing: the records
// holding a dot outside that context, in batches. A batch's context claims
// the dots both sides have seen plus the batch's own dots, so a dot the
// requester still holds in a sent record but this side removed is dropped
// there; every batch also claims the dots removed here that the requester
// never saw (a batch that carried a record past a removal without them would
// let the requester take the removed dot back from a peer that never saw the
// removal, and keep it for good), and the last carries the retracted ids
// when the digests differ. An answer that claims such removed dots goes
// whole, in one message up to Config.WholeAnswerMaxBytes: a join drops
// only what the delta's own records hold, so a batch claiming a removed
// dot without the record it was removed from, arriving when that
// record's batch is lost, would move the requester past a removal the
// record never saw (sim/doc.go, Found 6; a larger answer still splits). No
// batch claims a dot of a record still to come,
// so a lost batch is found missing again by the next sync. The answer ends
// with the responder's context, and the requester holds its request owed
// until its own context covers that one (if the responder may write the
// namespace): a request left unanswered is asked again, the first time
// after twice the batches' first-resend wait (2 s by default: a loss costs
// a couple of round trips, not AckTimeout), then after AckTimeout, at most
// four times in a row, not left to anti-entropy's random pick of a peer;
// each batch of an answer still arriving restarts the wait
// (syncRetryWait), and an answer whose last message came while a batch
// of it was lost is asked again after the short wait once more (the link
// works: no partition to span; asking.lostBatch; only once, since a
// responder that withholds the content looks the same). Measured
// against AckTimeout for every retry (CI sweep, 500 mixed seeds): mean
// time to converge 5.2 → 3.9 s, median 1.8 → 0.4 s, worst 79.6 → 79.5
// s, bytes +4.8%; the scale figure's node that missed a
// namespace's tree got its first sync at 2.8 s instead of 10.3 s. An
// answer the node refuses for clock skew (its clock behind the writer's
// beyond the bound it tolerates) came all the same: its request gets that
// try back, up to syncTries times (skewRefused), since a writer still
// writing makes every answer carry a record still too new (CI sweep:
// worst 56.1 → 53.9 s, mean 2.67 → 2.37 s, p99 22.9 → 16.5 s; seed 1158,
// a holder of none of the namespace that gave up after four: 56.1 → 5.9 s).
//
// Sync runs on queue overflow, after an ack timeout and the batch's
// retransmissions (retransmit.go; unless this side has answered a sync of
// that namespace from the peer since the batch left: that answer already
// carried what the batch did), on request (RequestSync: catch-up), when a
// peer joins or comes back as a new incarnation (Peer.Incarnation:
// restarted, its old queue and batches in flight dropped), for what a
// broadcast tree lost (gap.go, "Trees"), and every AntiEntropyInterval
// for each namespace held, with one random peer among those that may read
// it, among its writers if this node may not write it (antiEntropy: a
// namespace few members share gets a round as often as one every member
// reads, and a reader does not spend it on another reader, since only
// writers send content; the requests to one peer leave as one message;
// mnemo sim --mixed --sweep 500 --seed 1000, one random peer for all
// namespaces → a reader each → a writer for readers: worst 79.5 → 17.8 →
// 10.9 s, mean 1.85 → 1.44 → 1.36 s, bytes +0.8%, +0.4%). Requests ask for the
// responder's context back, so one exchange repairs both directions; so
// of a pair that both see a join, the smaller id asks at once and the
// other only if no request came within RetransmitAfter (a join only it
// saw, or a request lost). The responder holds the answer to its context
// owed the same way (CauseReverse), if the requester may write the
// namespace; a responder that holds none of the namespace cannot tell who
// may (the grants travel in it), and takes a requester whose context
// holds dots of the requester's own replica for a writer (mayOwe): before,
// a writer's join answer to such a holder, lost, was owed by no one, and
// the simulator found a member lacking a namespace's whole history for
// 133.8 s, until the writer's anti-entropy picked it (seed 1285, with
// sync/epidemic's lone node asking again; CI sweep, 500 mixed seeds:
// worst 79.4 → 56.1 s, mean 3.9 → 2.6 s, p99 49.5 → 22.9 s, bytes -2.2%).
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
// marks where its own new dots begin (wire.NamespaceDelta.From). A held
// delta's batch is acked at once (it arrived), so one the node refuses
// once released (a clock behind the writer's beyond the skew bound) is
// retried by a digest sync with its sender (CauseHeld), not by the
// sender's ack timeout (CI sweep: worst 53.9 → 28.7 s, p99 16.5 → 12.8
// s; seed 1440, two such deltas lacked for 53.9 s: 8.4 s). A peer that
// has just become a reader of a namespace with history gets no live delta of
// it before its first sync answer, which carries them: nothing reaches it
// ahead of the signed grant that authorises it.
//
// "Just become a reader" is a peer this node once found could not read the
// namespace (when the peer joined, when the agents it hosts changed, or at
// an earlier local write) and that may now: a grant, or a binding arrived.
// A peer this node never asked about — it did not hold the namespace then,
// and came to hold it from others since — is taken for the reader it
// already was, and a first local write goes to it live. (Every such first
// write used to sync with every reader, though nearly all held the
// namespace: in mnemo sim --nodes 100 --ops 1000 --seed 1 --loss 0.1
// --partitions 3 --tree-threshold -1, where each node learns most
// namespaces from their creator after its peers joined, 17,392 sync
// requests and ~40 MB of the 65 MB of sync frames; 24 MB since, and bytes
// on the wire / K·(N−1)·delta 2.99 → 2.20. The genuine new reader is found
// by the writer that granted it, which had asked about it at every write
// before; a live delta reaching a reader still without the grant is
// refused, and askAuthority repairs that in one exchange.) Over a
// broadcast tree too, since the tree's losses have repairs of their own
// (gap.go, "Trees"). Until then a first write there synced every reader
// never asked about, RetransmitAfter later: in mnemo sim --nodes 100
// --ops 1000 --loss 0.1 --partitions 3, seed 1, 16,974 of the 23,632
// namespaces asked for in sync requests, and each reader was sent back
// whatever it lacked then, mostly what the tree was still bringing it
// (sync answers 40.3 MB). They repaired the tree's losses, partitions'
// above all, by chance: without them and without gap.go the slowest
// node converged 95 s after the last fault (seed 1), and the sim's
// per-second count of holders lacking dots showed ~300 of them lacking
// ~10,000 dots of a partition that had healed, repaired only as
// anti-entropy happened to pick a writer.
//
// Every writer that finds a peer just became a reader asks it for a sync,
// and the reader's context is empty in each request, so each writer sent
// it the whole namespace. One writer now asks at once, picked by a hash of
// the reader and the namespace among the writers this node knows of
// (askNewReader; nodes with the same membership pick the same); the others
// wait RetransmitAfter, as the larger id of a join does, and then send
// only what the reader still lacks. go test ./sim -run TestScaleFigures
// -scale 1000/100/0.1, db48c32 → this: bytes on the wire / minimum 4.94 →
// 3.38 (sync frames 663 → 269 MB; unasked sync answers 689 → 253 MB),
// peak RSS 8.83 → 7.82 GB, same digest, but convergence after the last
// fault 1.7 → 9.8 s and rounds 8.56 → 11.87x in link latencies; mnemo sim
// --mixed --sweep 500 --seed 1000 against 2cf44c2, both at once: bytes
// −2.5%, mean 1.36 → 1.52 s, worst 10.9 → 16.6 s; 100×1000 seeds 1/2/3,
// bytes/minimum 2.84/2.83/2.72 → 2.79/2.77/2.65.
//
// The writers pick the same one only if they know the same writers, and
// while bindings still spread after a start they do not: at 300 simulated
// nodes a quarter of the new readers were sent the whole namespace two to
// four times, by writers asking at the same instant. So the reader
// dedupes: a node holding none of a namespace that told one requester its
// empty context tells no other for RetransmitAfter (Engine.emptyTold),
// and asks each of those itself RetransmitAfter later (joinWait), with
// what the first copy brought by then. (Leaving them to ask again was not
// enough: a requester whose request is not retried, when the one told
// sends nothing, left a node of mnemo sim --mixed --seed 7272 without a
// namespace for 126.6 s.) Measured against 21fa92a: go test ./sim -run
// TestScaleFigures -scale 300/20/0, bytes/minimum 1.93 → 1.78 (sync
// frames 14.3 → 11.7 MB); -scale 1000/20/0 1.78 → 1.61 (173 → 138 MB).
//
// # Checks on arrival
//
// A peer is known by the node key its frames are authenticated with (the
// driver's transport: QUIC with mutual TLS), its replica id derives from
// that key, and the agents it hosts (Peer.Principals) come from verified
// binding records, never from what it advertises. Every namespace delta is
// then checked, and rejected whole, counted and reported in Ready.Rejected
// with the peer's id if any check fails; nothing of a rejected delta applies:
//
//   - it is signed by the peer's key for the message kind it came in
//     (ErrBadSignature), and decodes within crdt limits;
//   - its namespace is one this node holds (Policy.ShouldHold, ErrNotHeld);
//   - every dot its records hold is covered by a valid seal of the replica
//     it names (crdt.Map.VerifySeals, crdt.ErrBadSeal): a relayed record is
//     its authors', and nobody can forge a dot in another replica's name;
//   - every such replica may write the namespace (Policy.ReplicaMayWrite,
//     counting acl records the delta carries, ErrNotAllowed);
//   - a live delta holds only its sender's own writes (ErrNotAuthor);
//   - the sender itself may write the namespace (ErrNotAllowed).
//
// A delta relayed over a tree is checked the same way before the tree may
// deliver or forward it, naming its author (wire.NamespaceDelta.Author)
// where these name the sender: the author's signature, only the author's
// writes, the author may write. The relay itself need only be a peer that
// may read the namespace ("Trees").
//
// # Trees
//
// A namespace whose replica set has Config.TreeThreshold members or more
// (default 8: below it the tree's five links are most of the set, and a
// tree saves nothing and adds hops; mnemo node turns trees off unless
// node.Config.TreeThreshold says otherwise, and an engine without
// Config.Self has none) carries this node's live deltas over
// an epidemic broadcast tree (sync/epidemic: Plumtree over a HyParView
// active view of five links), so a write costs its writer about five
// sends, not N−1, and every holder receives it about once. tree.go drives
// one epidemic.Node per namespace inside the engine; its messages go out
// as wire.KindTree messages among Ready.Messages, so a driver needs
// nothing new. Decisions:
//
//   - The payload is the author's live delta signed as for a direct send
//     (KindDeltas) with the author's node id (which the signature does
//     not name); its id is the first 16 bytes of the SHA-256 of its
//     canonical bytes (wire.NamespaceDelta.RelayBytes, wire.RelayID),
//     computed by every receiver, never read from the wire. Relays
//     forward the bytes unchanged.
//   - A relayed delta is checked against its author ("Checks on arrival")
//     before the tree steps it, so a node relays only what it would apply.
//     A relay whose bytes fail a check no honest relay lets through
//     (signature, seals, authorship, decoding) altered them: the payload
//     is dropped, the rejection counted against the relay, and the relay
//     leaves this node's tree for good (until it restarts); the payload
//     comes by another link. A refusal of this node's own view (the author
//     may not write here, yet) drops the payload only.
//   - One overlay per namespace, of its readers only: a tree is offered
//     (epidemic Hint) the peers that may read the namespace and reports
//     failed those that no longer may (on each local delta at or above the
//     threshold, membership change and anti-entropy round, and when a sync
//     answer first brings the namespace: startTrees). Tree messages
//     from a peer that may not read the
//     namespace are dropped, and a payload is sent only to a peer that may
//     read it now — else it is withheld and the peer dropped from the
//     tree: no relay sends a memory to a node whose principal may not read
//     it (DESIGN.md invariant 3). A tree per replica set (shared by the
//     namespaces of one set) would save links; a namespace's set changes
//     with every grant, which would move it between overlays. The links
//     add up: in mnemo sim --nodes 100 --ops 1000 --loss 0.1 --partitions
//     3 (five namespaces) a node exchanged tree payloads, announcements
//     and repairs with 30 peers over the run (at most 48), and overlay
//     upkeep (joins, neighbours, shuffles) with 75; one namespace alone
//     gives 8 (at most 14). Connections O(log N) per node need one
//     overlay per node that every namespace's tree uses, each tree's
//     links only among its readers.
//   - Only this node's own sends follow the threshold: a node takes part
//     in the tree of any namespace it holds once a reader speaks to it of
//     it, so nodes that count the set differently for a while still
//     receive each other's deltas. A writer whose tree has no link yet (the
//     first write, or every link lost) sends direct (TreeStats.Direct).
//   - Acks, the per-peer queues and their digest-sync fallback stay for
//     direct sends; a tree-carried delta is not acked. What the tree
//     loses — a payload it gives up (GraftTries, MaxMissing), never hears
//     of (every copy and announcement to a node lost, ~p^5), or that a
//     partition kept from the other side — is repaired by digest syncs
//     the engine asks for itself (gap.go): a payload the tree gave up
//     syncs with one of its announcers (CauseGaveUp), and a reader's
//     context (a reader sends no content) that holds dots this node lacks
//     makes it ask the author of most of them (CauseGap), whose answer
//     brings everything of the namespace this node lacks, each only while
//     no writer owes this node a sync of the namespace already. A tree
//     link that speaks again after two seconds of silence while this node
//     sent it the tree's traffic is only a candidate heal (a leaf that is
//     only pushed to is silent too): each tree announces again to the
//     peer a few of the payloads it sent it in the silence (epidemic
//     Reannounce; the latest, a second apart, none under way), and a want
//     of one of them is the evidence that the link lost them: that tree's
//     namespace is synced with that peer (CauseHeal), per link, whether a
//     writer owes a sync or not (one peer per namespace per heal, and
//     none while a writer owed one, left readers across a one-sided
//     partition that never noticed a silence lacking writes: see
//     TestOneSidedPartitionReadersConverge). The wanted payloads are
//     not sent (forwarded as late payloads, with the pull grafting links,
//     2,300 more wants made 9,200 more payload sends on seed 1). What a
//     sync brings does not go over the trees, so a sync that repaired 64
//     dots or more (a heal's, a spread's, a gap's, or content a requester
//     sent unasked) makes this node tell its context to the tree's links
//     in a sync request (CauseSpread), at most once per tree per two
//     seconds: each link that lacks some of it gets it and tells its own
//     links in turn. Measured against the commit before (which had the
//     false heals and the ask of a holder of none, below): mnemo sim
//     --nodes 30 --ops 500, seeds 1-4 (no partition), sync requests
//     674/718/708/616 → 341/411/405/383 (the candidate heals asked 1,048
//     namespaces on seed 1 before either commit, 58 answered), bytes /
//     minimum 2.52/2.35/2.42/2.41 → 2.45/2.27/2.32/2.33, time to converge
//     after the last op 0.4/2.8/4.5/0.5 → 0.4/0.4/0.8/0.4 s; with --loss
//     0.1 --partitions 3 at 100 nodes, seeds 1/2/3, 3.01/3.05/2.97 →
//     3.03/3.08/3.02 and after the last fault 7.5/7.5/25.1 → 15.6/35.2/
//     45.3 s; the CI sweep's worst 79.5 → 99.6 s (500/500 clean), 79.4
//     s once a review's fixes were in (a probe's own re-announcement is
//     no sample of a new silence, or an idle cluster re-announced for as
//     long as ids were kept: TestIdleClusterStopsProbing). The
//     false heals had repaired, by chance, tails a lost payload left (a
//     writer's last writes, seen as the last to converge), which now wait
//     for anti-entropy or a later write: open. A silence counts only on
//     the trees' payloads,
//     announcements, wants, grafts and prunes: counted on every frame
//     (bindings, shuffles go to peers that need not answer), seed 1 saw
//     9,381 "heals" in three partitions, counted so 2,546, bunched at
//     the heals. In mnemo sim --nodes 100 --ops 1000 --loss 0.1
//     --partitions 3, seeds 1/2/3, with the first write's syncs gone
//     (Just become a reader): bytes on the wire / minimum 3.68/3.74/
//     3.80 → 2.96/2.96/2.84 (seed 1: sync frames 50.7 → 25.4 MB, 23,632
//     → 4,875 requests); virtual time to converge after the last fault
//     9.5/5.3/45.4 → 18.5/8.0/15.2 s; the CI sweep's worst 144.9 →
//     79.4 s, 500/500 clean. With the first write's syncs gone and gap.go
//     asking a writer only, 95/45 s on seeds 1/2; adding the heals,
//     11/9 s. Open: go test ./sim -run TestScaleFigures -scale
//     100/300/0.1, whose tracked update is the project's last set-up
//     write at t=0, reaches its last node (n51, no tree link; its sync
//     exchanges at t=0 and the retries at 10 s lost or unanswered) in
//     20.1 s, not 1.08 s: the first write's syncs were what reached it
//     (put back, 1.2 s), not the tree, and neither a tree without links
//     yet nor tree traffic refused before the node held the namespace
//     is why (both tried: no change). Traced: the four sync requests
//     that reached for n51 at 10 s were all lost (10% loss each), and no
//     other frame came to it until 20 s: a node holding none of a
//     namespace yet has no tree of it (refreshTrees walks the
//     namespaces the state holds), so nothing links it in; making trees
//     for the namespaces the policy says to hold would. Its neighbours'
//     trees push to it, but a holder of none of a namespace refuses that
//     traffic (it cannot tell who may read it: the grants travel in it);
//     it now asks the peer it refused for a sync (CauseAuthority, one
//     peer at a time, retried as an authority ask, at most
//     maxAuthorityAsks of one peer's at once, since any member can name
//     namespaces in unsigned tree frames, and no sooner than
//     RetransmitAfter after the last ask for the namespace, since a
//     neighbour that only reads answers its context alone: askEmpty),
//     and the tracked update reaches every node in 595
//     ms, not 2,756 ms (ratio to the model 1.44, not 6.67); 454 ms (1.10)
//     with the heals below. That figure measured a join, not the tree:
//     every update it tracked was a set-up write at t=0, made before any
//     node held the project. It went to 12.1 s (29.7x) with mayOwe
//     (70afc20, found by bisecting), by chance of the loss: the node that
//     got the set-up last lost a batch of two answers in a row, and its
//     third try waited AckTimeout. Now the figure tracks the workload's
//     writes (sim/spread.go), an answer whose last message came while a
//     batch of it was lost is asked again after the short wait once more
//     (asking.lostBatch: the link works, it is no partition), and a
//     node makes a namespace's tree when a sync answer first brings it
//     the namespace (startTrees), not at its next anti-entropy round: a
//     holder that got the set-up at 2.2 s joined the tree at 10.2 s and
//     was the last to get every write made in between. Measured at
//     100/300/0.1: 49.2 mean link latencies, 3.63x the model (hops 0.82x);
//     2.34x with the altering hostile relays left out of the holders (the
//     last to get four of the writes, 3.3-5.7 s late: their neighbours
//     distrust them and push them nothing, so syncs bring them what they
//     get; sim/spread.go, distrusted). What remains is a lost eager push's
//     repair, which waits for Tick: the announcements leave on it and the
//     grafts are timed by it (sync/epidemic/doc.go, "Tried"). The repairs come
//     sooner still when the
//     author writes again: a relayed delta that must
//     be held (it depends on writes not here) makes this node ask its
//     author for a digest sync at once (TreeStats.Repairs), as an ack
//     timeout does for a direct send. The simulator's sweep found the
//     tail without it: a node lacking a writer's whole history for four
//     minutes, until anti-entropy happened to pick that writer. So does a
//     relayed delta the driver refuses (a clock behind the author's by
//     more than the skew bound, an acl check) or this node's view refuses
//     (the author's grant not here yet: ErrNotAllowed): a direct send's
//     sender would retry it on its ack timeout, a tree's author never
//     hears. Measured on the sweep (mnemo sim --mixed --sweep 500 --seed
//     1000, virtual time to converge after the last fault): median 4.9 →
//     4.7 s, p90 23.9 → 19.9 s, p99 79.5 → 57.2 s (seeds with trees at 4:
//     median 6.9 → 5.6 s, p90 32.7 → 22.7 s), for 4% more sync frames.
//   - A repair too small to spread still reaches the readers that just
//     said they lack it: a writer that a sync brings writes older than
//     catchUpAge sends them, at its next Tick, to each peer whose context
//     told within AntiEntropyInterval held all it held before and lacks
//     some of them (catchup.go, TreeStats.CatchUps), so a reader that
//     asked a writer lacking the write in an anti-entropy round does not
//     wait for the next round. At 100 nodes with loss and partitions the
//     time to converge after the last fault fell by about a third, bytes
//     unchanged (catchup.go, "Measured").
//   - Holding a delta until what it depends on arrives (Order) is the
//     engine's, on the author's account: the tree delivers in no order.
//     A new reader is in the tree at once, so a relayed delta may reach
//     it before its first sync answer (which direct sends wait for): one
//     that depends on the history it lacks is held until the answer
//     brings it, one whose author it does not yet know may write is
//     refused, and the sync repairs both. Nothing reaches a peer that may
//     not read the namespace either way.
//   - A tree's pushes leave at once (in the Step or LocalDelta that made
//     them); its announcements and its requests for missing payloads
//     leave when they are owed, IHaveInterval after a payload came and
//     GraftTimeout after an announcement of one not here: TreesDue names
//     the time, FlushTrees sends them. The node's loop checks every
//     cluster.Config.TreeTick (25ms) between its 500ms ticks, the
//     simulator flushes each node at the very time (sim/treeflush.go).
//     Before, they waited for the engine's Tick, and a node whose pushed
//     copy was lost got the payload one to three ticks later. Measured in
//     the simulator, go test ./sim -run TestScaleFigures -scale
//     100/300/0.1 -v, seeds 1–8, before and after side by side: rounds to
//     99.99% of the holders in link latencies against the epidemic model,
//     median 2.04 → 1.19× (mean 2.36 → 1.20; every seed lower, 1.04–1.34
//     after); bytes on the wire against the minimum 2.62 → 2.78 (mean):
//     a want now goes out more often while the tree's copy is still on a
//     long path, and its answer is a duplicate. Wall time the same
//     (medians 2.30 and 2.31 s). With ticks 2s apart (TestTreesFlushBetweenTicks), tracked
//     updates reach every holder in 282 ms on average against 2,733 ms
//     without the flushes. A payload given up in a flush (its last want
//     unanswered) has its repair sync sent by that flush too, not at the
//     next Tick (TestTreeFlushSendsGiveUpRepairWithoutTick); in mnemo sim
//     --nodes 100 --ops 1000 --loss 0.1 --partitions 3, seeds 1/2/3,
//     bytes / minimum 2.86/2.87/2.78 → 2.89/2.86/2.76 and tracked
//     updates' mean time to every holder 3,375/4,135/3,356 →
//     4,077/3,795/2,926 ms: within the seeds' noise, taken because a
//     repair owed now should not wait a tick. At N=1,000 (go test ./sim
//     -run TestScaleFigures -scale 1000/100/0.1, seeds 1/2/3, against the
//     same build without it) rounds to 99.99% 2.45/7.67/2.24 →
//     3.33/5.85/1.86x the model in link latencies and tracked updates
//     1,508/4,630/1,356 → 2,074/3,533/1,125 ms mean: worse in seed 1,
//     better in 2 and 3 (it was reverted once on seed 1 alone).
//   - A relay forwards what it applied: the driver applies a Ready's
//     deltas (the node: with an fsync) before it sends its messages, and
//     payloads wait for that (releaseTree). Each hop of a tree therefore
//     costs an apply; twenty real nodes on loopback measured 122–127ms
//     p50 from a save to all 19 peers with trees. Forwarding before
//     applying, except deltas that carry acl records (which may revoke
//     the next hop's read), would take that off each hop.
//   - A relay that drops what it should forward cannot be told from a
//     slow one, so it is not distrusted: it is routed around. Its
//     receivers hear of the payloads from their other links (announced,
//     then asked for and grafted), so a node with one honest link gets
//     every delta over the tree. A node whose every link is a dropping
//     relay hears of nothing, and only anti-entropy repairs it (as for a
//     payload every copy of which was lost). Tested with the tampering
//     in the sender's transport (node/cluster, hostileTransport: a node
//     of six altering or dropping what it relays, over memnet and over
//     QUIC and memberlist) and in the simulator (sim, hostile relays).
//     Seen there: with anti-entropy an hour apart, the cluster test
//     missed a save about one run in seven even with no tampering at all
//     (payloads given up after their wants went unanswered while the
//     overlay was still settling). One cause is found and fixed: a tree
//     made before the engine's first Tick had the zero time, and what it
//     received then was forgotten at the first real Tick while its
//     announcements were out (sync/epidemic/doc.go, "The loop";
//     TestTreeEveryDeltaBeforeFirstTick failed 199 of 200 seeds before).
//     That it was the cluster test's cause is not confirmed: after the
//     relay tests' changes the miss was seen once in 130 runs before the
//     fix and 0 in 50 after, too few to tell. With active views of
//     two links, six nodes can settle into two triangles, every view
//     full, that no shuffle joins again (HyParView refills only views
//     that are short); at the default five, each part of such a split
//     needs six nodes or more.
//   - Reported failed: peers that leave the membership or restart (their
//     links went with their process), and peers the driver's transport
//     could not reach (Engine.PeerUnreachable: node/cluster reports a
//     failed send at most once a tick per peer; the next refresh offers
//     the peer again, so a link to a peer still failing may come back
//     and be dropped again). The active view's
//     Connect and Disconnect are not passed on: the driver's transport
//     opens a connection on the first frame to a member.
//   - Links known at one end only: a node whose tree links all had
//     lost their far ends (a neighbor request's answer or a disconnect
//     lost, a refusal that says nothing) heard nothing over the tree and
//     so sent nothing over it either, and the answer to tree traffic
//     from outside a view never came: it got every write from digest
//     syncs. In go test ./sim -run TestScaleFigures -scale 1000/100/0.1
//     (seed 2) one such node, with five links none of whose ends had
//     it, was the last holder of each of the last eight tracked updates,
//     0.9-7.5 s after the write, and seed 3 had two. A sync answer
//     bringing a namespace now has its tree probe the links silent for a
//     second (epidemic Node.Probe; askSilentLinks): a far end that lacks the
//     link refuses, the link goes, and a passive peer is asked. The same
//     runs, seeds 1/2/3, rounds to 99.99% in link latencies 3.33/5.85/
//     1.86 → 2.09/3.07/1.76x the model, bytes / minimum 2.48/2.44/2.64 →
//     2.48/2.43/2.60, no such node left at the end; at N=100 (-scale
//     100/300/0.1, seeds 1-16) median 1.16 → 1.19x, mean 1.18 → 1.24x
//     (one seed at 1.73: three of its updates each had one holder late
//     by seconds, reached by a digest sync), and mnemo
//     sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3, seeds 1/2/3,
//     bytes unchanged (2.82/2.79/2.70), mean time to every holder
//     4,077/3,795/2,926 → 4,153/4,033/3,171 ms: within the seeds'
//     spread. Tried with it and not kept: a node refusing a tree message
//     (the sender may not read by its view, or it holds none of the
//     namespace) answering with a disconnect, the way the seed-2 node's
//     links had gone one-sided. Answering every refusal: at N=1,000
//     2.49/2.95/1.54x, but at N=100 seeds 12 and 16 at 4.35x and 8.97x (a
//     node holding none of the namespace yet no longer heard the traffic
//     that makes it ask for it: askEmpty). Answering all but those: at
//     N=100 median 1.19x with a seed at 2.16x, and without the probes
//     1.25x with one at 2.30x; why is not found. Also tried and not
//     kept (2026-12-07): every tree probing its links on each tick, not
//     only on a sync answer, once silent for 1 s, then 2, 4 ... up to
//     32 s between probes of one link (so an idle cluster pays one small
//     frame per link per half minute), to mend the one-sided links of
//     the overlay's cold start sooner: -scale 1000/100/0.1, seeds 1/2
//     (seed 3 and N=100 not run), rounds 2.09/3.07 → 2.33/3.21x, bytes /
//     minimum 2.48/2.43 → 2.45/2.43. Why is not traced; likely the cold
//     start makes one-sided links faster than a probe a second mends
//     them, and a refused probe drops a link while the view still forms.
//   - The trees start no shuffles (epidemic Config.NoShuffle): a
//     shuffle walks six frames of eight peer ids each to refresh a
//     passive view with peers the engine knows already, the readers.
//     Instead every anti-entropy round offers each tree as many of its
//     members, picked at random, as a shuffle would bring
//     (freshenTrees). In mnemo sim --nodes 100 --ops 1000 --loss 0.1
//     --partitions 3, seeds 1-6 (5c9dc64 → this change, one run each,
//     load 3-8): bytes on the wire / minimum 3.09/3.05/3.01/3.07/3.07/
//     3.03 → 2.80/2.80/2.75/2.80/2.76/2.65 (mean 3.055 → 2.760; seed 1:
//     shuffle frames 7.3 MB → none, tree frames 68.4 → 60.7 MB), frames
//     349,031 → 314,507 on average, virtual time to converge after the
//     last fault 35/35/55/45/55/75 → 15/25/65/55/55/35 s (mean 50.3 →
//     42.0 s), user CPU 19.5 s on average both; CI sweep (mnemo sim
//     --mixed --sweep 500 --seed 1000 --json) 500/500 clean both, mean
//     2.33 → 2.31 s, p99 12.8 → 12.1 s, bytes 489 → 465 MB, worst 28.7 →
//     39.4 s: seed 1097 (9 nodes, trees), 7.3 → 39.4 s, one node lacking
//     a writer's last delta until anti-entropy (the open tail below);
//     seed 1282 21.7 → 0 s the other way. A fixed cost cut, not one per
//     write: with --ops 10000 (seed 1) 3.078 → 3.043 (shuffles 8.5 of
//     906 MB; 942,998 → 936,751 payload sends for ~573,000 relayed deltas,
//     the duplicates the trees' young origins cost: sync/epidemic/doc.go,
//     "Tried"), converging 10.2 → 9.1 s after the last fault, user CPU
//     227 → 224 s; --nodes 30 --ops 1000 seed 1: 3.06 → 2.95, 15.1 → 5.5 s.
//     An idle cluster sends none of them now.
//
// # Removals only by writers
//
// A delta's causal context removes, on the receiver, every dot it claims
// without holding: that is how removals, overwrites and retracts travel.
// Seals cannot vouch for such a claim (it is an absence), so a claim counts
// only when its sender may write the namespace, and since any delta with a
// context makes claims, the rule is: a node accepts namespace content only
// from peers that may write that namespace, live or in a sync answer.
// Consequences, chosen on purpose:
//
//   - A node that may only read a namespace sends none of its content of
//     its own: it answers a sync request with its own context alone (with
//     trees on, it relays live deltas whole, each signed by its author,
//     whose signature covers the claims: "Trees"). (A reader relaying
//     sealed records without the removals it cannot vouch for would leave the
//     requester past a removal it never saw, with equal contexts and unequal
//     states for good; the simulator found exactly that.)
//   - So a namespace's content reaches a reader from its writers only,
//     directly or relayed unchanged over a tree: a reader whose writers are
//     all unreachable waits for one to return, and a writer answers the
//     sync of every reader.
//   - A writer may remove what others wrote (that is what write means); it
//     cannot write in another replica's name. A writer that sends different
//     writes under the same dots to different nodes (equivocation) leaves
//     them with equal contexts and unequal states, which digest sync, which
//     compares contexts, does not find; comparing content fingerprints
//     would.
//
// # Agreement
//
// Engine.Agreement tells, per peer and namespace, how the peer's causal
// context, as the peer last told it (in a sync request, or at the end of
// its sync answer), compares with this node's now: equal, behind, ahead
// or concurrent, with the engine's time it was told. It is what digest
// sync itself compares, without the full scan a state digest needs; it is
// only as fresh as the pair's last sync (anti-entropy picks a random reader
// of each namespace every AntiEntropyInterval), and live deltas move it without a word. The
// engine keeps one encoded context per peer and namespace held (peers
// telling the same bytes share them), never sends it, and drops it with
// the peer.
//
// # Bounded work
//
// A sync request or reply is answered once per distinct namespace, for at
// most Config.MaxSyncContexts namespaces (the rest are refused and counted,
// ErrTooManyContexts), so a few hundred bytes asking about one namespace
// fifty thousand times cost one answer.
//
// A node keeps a peerState per member whether or not the two ever
// exchange a frame, so what it holds before the first frame is kept
// small: a peer's maps and its ring of acked batches are made when
// traffic first needs them (1.2 KB a pair when made at once, 1.28 GB of
// a 1,000-node simulation's heap).
package replica
