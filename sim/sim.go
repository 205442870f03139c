package sim

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// epoch is virtual time zero; engines and clocks see epoch+now.
var epoch = time.Unix(1_800_000_000, 0).UTC()

type evKind uint8

const (
	evDeliver evKind = iota
	evTick
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
	inc   int // receiver's incarnation when sent: a crash loses what is in flight
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

type simNode struct {
	idx       int
	id        replica.PeerID
	rep       crdt.ReplicaID
	principal namespace.Address
	ident     acl.Identity
	st        *replica.MemState
	eng       *replica.Engine
	clock     *crdt.Clock
	up        bool
	member    bool
	stalled   bool
	inbox     []*event
	inc       int
	// counters of engines lost in crashes
	deadMaxQueue  int
	deadFallbacks uint64
	digests       map[string]crdt.Digest // cache, invalidated by dirty
	dirty         map[string]bool
}

// Sim is one simulated cluster. Build it with New and drive it with Run;
// it is single-threaded and deterministic.
type Sim struct {
	cfg   Config
	seals *crdt.SealCache
	rng   *rand.Rand
	codec *wire.Codec
	now   time.Duration
	seq   uint64
	q     eventQueue
	nodes []*simNode
	byID  map[replica.PeerID]int
	byRep map[crdt.ReplicaID]int
	nss   []string
	nsIdx map[string]int
	lat   [][]time.Duration // per-link base latency, drawn lazily
	part  []int             // partition group per node; all equal when healed

	// permissions
	book     *acl.Book
	policy   *acl.Policy
	read     [][]bool // [node][ns]
	write    [][]bool
	everWrit [][]bool // write held at some point (writes are never revoked)
	creator  []int    // node whose principal created ns

	loss, dup, reorder float64
	quiet              bool
	quietAt            time.Duration
	convergedAt        time.Duration
	pending            int // deliveries scheduled
	trace              hash.Hash
	traceOut           io.Writer

	ref       map[string]*crdt.Map // reference: join of every acknowledged op
	acked     []ackedOp
	forged    []forgedOp
	forgers   map[[2]int]bool // (node, ns) that sent a forged write
	tracked   []*spread
	sentViols []string
	stats     counters
	faults    []*fault
	lastFault time.Duration
}

type counters struct {
	messages, bytes                    uint64
	deltaMsgs, deltaBytes              uint64
	syncMsgs, syncBytes                uint64
	applied, rejected, refused         uint64
	dropped, unknown                   uint64
	ops, skipped                       int
	saves, updates, deletes            int
	tagOps, retracts, grants           int
	revokes, forgedN, attacks, crashes int
	minDeltaBytes                      uint64 // Σ encoded size of each local delta × its receivers at send time
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

// New builds a cluster from cfg without running it.
func New(cfg Config) (*Sim, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sim{seals: crdt.NewSealCache(1 << 20),
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x6d6e656d6f)),
		codec:   wire.NewCodec(0),
		byID:    map[replica.PeerID]int{},
		byRep:   map[crdt.ReplicaID]int{},
		nsIdx:   map[string]int{},
		ref:     map[string]*crdt.Map{},
		forgers: map[[2]int]bool{},
		trace:   sha256.New(),
		loss:    cfg.Loss, dup: cfg.Dup, reorder: cfg.Reorder,
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
		seed := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(fmt.Sprintf("mnemo sim node %d ", i)), cfg.Seed))
		ident, err := acl.IdentityFromSeed(seed[:])
		if err != nil {
			return nil, err
		}
		n := &simNode{
			idx: i, id: replica.PeerID(fmt.Sprintf("n%d", i)), ident: ident,
			rep: ident.ReplicaID(), principal: namespace.MustParse(fmt.Sprintf("agent://a%d", i)),
			st: replica.NewMemState(), clock: crdt.NewClock(0),
			digests: map[string]crdt.Digest{}, dirty: map[string]bool{},
		}
		if _, dup := s.byRep[n.rep]; dup {
			return nil, fmt.Errorf("sim: replica id collision at node %d", i)
		}
		s.byID[n.id], s.byRep[n.rep] = i, i
		s.nodes = append(s.nodes, n)
	}
	if err := s.initACL(); err != nil {
		return nil, err
	}
	for _, n := range s.nodes {
		n.member = n.idx < cfg.Nodes-cfg.Joins
		if cfg.Scenario != nil {
			n.member = !slices.Contains(cfg.Scenario.absent, n.idx)
		}
		n.up = true
		for j, ns := range s.nss {
			if s.read[n.idx][j] {
				n.st.Map(ns)
			}
		}
		s.startEngine(n)
	}
	s.setPeers()
	return s, nil
}

