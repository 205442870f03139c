package sim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/sync/replica"
)

// simNode is one simulated node: the real memory service (core and every
// feature the node attaches) over an in-memory store that can crash, and
// the real replication loop (node/cluster, stepped), on a virtual clock.
type simNode struct {
	idx       int
	id        replica.PeerID
	principal namespace.Address
	me        memory.Caller
	ident     acl.Identity
	kv        *store.MemKV
	svc       *memory.Service
	loop      *cluster.Stepped
	skew      time.Duration // the node's wall clock runs this far ahead of virtual time
	// cutInWrite: the power goes in the middle of the node's next store
	// transaction (crashKV), which therefore is never durable.
	cutInWrite bool
	cutAtSync  bool // the cut comes after the commit, before its sync (crashKV)
	lyingSync  bool // hooks.lyingSync: the sync the power cut reports success
	cutDone    bool // the cut happened: the node is dead, the sim crashes it after the call
	up         bool
	member     bool
	stalled    bool
	inbox      []*event
	inc        int    // incarnation: a crash loses what is in flight to the node
	dead       totals // counters of the loops lost in crashes
	leaked     bool   // hooks.leakOnTick: node 0 has leaked once

	// What the node's worker owns in a window (window.go): its clock (the
	// time of the event it runs; of the barrier outside a window), its
	// events, its effects on the shared state, the frames it dropped.
	now     time.Duration
	evs     []*event
	out     []outItem
	dropped uint64
	busy    time.Duration // wall time its worker ran its events of the window

	// The node's evTrees event in the queue, if treesSet (treeflush.go).
	treesAt  time.Duration
	treesSet bool
}

func (s *Sim) newNode(i int) (*simNode, error) {
	seed := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(fmt.Sprintf("mnemo sim node %d ", i)), s.cfg.Seed))
	ident, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		return nil, err
	}
	p := namespace.MustParse(fmt.Sprintf("agent://a%d", i))
	return &simNode{idx: i, id: replica.PeerID(ident.NodeID()), ident: ident, principal: p,
		me: memory.Caller{Principal: p}, kv: store.NewSharedMemKV(s.values)}, nil
}

// nodeWall is the node's own wall clock: its virtual time plus its skew.
func (s *Sim) nodeWall(n *simNode) time.Time { return epoch.Add(n.now + n.skew) }

// nodeClock is a node's cluster.Clock: the loop only reads the time; the
// simulator calls Tick itself.
type nodeClock struct {
	s *Sim
	n *simNode
}

func (c nodeClock) Now() time.Time { return c.s.nodeWall(c.n) }
func (c nodeClock) NewTicker(time.Duration) cluster.Ticker {
	panic("sim: the stepped loop has no ticker")
}

// features is the set the node attaches (node/node.go features):
// surgery (retract and amend need an admin's approval in every namespace,
// so decisions are in the workload), capsules, projection views,
// duplicates and transfer.
func features() ([]memory.Feature, error) {
	surg, err := surgery.New(surgery.Approvals{"*": {memapi.OpRetract, memapi.OpAmend}})
	if err != nil {
		return nil, err
	}
	// Merging on save runs on a goroutine of its own, which a stepped,
	// replayable node must not have.
	dd, err := dedup.New(dedup.Config{OnSave: dedup.OnSaveConfig{Disabled: true}})
	if err != nil {
		return nil, err
	}
	return []memory.Feature{surg, capsule.New(), projview.New(), dd, transfer.New()}, nil
}

