package sim

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/sync/wire"
)

// epoch is virtual time zero; engines and clocks see epoch+now.
var epoch = time.Unix(1_800_000_000, 0).UTC()

type evKind uint8

const (
	evDeliver evKind = iota
	evTick
	evTrees // a node's trees owe announcements or wants (treeflush.go)
	evOp
	evFault
	evCheck
)

type event struct {
	at    time.Duration
	seq   uint64
	kind  evKind
	node  int // deliver: receiver; tick: node
	from  int
	inc   int    // receiver's incarnation when sent: a crash loses what is in flight
	seed  uint64 // op: the operation's own seed
	frame []byte
	fault *fault
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Sim is one simulated cluster. Build it with New and drive it with Run,
// which runs the nodes' events on Config.Workers goroutines (window.go);
// it is deterministic whatever their number. Not safe for concurrent use.
type Sim struct {
	cfg       Config
	seals     *crdt.SealCache   // the seals verified, for every node
	deltaSigs *crdt.SealCache   // the delta signatures verified, for every node
	aclSigs   *acl.SigCache     // the acl record signatures verified, for every node
	aclEvals  *acl.EvalCache    // the acl evaluations made, for every node
	bindings  *acl.BindingTable // one copy of each binding, for every node's directory
	// values holds once the stored values and keys equal between nodes
	// (each node's store.MemKV shares it): converged nodes hold the same
	// records under the same keys, which real nodes would each keep on
	// their own disk.
	values *store.ValueTable
	// payloads holds once each relayed delta's bytes every holder's tree
	// keeps (payloads.go).
	payloads *payloadTable
	rng      *rand.Rand // the run's: network, faults, setup
	wr       *rand.Rand // the operation in progress's, from its own seed (so a scenario can drop operations)
	codec    *wire.Codec
	now      time.Duration
	seq      uint64
	q        eventQueue
	nodes    []*simNode
	byAddr   map[string]int
	byRep    map[crdt.ReplicaID]int
	nss      []string
	nsIdx    map[string]int
	lat      [][]time.Duration // per-link base latency, drawn lazily
	part     []int             // partition group per node; all equal when healed

	// The oracle of permissions: what the namespaces' creators signed, as
	// their own nodes evaluate it at once (workload.go).
	read, write [][]bool // [node][ns]
	everRead    [][]bool // read held at some point
	everWrit    [][]bool // write held at some point (writes are never revoked)
	creator     []int    // node whose principal created ns

	loss, dup, reorder float64
	quiet              bool
	quietAt            time.Duration
	convergedAt        time.Duration
	lagging            string // the last pair of holders converged found apart
	pending            int    // deliveries scheduled
	trace              hash.Hash
	traceOut           io.Writer

	ids       [][]string // [ns] ids of the memories saved there (acknowledged)
	retracted []retraction
	opNode    *simNode  // the node running the operation in progress
	opDeltas  []nsDelta // the deltas it wrote so far
	capsules  []simCapsule
	audits    map[[2]int]int // (node, ns) → the most audit entries the node showed
	acked     []ackedOp
	forged    []forgedOp
	forgers   map[[2]int]bool // (node, ns) that sent a forged write
	tracked   []*spread
	trackedOp int // the workload operation last tracked (maybeTrack)
	sentViols []string
	stats     counters
	faults    []*fault
	ops       []plannedOp
	lastFault time.Duration
	relay     relayState // hostile relays (trees.go)
	wire      wireCounts // frames by what they carry, peers per node (report.go)

	// The windows (window.go): whether one runs (emit keeps effects in
	// the nodes' outboxes), the nodes with events in it, the merge's
	// order, and the figures.
	inWindow bool
	// winEnd and winLimit bound the window being run (treeflush.go).
	winEnd, winLimit time.Duration
	pool             *pool // while Run runs
	active           []*simNode
	refs             []outRef
	win              WindowStats
}

type counters struct {
	messages, bytes                    uint64
	deltaMsgs, deltaBytes              uint64
	syncMsgs, syncBytes                uint64
	bindingMsgs, bindingBytes          uint64
	ackMsgs, ackBytes                  uint64
	treeMsgs, treeBytes                uint64
	dropped                            uint64
	ops, skipped                       int
	saves, updates, deletes            int
	tagOps, retracts, grants           int
	revokes, forgedN, attacks, crashes int
	shares, edits, decisions           int
	capsules, capsuleRevokes           int
	projections, cutWrites             int
	minDeltaBytes                      uint64 // Σ encoded size of each acknowledged local delta × its receivers at the time
	stateBytes                         uint64 // Σ origin's full namespace encoding × receivers (measureState)
}

// Run builds a cluster from cfg, runs the workload and fault schedule, lets
// the network go quiet and checks every invariant.
func Run(cfg Config) (*Report, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return s.Run(), nil
}

// New builds a cluster from cfg without running it: every node opened,
// the namespaces created and the first grants signed.
func New(cfg Config) (*Sim, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sim{seals: crdt.NewSealCache(1 << 20), deltaSigs: crdt.NewSealCache(1 << 18), aclSigs: acl.NewSigCache(1 << 16), aclEvals: acl.NewEvalCache(256), bindings: acl.NewBindingTable(0), values: store.NewValueTable(), payloads: newPayloadTable(),
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x6d6e656d6f)),
		codec:   wire.NewCodec(0),
		byAddr:  map[string]int{},
		byRep:   map[crdt.ReplicaID]int{},
		nsIdx:   map[string]int{},
		forgers: map[[2]int]bool{},
		audits:  map[[2]int]int{},
		trace:   sha256.New(), traceOut: cfg.Trace,
		loss: cfg.Loss, dup: cfg.Dup, reorder: cfg.Reorder,
	}
	for i := range cfg.Teams {
		s.addNS(fmt.Sprintf("team://t%d", i))
	}
	for i := range cfg.Projects {
		s.addNS(fmt.Sprintf("project://p%d", i))
	}
	s.part = make([]int, cfg.Nodes)
	s.lat = make([][]time.Duration, cfg.Nodes)
	for i := range cfg.Nodes {
		s.lat[i] = make([]time.Duration, cfg.Nodes)
		n, err := s.newNode(i)
		if err != nil {
			return nil, err
		}
		if _, dup := s.byRep[n.ident.ReplicaID()]; dup {
			return nil, fmt.Errorf("sim: replica id collision at node %d", i)
		}
		s.byAddr[string(n.id)], s.byRep[n.ident.ReplicaID()] = i, i
		n.member = i < cfg.Nodes-cfg.Joins
		if cfg.Scenario != nil {
			n.member = !slices.Contains(cfg.Scenario.absent, i)
		}
		if i < cfg.SkewedNodes && cfg.Skew > 0 {
			n.skew = time.Duration(s.rng.Int64N(2*int64(cfg.Skew)+1)) - cfg.Skew
		}
		s.nodes = append(s.nodes, n)
		if err := s.open(n); err != nil {
			return nil, err
		}
	}
	s.setPeers()
	if err := s.initACL(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sim) addNS(ns string) {
	s.nsIdx[ns] = len(s.nss)
	s.nss = append(s.nss, ns)
}