func (s *Sim) addNS(ns string) {
	s.nsIdx[ns] = len(s.nss)
	s.nss = append(s.nss, ns)
	s.ref[ns] = crdt.NewMap()
}

// Namespaces lists the simulated namespaces.
func (s *Sim) Namespaces() []string { return append([]string(nil), s.nss...) }

func (s *Sim) startEngine(n *simNode) {
	ec := s.cfg.Engine
	ec.Self, ec.Replica = n.id, n.rep
	ec.Signer = n.signer()
	ec.Seals = s.seals // verified once for the whole simulation, as each real node would once for itself
	ec.Seed = s.cfg.Seed ^ uint64(n.inc)<<32 ^ uint64(n.idx)
	n.eng = replica.New(ec, n.st, &nodePolicy{s: s, n: n})
}

// signer seals the node's writes and signs its deltas with its key.
func (n *simNode) signer() crdt.Signer { return n.ident.Signer() }

func (s *Sim) peerOf(n *simNode) replica.Peer {
	return replica.Peer{ID: n.id, Key: n.ident.Public, Replica: n.rep, Principals: []namespace.Address{n.principal}}
}

// setPeers gives every live member the current membership.
func (s *Sim) setPeers() {
	var peers []replica.Peer
	for _, n := range s.nodes {
		if n.member {
			peers = append(peers, s.peerOf(n))
		}
	}
	for _, n := range s.nodes {
		if !n.up {
			continue
		}
		if n.member {
			n.eng.SetPeers(peers)
		} else {
			n.eng.SetPeers(nil)
		}
		s.drain(n)
	}
}

func (s *Sim) schedule(e *event) {
	s.seq++
	e.seq = s.seq
	if e.kind == evDeliver {
		s.pending++
	}
	heap.Push(&s.q, e)
}

func (s *Sim) wall() time.Time { return epoch.Add(s.now) }

func (s *Sim) tracef(format string, args ...any) {
	line := fmt.Sprintf("%9.3fs ", s.now.Seconds()) + fmt.Sprintf(format, args...) + "\n"
	io.WriteString(s.trace, line)
	if s.traceOut != nil {
		io.WriteString(s.traceOut, line)
	}
}

// SetTrace writes a line per operation and fault to w (messages go only
// into the trace hash).
func (s *Sim) SetTrace(w io.Writer) { s.traceOut = w }

// drain takes the engine's outputs the way the node does (replica doc.go,
// "The loop"): applies accepted deltas (the node persists every apply, so a
// crash keeps them), reports the outcome (Advance), counts rejections and
// puts messages on the virtual network, until the engine has nothing more.
// The simulated node refuses nothing unless hooks.refuse says so.
func (s *Sim) drain(n *simNode) {
	for n.eng.HasReady() {
		rd := n.eng.Ready()
		var refused []replica.Refusal
		for i, a := range rd.Apply {
			if s.cfg.hooks.refuse > 0 && s.rng.Float64() < s.cfg.hooks.refuse {
				refused = append(refused, replica.Refusal{Index: i, Err: errRefusedByHook})
				s.stats.refused++
				continue
			}
			if _, err := n.clock.Observe(a.Delta.MaxTimestamp(), s.wall()); err != nil {
				s.sentViols = append(s.sentViols, fmt.Sprintf("clock skew on %s: %v", n.id, err))
			}
			n.st.Apply(a)
			n.dirty[a.Namespace] = true
			s.stats.applied++
			s.observeSpread(n, a)
		}
		n.eng.Advance(refused)
		s.stats.rejected += uint64(len(rd.Rejected))
		for _, err := range rd.Errors {
			s.sentViols = append(s.sentViols, fmt.Sprintf("state error on %s: %v", n.id, err)) // MemState has none
		}
		for _, env := range rd.Messages {
			s.send(n, env)
		}
	}
}

// errRefusedByHook is the simulated node's refusal (hooks.refuse).
var errRefusedByHook = errors.New("sim: refused by the test hook")