// open starts the node's incarnation over its store: memory.Open runs the
// real open path (index rebuilt from the store, held memories, contexts
// reloaded) and the loop hooks the service as cluster.Start does.
func (s *Sim) open(n *simNode) error {
	feats, err := features()
	if err != nil {
		return err
	}
	rs := sha256.Sum256(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte("mnemo sim ids "), s.cfg.Seed), uint64(n.idx)<<32|uint64(n.inc)))
	svc, err := memory.Open(memory.Config{
		KV: crashKV{n.kv, n}, Agent: n.principal, Identity: n.ident, Replica: n.ident.ReplicaID(),
		Now: func() time.Time { return s.nodeWall(n) }, Rand: rand.NewChaCha8(rs),
		MaxSkew: s.cfg.MaxSkew, Features: feats,
		ACLSigs:  s.aclSigs,  // each node would verify the same acl records with the same result
		ACLEvals: s.aclEvals, // and evaluate the same records under the same bindings to the same result
		Seals:    s.seals,    // and verify the same sealed edits and decisions
	})
	if err != nil {
		return fmt.Errorf("sim: open %s: %w", n.id, err)
	}
	ec := s.cfg.Engine
	ec.Seals = s.seals         // verified once for the whole simulation, as each real node would once for itself
	ec.DeltaSigs = s.deltaSigs // each holder would verify the same signature with the same result
	ec.Payloads = s.payloads   // each holder's tree would keep the same bytes
	ec.Seed = s.cfg.Seed ^ uint64(n.inc)<<32 ^ uint64(n.idx)
	var log *slog.Logger
	if s.traceOut != nil { // the nodes' warnings (refused deltas and frames) go into the printed trace
		log = slog.New(slog.NewTextHandler(nodeLog{s, n}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", n.idx)
	}
	loop, err := cluster.NewStepped(cluster.Config{Service: svc, Identity: n.ident, Engine: ec, Clock: nodeClock{s, n}, Addr: string(n.id), Logger: log,
		Codec:              s.codec,    // one compressor's history for the whole simulation, not one per node (same frames)
		Bindings:           s.bindings, // one copy of each binding every node's directory admits
		BindingsOnDemandAt: s.cfg.BindingsOnDemandAt,
		SkipWriteCheck:     s.cfg.hooks.plantBug},
		func(addr string, _ ed25519.PublicKey, frame []byte) { s.send(n, addr, frame) })
	if err != nil {
		svc.Close()
		return fmt.Errorf("sim: loop %s: %w", n.id, err)
	}
	n.svc, n.loop, n.up = svc, loop, true
	s.listen(n)
	return nil
}

// crashKV is the node's store seen by its service: on cutInWrite, the
// power goes in the node's next store transaction (store.MemKV.PowerCut),
// and every later call fails, as a process that died there would. In
// turn (cutAtSync, from the run's count of crashes) it goes after the
// transaction's writes and before its commit (it never commits), or after
// its commit and before the sync that would have made it durable (readers
// could see it; a restart finds nothing of it): the store commits a group
// while the one before it syncs (node/store/doc.go, "Writes"), so both are
// places a process dies.
type crashKV struct {
	*store.MemKV
	n *simNode
}

func (k crashKV) Update(fn func(w store.Writer) error) error {
	return k.MemKV.Update(k.cutBeforeCommit(fn))
}

func (k crashKV) UpdateNoSync(fn func(w store.Writer) error) error {
	return k.MemKV.UpdateNoSync(k.cutBeforeCommit(fn))
}

func (k crashKV) Sync() error {
	if k.n.cutInWrite && k.n.cutAtSync {
		k.cut()
		if k.n.lyingSync {
			return nil
		}
	}
	return k.MemKV.Sync()
}

// cutBeforeCommit is fn, after which the power goes if it is to go
// before this commit.
func (k crashKV) cutBeforeCommit(fn func(w store.Writer) error) func(w store.Writer) error {
	return func(w store.Writer) error {
		if err := fn(w); err != nil {
			return err
		}
		if k.n.cutInWrite && !k.n.cutAtSync {
			k.cut()
		}
		return nil
	}
}

func (k crashKV) cut() {
	k.n.cutInWrite = false
	k.n.cutDone = true
	k.MemKV.PowerCut()
}

// crash is the process dying: the loop (queues, windows, held deltas) and
// whatever is in flight to the node are lost, and the store keeps exactly
// what it committed (store.MemKV.Crash). The count and the incarnation's
// end go through the outbox (outCrash): a frame another node sent before
// the crash, in the same window, is for the incarnation that died.
func (s *Sim) crash(n *simNode) {
	if !n.up {
		return
	}
	st := n.loop.Status(false)
	for _, p := range st.Peers {
		n.dead.maxQueue = max(n.dead.maxQueue, p.MaxQueueDepth)
		n.dead.fallbacks += p.Fallbacks
		n.dead.retransmits += p.Retransmits
	}
	n.dead.trees.Add(st.Trees)
	n.dead.syncs.Add(st.Syncs)
	n.dead.applied += st.Applied
	n.dead.rejected += st.Rejected
	n.loop.Close()
	n.kv = n.kv.Crash()
	n.up, n.stalled, n.inbox = false, false, nil
	n.cutInWrite, n.cutDone = false, false
	n.svc, n.loop = nil, nil
	s.emit(n, outItem{kind: outCrash})
}

// restart reopens the node over what its store kept; the membership then
// makes its loop digest-sync with every peer.
func (s *Sim) restart(n *simNode) {
	if n.up {
		return
	}
	if err := s.open(n); err != nil {
		s.violate("restart: %v", err)
		return
	}
	s.setPeers()
}

// sighting is how the membership shows n to the others.
func (s *Sim) sighting(n *simNode) cluster.Sighting {
	a := n.loop.Advert()
	return cluster.Sighting{Advert: a, State: cluster.StateAlive}
}

// setPeers gives every live node the membership: every member that is up.
// A node outside the membership sees only itself.
func (s *Sim) setPeers() {
	var all []cluster.Sighting
	for _, n := range s.nodes {
		if n.up && n.member {
			all = append(all, s.sighting(n))
		}
	}
	// One membership for every member, sorted once and never written
	// again: each real node keeps its own copy of what its gossip tells it.
	cluster.SortMembers(all)
	for _, n := range s.nodes {
		if !n.up {
			continue
		}
		if n.member {
			n.loop.SetSortedMembers(all)
		} else {
			n.loop.SetMembers([]cluster.Sighting{s.sighting(n)})
		}
	}
}

// state is n's committed state of ns (empty when it holds none).
func (n *simNode) state(ns string) *crdt.Map {
	m, err := n.svc.Store().State(ns)
	if err != nil || m == nil {
		return crdt.NewMap()
	}
	return m
}

func (n *simNode) holds(ns string) bool {
	for _, h := range n.svc.Store().Namespaces() {
		if h == ns {
			return true
		}
	}
	return false
}