// Namespaces lists the simulated namespaces.
func (s *Sim) Namespaces() []string { return append([]string(nil), s.nss...) }

func (s *Sim) violate(format string, args ...any) {
	s.sentViols = append(s.sentViols, fmt.Sprintf(format, args...))
}

func (s *Sim) schedule(e *event) {
	s.seq++
	e.seq = s.seq
	if e.kind == evDeliver {
		s.pending++
	}
	heap.Push(&s.q, e)
}

func (s *Sim) tracef(format string, args ...any) {
	line := fmt.Sprintf("%9.3fs ", s.now.Seconds()) + fmt.Sprintf(format, args...) + "\n"
	io.WriteString(s.trace, line)
	if s.traceOut != nil {
		io.WriteString(s.traceOut, line)
	}
}

// send is a node's loop handing a frame to the transport, on the node's
// worker: what goes on the network is decided when the window merges
// (transport), the read check is made now.
func (s *Sim) send(from *simNode, addr string, frame []byte) {
	to, ok := s.byAddr[addr]
	if !ok {
		s.emitf(from, outViolation, "send: frame to unknown address %q from %s", addr, from.id)
		return
	}
	// Peek, not Decode: the checks need the kind and the namespaces only,
	// and the receiver decodes the frame again.
	g, err := s.codec.Peek(frame)
	if err != nil {
		s.emitf(from, outViolation, "send: %s sent an undecodable frame: %v", from.id, err)
		return
	}
	s.emit(from, s.sendItem(from, to, g, frame))
}

// transport puts a frame a node sent on the network: a hostile relay may
// alter or drop it first (trees.go), then post counts, checks and sends
// what is left.
func (s *Sim) transport(from *simNode, it *outItem) {
	frame, g, sum := it.frame, it.g, &it.sum
	if g.Kind == wire.KindTree && len(s.relay.hostile) > 0 {
		sent := frame
		if frame = s.relayFrame(from, it.to, frame, it); frame == nil {
			// A hostile relay dropped it (trees.go); what the sender did
			// wrong by sending it stands.
			s.sentViols = append(s.sentViols, it.checks...)
			return
		}
		if &frame[0] != &sent[0] { // altered: count what goes out
			if ag, err := s.codec.Peek(frame); err == nil {
				g.TreeKind = ag.TreeKind
			}
			sum = nil
		}
	}
	s.post(from, it.to, g, frame, sum, it.checks)
}