func (s *Sim) send(from *simNode, env replica.Envelope) {
	frame, err := s.codec.Encode(env.Msg)
	if err != nil {
		s.sentViols = append(s.sentViols, fmt.Sprintf("encode %v from %s: %v", env.Msg.Kind, from.id, err))
		return
	}
	to, ok := s.byID[env.To]
	if !ok {
		s.sentViols = append(s.sentViols, fmt.Sprintf("message to unknown peer %s", env.To))
		return
	}
	s.stats.messages++
	s.stats.bytes += uint64(len(frame))
	switch env.Msg.Kind {
	case wire.KindDeltas:
		s.stats.deltaMsgs++
		s.stats.deltaBytes += uint64(len(frame))
	case wire.KindSyncRequest, wire.KindSyncReply:
		s.stats.syncMsgs++
		s.stats.syncBytes += uint64(len(frame))
	}
	// Invariant 3, checked at send time against the policy of that moment.
	for _, d := range env.Msg.Deltas {
		s.checkMayReceive(from, to, d.Namespace, env.Msg.Kind)
	}
	// Contexts (dot metadata, no memory) may go to a peer not yet known to
	// read: the engine answers a sync with its context so a grant can reach
	// the requester. Only memory content counts for invariant 3.
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(s.now))
	s.trace.Write(hdr[:])
	s.trace.Write([]byte(from.id + ">" + env.To + ":"))
	s.trace.Write(frame)

	if s.cut(from.idx, to) || s.rng.Float64() < s.loss {
		s.stats.dropped++
		return
	}
	copies := 1
	if s.dup > 0 && s.rng.Float64() < s.dup {
		copies = 2
	}
	for range copies {
		d := s.latency(from.idx, to)
		s.schedule(&event{at: s.now + d, kind: evDeliver, node: to, from: from.idx, inc: s.nodes[to].inc, frame: frame})
	}
}

func (s *Sim) checkMayReceive(from *simNode, to int, ns string, k wire.Kind) {
	j, ok := s.nsIdx[ns]
	if !ok || !s.read[to][j] {
		s.sentViols = append(s.sentViols, fmt.Sprintf("read: %s sent %s of %s to %s, whose principal may not read it (t=%v)", from.id, k, ns, s.nodes[to].id, s.now))
	}
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

func (s *Sim) deliver(e *event) {
	s.pending--
	n := s.nodes[e.node]
	if !n.up || e.inc != n.inc || s.cut(e.from, e.node) {
		s.stats.dropped++
		return
	}
	if n.stalled {
		n.inbox = append(n.inbox, e)
		return
	}
	s.step(n, e)
}

func (s *Sim) step(n *simNode, e *event) {
	msg, err := s.codec.Decode(e.frame)
	if err != nil {
		s.sentViols = append(s.sentViols, fmt.Sprintf("decode on %s: %v", n.id, err))
		return
	}
	if err := n.eng.Step(s.nodes[e.from].id, msg); err != nil {
		if !errors.Is(err, replica.ErrUnknownPeer) {
			s.sentViols = append(s.sentViols, fmt.Sprintf("step on %s: %v", n.id, err))
		}
		s.stats.unknown++
	}
	s.drain(n)
}

// Run drives the cluster to the end: workload and faults, then quiet until
// convergence or Config.QuietLimit, then the invariant checks.
func (s *Sim) Run() *Report {
	start := time.Now()
	s.plan()
	for i, n := range s.nodes {
		phase := time.Duration(s.rng.Int64N(int64(s.cfg.TickInterval)))
		s.schedule(&event{at: phase, kind: evTick, node: i})
		_ = n
	}
	limit := time.Duration(math.MaxInt64)
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(*event)
		if e.at > limit {
			break
		}
		s.now = e.at
		switch e.kind {
		case evDeliver:
			s.deliver(e)
		case evTick:
			n := s.nodes[e.node]
			if n.up {
				n.eng.Tick(s.wall())
				s.drain(n)
			}
			s.schedule(&event{at: s.now + s.cfg.TickInterval, kind: evTick, node: e.node})
		case evOp:
			s.op()
		case evFault:
			s.applyFault(e.fault)
			if e.fault.kind == fQuiet {
				limit = s.now + s.cfg.QuietLimit
				s.schedule(&event{at: s.now, kind: evCheck})
			}
		case evCheck:
			if s.convergedAt == 0 && s.converged() {
				s.convergedAt = s.now
			}
			// Anti-entropy never stops, so "quiet" is: converged, and then
			// nothing in flight or two ack timeouts passed (stragglers land).
			if s.convergedAt != 0 && (s.pending == 0 || s.now-s.convergedAt >= 2*s.cfg.Engine.AckTimeout) {
				limit = s.now
				continue
			}
			s.schedule(&event{at: s.now + 100*time.Millisecond, kind: evCheck})
		}
	}
	return s.report(time.Since(start))
}
