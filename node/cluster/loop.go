package cluster

import (
	"crypto/ed25519"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Config configures a node's replication. Zero fields take the defaults noted.
type Config struct {
	Service  *memory.Service
	Identity acl.Identity
	Agents   func() []namespace.Address // the node's local principals, advertised in gossip; default the service's owner
	Engine   replica.Config             // queue bounds and timings (Self/Replica are filled in)
	Tick     time.Duration              // engine tick, in Clock time; default 500ms (Start only)
	// TreeTick is how often the loop sends what the broadcast trees owe
	// (announcements, wants for lost pushes: replica.Engine.FlushTrees)
	// between ticks; default 25ms (Start only).
	TreeTick   time.Duration
	LocalQueue int          // local deltas waiting for the loop; default 4096
	SendQueue  int          // frames waiting per peer; default 256 (Start only)
	Logger     *slog.Logger // default: discard
	Clock      Clock        // default: the wall clock (Start); required by NewStepped
	// Codec encodes and decodes the loop's frames; default a new
	// wire.NewCodec(0). Loops in one process may share one (a Codec is safe
	// for concurrent use, and its output does not depend on what it
	// encoded before): the simulator does, since each codec's compressor
	// keeps a history buffer the size of the largest frame it made.
	Codec *wire.Codec
	// Bindings, if set, keeps the one copy of each binding the loop's
	// directory admits (acl.Directory.SetTable); default nil, a copy of
	// its own. The simulator shares one between its nodes.
	Bindings *acl.BindingTable

	// StartTransport opens the node's frame transport; required by Start.
	// node/cluster/realnet.Transport is QUIC (sync/quicnet).
	StartTransport func(in Inbound) (Transport, error)
	// StartMembership starts the node's membership advertising self, and
	// calls onChange with a fresh Members snapshot after every change:
	// never concurrently, possibly one call for a burst, the last call the
	// latest state, none after Membership.Close returns. onChange does not
	// block. Required by Start. node/cluster/realnet.Membership is
	// memberlist gossip (sync/gossip).
	StartMembership func(self Advert, onChange func([]Sighting)) (Membership, error)

	// Incarnation is this start of the node, advertised in its Advert: each
	// start must pick a higher one, so that peers address the restarted
	// node rather than its old incarnation (incarnations.go). Default: the
	// Clock's time at start, in nanoseconds since 1970 (a restart on a clock
	// stepped back behind the old start is taken for the old incarnation
	// until the membership finds that one dead, as before incarnations).
	Incarnation uint64

	// Addr is what a Stepped advertises as its address (Advert.Addr): the
	// addr its peers' send functions get for it. Start ignores it and
	// advertises the transport's address.
	Addr string

	// Observer, when set, is told the loop's measurements (observe.go):
	// replication lag, sync durations and sizes, frames. Default nil.
	Observer Observer

	// BindingsOnDemandAt is the membership, this node included, from which
	// bindings travel only where they are used rather than to every member
	// (bindings_demand.go). Zero or negative, the default: never (on demand
	// costs more than it saves so far: bindings_demand.go, "Measured").
	BindingsOnDemandAt int

	// SkipWriteCheck is a planted bug, for the simulator's test that its
	// sweep finds one (sim: TestPlantedBugFound): the loop then accepts a
	// namespace's content from any member, whether its agent may write it
	// or not. Never set on a node.
	SkipWriteCheck bool
}

// ErrStopped is returned by requests to a Cluster or a Stepped that is
// closed.
var ErrStopped = errors.New("cluster: stopped")

// Member is one cluster member as `GET /v1/members` shows it.
type Member struct {
	NodeID string   `json:"node_id"`
	Key    string   `json:"key"` // the node's public key (acl.EncodePublicKey): what a hand-over names
	Agents []string `json:"agents"`
	Addr   string   `json:"addr"`
	State  string   `json:"state"`
	Self   bool     `json:"self,omitempty"`
}

// Status is the replication state as `GET /v1/status` shows it.
type Status struct {
	NodeID   string              `json:"node_id"`
	Replica  string              `json:"replica"`
	QUIC     string              `json:"quic"`
	Gossip   string              `json:"gossip"`
	Peers    []replica.PeerStats `json:"peers"`
	Applied  uint64              `json:"applied"`
	Rejected uint64              `json:"rejected"`
	// BindingConflicts counts claims to host an agent that another node
	// already hosts: refused, and each logged with both nodes' ids.
	BindingConflicts uint64 `json:"binding_conflicts"`
	// BindingPulls counts the pulls of a refused delta's bindings sent
	// to its sender (bindings_pull.go).
	BindingPulls  uint64            `json:"binding_pulls"`
	DroppedFrames uint64            `json:"dropped_frames"`
	LocalOverflow uint64            `json:"local_overflows"`
	Namespaces    []NamespaceDigest `json:"namespaces"`
	// Agreement (with digests): per peer and namespace, how the peer's
	// causal context as it last told it compares with this node's now
	// (replica.Engine.Agreement). What digest sync compares, without the
	// scan a digest needs; as fresh as the pair's last sync.
	Agreement []replica.PeerAgreement `json:"agreement,omitempty"`
	// Trees: the engine's broadcast trees (replica.TreeStats).
	Trees replica.TreeStats `json:"trees"`
	// Syncs: the engine's digest syncs by cause (replica.SyncStats).
	Syncs replica.SyncStats `json:"syncs"`
}

// NamespaceDigest is one replicated namespace's state digest: equal on two
// nodes exactly when they hold the same state of it.
type NamespaceDigest struct {
	Namespace string `json:"namespace"`
	Digest    string `json:"digest,omitempty"`  // with ?digests=true
	Records   int    `json:"records,omitempty"` // with ?digests=true
}

// loop is the replication loop's state and logic, shared by its two
// drivers: Cluster feeds it from channels on a goroutine of its own and
// sends through a goroutine per peer; Stepped feeds it from its caller's
// calls and sends synchronously. Its methods run on the driver's loop (the
// goroutine, or the caller of a Stepped) unless they say otherwise; what
// reaches a peer depends only on the order of its inputs, never on map
// order, so that a Stepped is deterministic.
type loop struct {
	cfg   Config
	svc   *memory.Service
	log   *slog.Logger
	codec *wire.Codec
	eng   *replica.Engine
	self  replica.PeerID
	// replica is this node's own replica id (cfg.Identity's): the write
	// checks compare every dot's replica with it, and deriving it hashes
	// the key (0.4% of a 100-node simulation's CPU when done per check).
	replica crdt.ReplicaID
	drv     driver

	// local is written by the service's writers (onLocalDelta), any
	// goroutine; overflow too. A Cluster's goroutine waits on the channel
	// local; a Stepped, which nothing waits on, has none and queues in
	// localQ under localMu instead, which grows only as far as it is used
	// (a channel of LocalQueue slots is 96 KiB a node made at once: 91 MB
	// of a 1,000-node simulation).
	local    chan localDelta
	localMu  sync.Mutex
	localQ   []localDelta
	spareQ   []localDelta // localQ's other buffer (takeLocal)
	overflow sync.Map     // ns → true: local deltas dropped, digest sync needed
	stopped  atomic.Bool  // closed: local deltas are ignored

	// loop-owned
	peers     map[replica.PeerID]peerInfo // the incarnation addressed, per alive member
	sightings []Sighting                  // the membership last set
	// proofs that an incarnation's address holds its key (incarnations.go)
	proved  map[candidate]bool
	proving map[candidate]bool
	wanted  map[candidate]Sighting
	bx      bindingsExchange // with each peer (bindings.go)
	demand  demandState      // bindings on demand (bindings_demand.go)
	// membersGen counts the membership's changes (setMembers)
	membersGen uint64
	// deltaSigners: per namespace, the keys' replicas that signed acl
	// records of a delta refused for a writer which did not count for want
	// of their signer's binding (deltaPolicy notes them, the refusal's
	// pull takes them: pullForRejection); cleared at each of the engine's
	// outputs.
	deltaSigners map[string][]crdt.ReplicaID
	// refusedFrom: per peer, the namespaces whose content from it was
	// refused for want of an authority this node may learn later (the
	// binding of its author), synced again when the bindings change
	// (resyncRefused). At most maxRefused pairs; past that, anti-entropy.
	refusedFrom map[replica.PeerID]map[string]refusal
	refusedN    int
	// applyRefused: the replicas the memory service's refusals of this
	// output's deltas lacked, by (peer, namespace), for the engine's
	// Rejections of the same deltas (noteRefused); cleared with deltaSigners.
	applyRefused map[refusedKey][]crdt.ReplicaID
	senders      map[replica.PeerID]sender // by value: one allocation less a peer
	// syncWatches: this node's sync requests whose answer has not ended,
	// by peer and namespace (observe.go; only with an Observer)
	syncWatches map[syncKey]syncWatch

	applied, rejected, dropped, localOver, conflicts, pulls atomic.Uint64

	knownMu sync.RWMutex
	// known: the public keys of live members, as arrays (a string key
	// was a 32-byte allocation more per member and node)
	known map[[ed25519.PublicKeySize]byte]bool
	// dir binds principals to the node keys that host them, from verified
	// binding records only (bindings.go); byReplica indexes it.
	dir           *acl.Directory
	byReplica     map[crdt.ReplicaID][]namespace.Address // the principals each replica's node hosts now
	everByReplica map[crdt.ReplicaID][]namespace.Address // … or hosted before a hand-over
	// bindingsFrames are dir's bindings frames, one per bindingsForm: made
	// when first sent, dropped when dir changes (reindexBindings), as are
	// heldBindings (the short ids of the bindings dir holds) and
	// bindingsSum (their digest).
	bindingsFrames [bindingsForms][]byte
	heldBindings   map[bindingKey]bool
	bindingsSum    []byte
	// bindingIDs and bindingEncs: the short id and the encoding of every
	// binding dir holds, in its order (the index frames carry the ids).
	bindingIDs, bindingEncs [][]byte
	bindingReps             []crdt.ReplicaID // the replica of each binding's key
	bindingsHash            setHash          // the set hash of the encodings (bindings_digest.go)
	// hostOf: the key of the replica each principal is listed under in
	// byReplica; moved: the replicas whose list changed since
	// refreshPrincipals last ran, with their key.
	hostOf map[namespace.Address]ed25519.PublicKey
	moved  map[crdt.ReplicaID]ed25519.PublicKey
	// ownBindings: the encoding of every binding naming this node's key
	// (its claims, hand-overs to it), which its probes carry.
	ownBindings [][]byte
}

// driver is what the loop needs from what runs it.
type driver interface {
	// open returns the outlet of a peer that joined (or moved to addr).
	open(id replica.PeerID, addr string, key ed25519.PublicKey) outlet
	// members is the membership now (a change of the bindings re-reads it).
	members() []Sighting
	// prove checks that addr holds key (Prover). True: proved now. False:
	// the driver runs the proof and reports it with loop.proofDone, on the
	// loop, once; the loop asks again for a candidate only after that.
	prove(c candidate, addr string, key ed25519.PublicKey) bool
}

// outlet takes one peer's frames, in order.
type outlet interface {
	// push hands frame on without waiting for the peer; false: dropped.
	// The frame may go to other peers too: nobody modifies it.
	push(frame []byte) bool
	// close ends the outlet; nothing is pushed after it.
	close()
}

type sender struct {
	addr string
	inc  uint64 // the incarnation it sends to
	out  outlet
}

type peerInfo struct {
	member *Sighting // into the loop's sightings: a copy was 104 bytes a peer
	peer   replica.Peer
}

type localDelta struct {
	ns string
	d  *crdt.Map
}

// newLoop checks cfg, fills in its defaults, and builds the loop's state:
// the stored bindings, the claims of the local principals, the engine.
// Nothing is hooked to the service yet (hook).
func newLoop(cfg Config, drv driver) (*loop, error) {
	if cfg.Service == nil || cfg.Identity.Private == nil {
		return nil, errors.New("cluster: a service and an identity are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 500 * time.Millisecond
	}
	if cfg.TreeTick <= 0 {
		cfg.TreeTick = 25 * time.Millisecond
	}
	if cfg.LocalQueue <= 0 {
		cfg.LocalQueue = 4096
	}
	if cfg.SendQueue <= 0 {
		cfg.SendQueue = 256
	}
	if cfg.Codec == nil {
		cfg.Codec = wire.NewCodec(0)
	}
	if cfg.Agents == nil {
		owner := cfg.Service.Owner()
		cfg.Agents = func() []namespace.Address { return []namespace.Address{owner} }
	}
	l := &loop{
		cfg: cfg, svc: cfg.Service, log: cfg.Logger.With("component", "cluster"), codec: cfg.Codec,
		self:        replica.PeerID(cfg.Identity.NodeID()),
		replica:     cfg.Identity.ReplicaID(),
		drv:         drv,
		peers:       map[replica.PeerID]peerInfo{},
		bx:          newBindingsExchange(cfg.Clock.Now(), replica.PeerID(cfg.Identity.NodeID())),
		senders:     map[replica.PeerID]sender{},
		known:       map[[ed25519.PublicKeySize]byte]bool{},
		proved:      map[candidate]bool{},
		proving:     map[candidate]bool{},
		wanted:      map[candidate]Sighting{},
		syncWatches: map[syncKey]syncWatch{},
	}
	if _, stepped := drv.(*Stepped); !stepped {
		l.local = make(chan localDelta, cfg.LocalQueue)
	}
	if l.cfg.Incarnation == 0 {
		l.cfg.Incarnation = uint64(cfg.Clock.Now().UnixNano())
	}
	l.loadBindings()
	l.dir.SetTable(cfg.Bindings)
	l.claimAgents()
	ecfg := cfg.Engine
	ecfg.Self, ecfg.Replica = l.self, l.replica
	ecfg.Signer = cfg.Identity.Signer()
	l.eng = replica.New(ecfg, storeState{l.svc}, &policy{l: l})
	// The engine's first input is its time (replica.Engine.Tick): what it
	// sends before the first tick is timed from now, not the zero time.
	l.eng.Tick(cfg.Clock.Now())
	return l, nil
}

// hook makes the loop the service's key lookup and author check, and its
// local deltas the loop's input.
func (l *loop) hook() {
	l.svc.SetKeyOf(l.keyOf)
	l.svc.SetAuthorCheck(l.hostedBy)
	l.svc.OnLocalDelta(l.onLocalDelta)
}

// advert is what the node advertises, with addr its frames' address.
func (l *loop) advert(addr string) Advert {
	var agents []string
	for _, a := range l.cfg.Agents() {
		agents = append(agents, a.String())
	}
	return Advert{NodeID: l.cfg.Identity.NodeID(), PublicKey: l.cfg.Identity.Public, Addr: addr, Agents: agents, Incarnation: l.cfg.Incarnation}
}

// onLocalDelta is the service's local delta listener, called by its
// writers on any goroutine.
func (l *loop) onLocalDelta(ns string, d *crdt.Map) {
	if !memory.Replicated(ns) || l.stopped.Load() {
		return
	}
	if l.queueLocal(localDelta{ns, d}) {
		return
	}
	// The loop is behind: never block the writer; sync this namespace instead.
	l.overflow.Store(ns, true)
	l.localOver.Add(1)
}

// queueLocal queues ld for the loop; false: the queue is full.
func (l *loop) queueLocal(ld localDelta) bool {
	if l.local != nil {
		select {
		case l.local <- ld:
			return true
		default:
			return false
		}
	}
	l.localMu.Lock()
	defer l.localMu.Unlock()
	if len(l.localQ) >= l.cfg.LocalQueue {
		return false
	}
	l.localQ = append(l.localQ, ld)
	return true
}

// takeLocal hands the engine every local delta waiting, and reports
// whether there was any.
func (l *loop) takeLocal() bool {
	took := false
	if l.local == nil {
		for {
			l.localMu.Lock()
			q := l.localQ
			if len(q) == 0 {
				l.localMu.Unlock()
				return took
			}
			l.localQ, l.spareQ = l.spareQ, nil
			l.localMu.Unlock()
			for _, ld := range q {
				l.eng.LocalDelta(ld.ns, ld.d)
			}
			took = true
			clear(q)
			l.localMu.Lock()
			l.spareQ = q[:0]
			l.localMu.Unlock()
		}
	}
	for {
		select {
		case ld := <-l.local:
			l.eng.LocalDelta(ld.ns, ld.d)
			took = true
		default:
			return took
		}
	}
}

// receive handles a frame from the member whose key is from.
func (l *loop) receive(from ed25519.PublicKey, frame []byte) {
	id := replica.PeerID(acl.NodeIDOf(from))
	m, err := l.codec.Decode(frame)
	if err != nil {
		l.rejected.Add(1)
		l.log.Warn("undecodable frame", "peer", id, "err", err)
		return
	}
	l.observeReceived(id, m, frame)
	if m.Kind == wire.KindBindings {
		l.receiveBindings(id, m)
		return
	}
	if err := l.eng.Step(id, m); err != nil {
		l.log.Debug("frame from a peer not (yet) in membership", "peer", id, "err", err)
	}
}

// tick is what the loop does every Config.Tick: syncs for the namespaces
// whose local deltas overflowed, the engine's timers, the bindings.
func (l *loop) tick() {
	var over []string
	l.overflow.Range(func(k, _ any) bool {
		over = append(over, k.(string))
		return true
	})
	slices.Sort(over)
	for _, ns := range over {
		l.overflow.Delete(ns)
		for _, p := range l.eng.Peers() {
			_ = l.eng.RequestSync(p.ID, ns)
		}
	}
	l.retryProofs()
	now := l.cfg.Clock.Now()
	l.eng.Tick(now)
	l.pullHeldWriters()
	if now.Sub(l.bx.lastSummary) >= BindingsInterval {
		l.sendBindingsSummary()
	} else {
		l.askBindings()
	}
	l.askBindingsAgain(now)
	l.discoverReaders(now)
}

// flushTrees sends what the trees owe now, if they owe anything.
func (l *loop) flushTrees() {
	now := l.cfg.Clock.Now()
	if due := l.eng.TreesDue(); !due.IsZero() && !now.Before(due) {
		l.eng.FlushTrees(now)
	}
}

// act drives the engine's outputs as the replica package's loop contract
// says (its doc.go, "The loop"): apply each delta through ApplyRemote, whose
// refusals (clock skew, acl, surgery, authors, the disk) go back to the
// engine with Advance, then send; again while the engine has more (Advance
// emits acks and releases held deltas).
func (l *loop) act() {
	for l.eng.HasReady() {
		r := l.eng.Ready()
		var refused []replica.Refusal
		var now time.Time
		if l.cfg.Observer != nil && len(r.Apply) > 0 {
			now = l.cfg.Clock.Now()
		}
		for i, a := range r.Apply {
			if err := l.svc.ApplyRemote(a.Namespace, a.Delta); err != nil {
				// counted and logged with the Rejection Advance reports
				refused = append(refused, replica.Refusal{Index: i, Err: err})
				if reps := l.pullForRejection(a.From, a.Namespace, err, a.Delta); len(reps) > 0 {
					if l.applyRefused == nil {
						l.applyRefused = map[refusedKey][]crdt.ReplicaID{}
					}
					l.applyRefused[refusedKey{a.From, a.Namespace}] = reps
				}
				continue
			}
			l.applied.Add(1)
			l.observeApplied(a, now)
		}
		l.eng.Advance(refused)
		for _, rj := range r.Rejected {
			l.rejected.Add(1)
			if rj.Held {
				// The engine applies it once the writer's binding
				// (pulled now) or grant comes, or asks again itself.
				l.log.Debug("delta held for its writer's right", "peer", rj.From, "namespace", rj.Namespace, "err", rj.Err)
				l.pullForRejection(rj.From, rj.Namespace, rj.Err, nil)
				continue
			}
			l.log.Warn("delta rejected", "peer", rj.From, "namespace", rj.Namespace, "err", rj.Err)
			l.noteRefused(rj, l.pullForRejection(rj.From, rj.Namespace, rj.Err, nil))
		}
		clear(l.deltaSigners)
		clear(l.applyRefused)
		for _, err := range r.Errors {
			l.log.Error("replication state", "err", err)
		}
		l.sendAll(r.Messages)
	}
}

// sendAll encodes messages and pushes them to their peers, in order.
func (l *loop) sendAll(msgs []replica.Envelope) {
	for _, env := range msgs {
		frame, err := l.codec.Encode(env.Msg)
		if err != nil {
			l.log.Error("encode frame", "peer", env.To, "err", err)
			continue
		}
		if l.push(env.To, env.Msg.Kind, frame) && env.Msg.Kind == wire.KindSyncRequest {
			l.watchSync(env.To, env.Msg)
		}
	}
}

// push hands frame, a message of kind, to peer id's outlet, and reports
// whether it took it. A frame for a peer without one (not a live member)
// or that its outlet drops is counted as dropped: the engine's ack timeout
// turns a lost batch into a digest sync.
func (l *loop) push(id replica.PeerID, kind wire.Kind, frame []byte) bool {
	if s, ok := l.senders[id]; !ok || !s.out.push(frame) {
		l.dropped.Add(1)
		return false
	}
	if l.cfg.Observer != nil {
		l.cfg.Observer.Frame(true, kind.String(), len(frame))
	}
	return true
}

// setMembers takes the membership: the peers are its alive members, each
// at the incarnation choosePeers picks; a peer whose incarnation changed
// restarted, and is treated as one that joins.
func (l *loop) setMembers(ms []Sighting) {
	l.sightings = ms
	l.membersGen++
	l.demand.advertisers = nil
	var peers []replica.Peer
	next := map[replica.PeerID]peerInfo{}
	for id, m := range l.choosePeers(ms) {
		// Which agents the member hosts comes from verified bindings, never
		// from the names its metadata advertises.
		p := replica.Peer{ID: id, Key: m.PublicKey, Replica: acl.ReplicaIDOf(m.PublicKey), Principals: l.principalsOfKey(m.PublicKey), Incarnation: m.Incarnation}
		peers = append(peers, p)
		next[id] = peerInfo{member: m, peer: p}
		if old, ok := l.peers[id]; ok && old.member.Incarnation != m.Incarnation {
			l.log.Info("peer restarted: addressing its new incarnation", "peer", id, "addr", m.Addr, "was", old.member.Addr)
		}
	}
	// Every alive incarnation's key may connect: the old one's frames are
	// the node's as much as the new one's.
	known := map[[ed25519.PublicKeySize]byte]bool{}
	for _, m := range ms {
		if m.State == StateAlive && replica.PeerID(m.NodeID) != l.self && len(m.PublicKey) == ed25519.PublicKeySize {
			known[[ed25519.PublicKeySize]byte(m.PublicKey)] = true
		}
	}
	l.peers = next
	l.forgetSyncWatches(next)
	l.bx.forget(func(id replica.PeerID) bool { // a member that comes back, or restarted, is asked again
		pi, ok := next[id]
		s, sending := l.senders[id]
		return !ok || sending && s.inc != pi.member.Incarnation
	})
	l.knownMu.Lock()
	l.known = known
	l.knownMu.Unlock()
	for id, s := range l.senders {
		if pi, ok := next[id]; !ok || pi.member.Addr != s.addr || pi.member.Incarnation != s.inc {
			s.out.close()
			delete(l.senders, id)
		}
	}
	var joined []replica.PeerID
	for id := range next {
		if _, ok := l.senders[id]; !ok {
			joined = append(joined, id)
		}
	}
	slices.Sort(joined)
	demand := l.onDemand()
	for _, id := range joined {
		m := next[id].member
		l.senders[id] = sender{addr: m.Addr, inc: m.Incarnation, out: l.drv.open(id, m.Addr, m.PublicKey)}
		if !demand {
			l.bx.probing[id] = probed{at: l.cfg.Clock.Now(), tries: 1} // probed again until heard (askBindings)
		}
	}
	if !demand {
		l.sendBindingsTo(joined, bindingsProbe) // tell the newcomers whom this node hosts, and learn whom they do
	}
	slices.SortFunc(peers, func(a, b replica.Peer) int { return strings.Compare(string(a.ID), string(b.ID)) })
	l.eng.SetPeers(peers)
}

// closeOutlets closes every peer's outlet.
func (l *loop) closeOutlets() {
	for id, s := range l.senders {
		s.out.close()
		delete(l.senders, id)
	}
}

// knownKey reports whether pub belongs to a live member: the transport's
// Inbound.Allowed. Any goroutine.
func (l *loop) knownKey(pub ed25519.PublicKey) bool {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return len(pub) == ed25519.PublicKeySize && l.known[[ed25519.PublicKeySize]byte(pub)]
}

// status reports the counters and the namespaces held, with peers the
// engine's stats. Any goroutine.
func (l *loop) status(peers []replica.PeerStats, agreement []replica.PeerAgreement, digests bool) Status {
	st := Status{NodeID: string(l.self), Replica: l.replica.String(), Peers: peers, Agreement: agreement}
	st.Applied, st.Rejected, st.DroppedFrames, st.LocalOverflow = l.applied.Load(), l.rejected.Load(), l.dropped.Load(), l.localOver.Load()
	st.BindingConflicts, st.BindingPulls = l.conflicts.Load(), l.pulls.Load()
	st.Namespaces = []NamespaceDigest{}
	for _, ns := range (storeState{l.svc}).Namespaces() {
		nd := NamespaceDigest{Namespace: ns}
		if digests {
			m, err := l.svc.Store().State(ns)
			if err != nil {
				continue
			}
			nd.Digest, nd.Records = m.Digest().String(), m.Len()
		}
		st.Namespaces = append(st.Namespaces, nd)
	}
	return st
}

// memberList is ms as Members shows it, one entry per node: this node's
// own incarnation, and for the others the newest alive (else the newest),
// so that a restarted node is not listed beside its old incarnation. Any
// goroutine.
func (l *loop) memberList(ms []Sighting) []Member {
	var out []Member
	shown := map[acl.NodeID]int{} // index in ms
	for i, m := range ms {
		j, ok := shown[m.NodeID]
		switch {
		case !ok:
			shown[m.NodeID] = i
		case replica.PeerID(m.NodeID) == l.self:
			if m.Incarnation == l.cfg.Incarnation {
				shown[m.NodeID] = i
			}
		case (m.State == StateAlive) != (ms[j].State == StateAlive):
			if m.State == StateAlive {
				shown[m.NodeID] = i
			}
		case m.Incarnation > ms[j].Incarnation:
			shown[m.NodeID] = i
		}
	}
	for i, m := range ms {
		if shown[m.NodeID] != i {
			continue
		}
		agents := []string{}
		for _, p := range l.principalsOfKey(m.PublicKey) {
			agents = append(agents, p.String())
		}
		out = append(out, Member{NodeID: string(m.NodeID), Key: acl.EncodePublicKey(m.PublicKey), Agents: agents, Addr: m.Addr, State: m.State,
			Self: replica.PeerID(m.NodeID) == l.self})
	}
	return out
}

// requestSync asks peer (a node id; "" = every peer) for a digest sync of
// every shared namespace.
func (l *loop) requestSync(peer string) error {
	if peer != "" {
		return l.eng.RequestSync(replica.PeerID(peer), "")
	}
	for _, p := range l.eng.Peers() {
		_ = l.eng.RequestSync(p.ID, "")
	}
	return nil
}