// post puts a frame the node sends on the network: it is counted, checked
// (checks: the read check's violations, made when it was sent), traced
// (sum: its SHA-256, nil to compute), and then dropped (loss, partition),
// duplicated or delivered after the link's latency.
func (s *Sim) post(from *simNode, to int, g wire.Glance, frame []byte, sum *[32]byte, checks []string) {
	kind := g.Kind
	s.stats.messages++
	s.stats.bytes += uint64(len(frame))
	switch kind {
	case wire.KindDeltas:
		s.stats.deltaMsgs++
		s.stats.deltaBytes += uint64(len(frame))
	case wire.KindSyncRequest, wire.KindSyncReply:
		s.stats.syncMsgs++
		s.stats.syncBytes += uint64(len(frame))
	case wire.KindBindings:
		s.stats.bindingMsgs++
		s.stats.bindingBytes += uint64(len(frame))
	case wire.KindAck:
		s.stats.ackMsgs++
		s.stats.ackBytes += uint64(len(frame))
	case wire.KindTree:
		s.stats.treeMsgs++
		s.stats.treeBytes += uint64(len(frame))
	}
	s.count(from.idx, to, g, frame)
	s.sentViols = append(s.sentViols, checks...)
	if sum == nil {
		h := sha256.Sum256(frame)
		sum = &h
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(s.now))
	s.trace.Write(hdr[:])
	io.WriteString(s.trace, string(from.id)+">"+string(s.nodes[to].id)+":")
	s.trace.Write(sum[:])
	s.transmit(from.idx, to, frame)
}

// transmit puts a frame on the virtual network.
func (s *Sim) transmit(from, to int, frame []byte) {
	if s.cut(from, to) || s.rng.Float64() < s.loss {
		s.stats.dropped++
		return
	}
	copies := 1
	if s.dup > 0 && s.rng.Float64() < s.dup {
		copies = 2
	}
	for range copies {
		d := s.latency(from, to)
		s.schedule(&event{at: s.now + d, kind: evDeliver, node: to, from: from, inc: s.nodes[to].inc, frame: frame})
	}
}

// checkMayReceive is the read invariant at send time, on the sender's
// worker: namespace content goes only to a node whose principal the
// sender's own policy lets read it (what the engine must ask before every
// send), and whose principal was granted read at some point (the oracle);
// with bindings on demand, a project's, any member (node/cluster's
// policy.PeerMayRead; the sweep's seeds set a threshold of 2 members).
// Bare contexts (dot metadata, no memory) are not checked: the engine
// answers a sync with its context so that a grant can reach the
// requester. It returns the violation, or "".
func (s *Sim) checkMayReceive(from *simNode, to int, ns string, k wire.Kind) string {
	j, ok := s.nsIdx[ns]
	recv := s.nodes[to]
	switch {
	case !ok:
		if !memory.Replicated(ns) || strings.HasPrefix(ns, "agent://") && !inboxFor(ns, recv.principal) {
			return fmt.Sprintf("read: %s sent %s of %s to %s", from.id, k, ns, recv.id)
		}
	case s.cfg.BindingsOnDemandAt > 0 && strings.HasPrefix(ns, "project://"): // on demand every member reads a project, from its creation on
	case !from.svc.MayRead(recv.principal, ns):
		return fmt.Sprintf("read: %s sent %s of %s to %s, whose principal its policy does not let read it (t=%v)", from.id, k, ns, recv.id, from.now)
	case !s.everRead[to][j]:
		return fmt.Sprintf("read: %s sent %s of %s to %s, whose principal was never granted read (t=%v)", from.id, k, ns, recv.id, from.now)
	}
	return ""
}

// inboxFor reports whether ns is an inbox whose target is p.
func inboxFor(ns string, p namespace.Address) bool {
	addr, err := namespace.Parse(ns)
	if err != nil {
		return false
	}
	target, _, inbox := memory.InboxParties(addr)
	return inbox && target == p
}

func (s *Sim) latency(a, b int) time.Duration {
	base := s.lat[a][b]
	if base == 0 {
		span := s.cfg.LatencyMax - s.cfg.LatencyMin
		base = s.cfg.LatencyMin + time.Duration(s.rng.Int64N(int64(span)+1))
		s.lat[a][b] = base
	}
	mean := float64(s.cfg.LatencyMax-s.cfg.LatencyMin) / 4
	d := base + time.Duration(s.rng.ExpFloat64()*mean)
	if s.reorder > 0 && s.rng.Float64() < s.reorder {
		d += time.Duration(s.rng.Float64() * 10 * float64(base))
	}
	return max(d, time.Microsecond)
}

func (s *Sim) cut(a, b int) bool { return s.part[a] != s.part[b] }

// deliver hands a frame to its receiver n, on n's worker, unless n
// cannot take it.
func (s *Sim) deliver(n *simNode, e *event) {
	if !n.up || e.inc != n.inc || s.cut(e.from, e.node) {
		n.dropped++
		return
	}
	if n.stalled {
		n.inbox = append(n.inbox, e)
		return
	}
	s.step(n, e)
}

// step hands a frame to the node's loop, as its transport would, with the
// key the transport authenticated.
func (s *Sim) step(n *simNode, e *event) {
	n.loop.Deliver(s.nodes[e.from].ident.Public, e.frame)
	if s.diedInWrite(n) {
		return
	}
	s.observeSpread(n, e.from)
}

// diedInWrite crashes n if the power went in the middle of one of its
// writes (crashKV) while its loop applied a peer's delta.
func (s *Sim) diedInWrite(n *simNode) bool {
	if !n.cutDone {
		return false
	}
	s.emitf(n, outTrace, "crash n%d in the middle of a write", n.idx)
	s.emit(n, outItem{kind: outCutWrite})
	s.crash(n)
	return true
}
