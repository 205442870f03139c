// Package sim is the deterministic cluster simulator: N nodes, each running
// the real sync/replica Engine over a replica.MemState, on a virtual clock
// and a virtual network, with one seed (Config.Seed) driving every random
// choice — operations, latencies, loss, duplication, reordering, partitions,
// crashes, membership and each engine's own Config.Seed. The same seed gives
// the same trace (Report.TraceHash: every op, fault and frame sent, in order)
// and the same final digests. `mnemo sim` is its command line.
//
// Use: r, err := sim.Run(sim.Config{Nodes: 20, Ops: 2000, Seed: 7, Loss: 0.1,
// Partitions: 2, Crashes: 2}); r.Converged, r.Violations, r.Replay.
//
// # What runs
//
// Events (message deliveries, engine ticks every TickInterval, workload ops,
// faults) are popped from a heap ordered by (virtual time, sequence). After
// every engine call the node drains Ready as the real node does (Ready,
// apply, Advance, until HasReady is false; sync/replica doc.go, "The
// loop"): accepted deltas are applied (and count as persisted: the node
// syncs each apply; the simulated node refuses none), and every envelope is
// encoded with the real wire.Codec (bytes counted), checked against the
// read policy of that instant, then dropped (loss, partition), duplicated or
// delivered after the link's base latency plus exponential jitter (plus, with
// Reorder, an extra delay that lets later messages overtake it).
//
// Faults: partitions (link sets cut, then healed), crashes (the engine, its
// queues and every message in flight to the node are lost; the MemState is
// kept; restart runs a fresh engine over it and SetPeers makes it digest-sync
// with everyone), stalled subscribers (a node stops consuming; its inbox
// waits, so its peers' windows fill and their bounded queues overflow into
// state sync), leaves and joins (SetPeers on every engine). At the end of the
// schedule the run goes quiet: faults stop, everything heals, and the
// cluster runs until every holder equals the reference (bounded by
// QuietLimit), then until nothing is in flight (or two ack timeouts pass).
//
// Workload: saves (title, content, type, a tag), updates, soft deletes,
// tag adds and removes, retracts, spread over team:// and project://
// namespaces, in the node's record shape (node/schema); every edit also
// writes updated_at (schema.Touch; see sync/replica/doc.go). Grants
// and revocations are real acl records (NewCreate, NewGrant with After,
// NewRevoke) signed by per-node ed25519 identities derived from the seed,
// evaluated by acl.Book.Policy into the engines' Policy (ShouldHold,
// PeerMayRead, ReplicaMayWrite). Simplification: the record set is an oracle
// every node sees at the same instant; grant records are not themselves
// replicated through the engine. Only read is ever revoked (from readers
// that never wrote): revoking write would retroactively make the writer's
// past dots unacceptable (ReplicaMayWrite checks every dot of a record), which
// is a policy question for the engine, not something to simulate around. A
// node that gains read creates the namespace and asks a holder for catch-up
// (RequestSync), as the node does. Every write is sealed and every frame's
// deltas signed with the node's key, as the node does (crdt.Seal, wire).
// A hostile member (a node with read but no write) builds a forged write
// against a copy of its state and hands it to its engine, or sends raw
// frames (attack.go): records whose dots name a writer's replica, a sync
// reply claiming the target's whole context with no record plus a retract,
// and a sync request naming one namespace a thousand times. None is ever
// acknowledged; all must be rejected everywhere.
// Projections are not simulated yet.
//
// # What is checked (Report.Violations, first violated first)
//
//   - convergence: every member allowed to read a namespace has the digest of
//     the reference, the join of every acknowledged op's delta (acknowledged =
//     applied on its origin);
//   - no acknowledged write lost: every holder has each op's dots and id (or
//     the id retracted);
//   - write: no forged id on any replica, and every dot held was written by a
//     replica that held write on that namespace;
//   - read: no namespace delta (memory content, in Deltas or SyncReply
//     frames) sent to a node whose principal may not read the namespace at
//     send time; bare contexts (dot metadata) are allowed;
//   - retract: no retracted id visible (Map.Get) on any holder;
//   - queue: every engine's MaxQueueDepth (crashed incarnations included)
//     within QueueMaxDeltas.
//
// A failing run prints `replay: mnemo sim --nodes N --ops K --seed S ...`.
// Tests show each checker fires on a violation injected by a test hook.
//
// # Scenarios (testdata/scenarios, format on Scenario)
//
//   - split-brain.txt: two halves write concurrently for 20s, then heal.
//   - crash-restart.txt: crashes mid-workload and during a partition.
//   - stalled-subscriber.txt: a 15s stall; queues overflow, state sync.
//   - churn.txt: a late joiner and a leave/rejoin under loss and reordering.
//   - lossy-partitions.txt: shifting partitions at 20% loss, then a stall.
//
// # Bugs this simulator found (fixed)
//
// A delta that removed a set element could be lost for good: if it was lost
// in transit and a later edit of the same record reached the receiver first,
// that edit's context covered the lost delta's updated_at dot, digest sync
// never resent the record (every dot it held was known) and the element
// stayed: equal contexts, different digests, forever. Two fixes, in crdt and
// sync/replica: a removing edit leaves a per-replica witness dot in the
// record (crdt.WitnessSet) that no concurrent field write can overwrite, and
// receivers hold a live delta back until the dots it claims to have
// overwritten have arrived (crdt.Map.DependsOn). TestLostRemoveRepaired
// keeps the two-engine reproducer; the tests and the CI sweep run with tag
// removes on.
//
// # Figures (measured on this machine; commands to reproduce)
//
// go test ./sim -run TestFigures -figures -v (engine defaults: AckTimeout and
// anti-entropy 10s; link latency 2–40 ms):
//
//   - Rounds, N=100, one namespace everyone holds: without loss every update
//     reaches every holder in 1 hop (mean 74 ms): the engine sends to every
//     interested peer directly, there is no epidemic fan-out. With 10% loss:
//     mean 2.2 hops to the farthest holder (the lost copies come back through
//     ack-timeout or anti-entropy digest sync, often with another holder),
//     5.0 s mean, 13 s worst, at 10 s ack timeout and anti-entropy. The epidemic model's ~10 rounds (fanout 3)
//     does not apply; hops, not gossip rounds, are what we report.
//   - Bytes, no loss, K=2000 concurrent updates: N=20 1.45x and N=50 1.58x
//     the minimum K·(N−1)·delta for all traffic (1.33x for the delta frames
//     alone; the rest is acks, anti-entropy and frame headers). Against
//     state-based sync of the same workload — the same pushes, each carrying
//     the origin's full namespace state instead of the delta — 0.005x and
//     0.006x.
//   - 100 nodes, 10k ops, 3 partitions, 10% loss, tag removes on
//     (`go test ./sim -run TestFigureBig -figures -v`; `-big-ops N` for a
//     smaller run): converges, 9.1 s virtual after the last fault, 1.53M
//     messages, 436 MB, 90k fallbacks to sync. Wall time on this shared
//     2-CPU machine: 55 s for `mnemo sim --nodes 100 --ops 10000 --seed 1
//     --loss 0.1 --partitions 3` on a quiet machine (the command and the
//     test run the GC at GCPercent = 400; peak RSS 3.4 GB), 57–62 s under a
//     load average of 3–4, 83–90 s at the default GC. Before the changes
//     below it did not finish in 290 s, and 1k ops took 19.5 s (now 6.2 s).
//     What changed: a sync answer no longer scans the namespace — MemState
//     indexes every record dot by replica and counter and finds what a
//     requester lacks from the ranges of its context (crdt.Context.Missing),
//     with the same result as crdt.Map.Missing (property test); Map.Missing
//     and RemovedDots walk intervals instead of counters; the engine's
//     held-delta release builds each namespace's context once per pass; and
//     an ack timeout skips its sync when the peer was answered a sync of
//     that namespace after the batch left (that answer already carried the
//     batch), which cut fallbacks 159k → 90k and bytes 676 → 436 MB. The
//     rest of the time is the volume of syncs itself (one per ack timeout
//     otherwise: ~19% of batches at 10% loss), each costing a few context
//     clones, encodes and decodes.
//
// CI: `go test ./sim -run TestSweep` runs 200 seeds of mixed faults on
// 5–20 nodes (24 under -race); scripts/test.sh runs the 200-seed sweep
// without -race (`go test -count=1 -run TestSweep ./sim/ -sweep=200`:
// 25–27 s wall here).
package sim
