package replica

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// PeerID names a peer node (its acl.NodeID).
type PeerID string

// Peer is a member of the cluster as the engine sees it.
type Peer struct {
	ID PeerID
	// Key is the node key the peer's frames are authenticated with (the
	// driver's transport) and its namespace deltas are signed with.
	Key     ed25519.PublicKey
	Replica crdt.ReplicaID // crdt.ReplicaOfKey(Key)
	// Principals are the agents bound to the peer's key by verified
	// records, never what the peer merely advertises.
	Principals []namespace.Address
	// Incarnation tells the starts of the peer's node apart. A peer listed
	// by SetPeers with another incarnation than before has restarted: what
	// was queued or in flight to its old incarnation is dropped and every
	// namespace it may read is synced, as for a peer that joins.
	Incarnation uint64
}

// Policy answers the permission questions the engine asks. Implementations
// must be safe to call from the goroutine that drives the engine.
type Policy interface {
	// ShouldHold reports whether this node keeps a replica of ns.
	ShouldHold(ns string) bool
	// PeerMayRead reports whether peer should receive ns.
	PeerMayRead(peer Peer, ns string) bool
	// ReplicaMayWrite reports whether writes made by replica may apply in ns.
	ReplicaMayWrite(replica crdt.ReplicaID, ns string) bool
}

// DeltaPolicy is an optional capability of a Policy: a delta may carry the
// records that establish its own authority (signed grants travel inside the
// namespace they govern), so the checks of one delta may use a policy that
// already counts them. The returned Policy is used for that delta only.
type DeltaPolicy interface {
	ForDelta(ns string, d *crdt.Map) Policy
}

// State is the node's replicated state as the engine reads it. Calls come
// from the goroutine driving the engine; they may block on disk.
type State interface {
	// Namespaces lists the namespaces held.
	Namespaces() []string
	// Context returns a copy of the causal context of ns.
	Context(ns string) *crdt.Context
	// Missing calls fn for each record entry of ns holding a dot outside
	// have, and returns the dots of ns's context outside have that no record
	// holds.
	Missing(ns string, have *crdt.Context, fn func(id string, rec *crdt.Record) error) (removed *crdt.Context, err error)
	// Retracted lists the retracted ids of ns, sorted.
	Retracted(ns string) ([]string, error)
}

// Config tunes an engine. Zero fields take the defaults noted.
type Config struct {
	Self    PeerID
	Replica crdt.ReplicaID
	// Signer signs every namespace delta this node sends; its key must
	// derive Replica (crdt.ReplicaOfKey). Required.
	Signer crdt.Signer
	// Seals remembers verified seals; nil gets a cache of its own. The
	// simulator shares one between its nodes.
	Seals *crdt.SealCache
	// DeltaSigs remembers the delta signatures that verified; nil verifies
	// each one (a node receives a delta from its sender once, barring
	// retransmissions). The simulator shares one between its nodes, since
	// every holder receives the same signed delta.
	DeltaSigs *crdt.SealCache
	// Payloads, if set, is asked for the one copy of each relayed delta's
	// bytes this engine keeps for its tree (PayloadTable); nil keeps the
	// bytes each message brought. The simulator shares one between its
	// nodes, since every holder keeps the very same immutable bytes.
	Payloads PayloadTable
	// MaxSyncContexts bounds the distinct namespaces one sync request or
	// reply may ask about; the rest are refused. Default 4096.
	MaxSyncContexts int
	// QueueMaxDeltas bounds the deltas waiting for one peer (counted before
	// joining). Default 10000.
	QueueMaxDeltas int
	// QueueMaxBytes bounds their encoded size (an over-estimate: sizes are
	// summed before joining). Default 8 MiB.
	QueueMaxBytes int
	// Window is the number of unacknowledged batches per peer. Default 4.
	Window int
	// BatchMaxBytes bounds one message's payload. Default 256 KiB.
	BatchMaxBytes int
	// WholeAnswerMaxBytes: a sync answer that claims dots removed here
	// goes in one message up to this size, not in batches of
	// BatchMaxBytes (digestsync.go says why). Default 8 MiB, half the
	// wire's frame limit.
	WholeAnswerMaxBytes int
	// AckTimeout: a batch unacknowledged this long is presumed lost and the
	// pair falls back to digest sync. Default 10s.
	AckTimeout time.Duration
	// Retransmits is how many times an unacknowledged batch is sent again
	// before AckTimeout; RetransmitAfter is the least wait before the
	// first resend (see retransmit.go for the wait). Defaults 2 and 1s;
	// Retransmits < 0 sends every batch once.
	Retransmits     int
	RetransmitAfter time.Duration
	// AntiEntropyInterval between digest syncs of each namespace held with
	// a random peer that may read it (one that may write it, if this node
	// may not). Default 10s.
	AntiEntropyInterval time.Duration
	// Limits for decoding peers' deltas. Default crdt.DefaultLimits.
	Limits crdt.Limits
	// Seed for the engine's random choices (anti-entropy peer).
	Seed uint64
	// PendingMax bounds the live deltas held back until what they depend on
	// arrives. Default 4096; overflow drops the oldest and syncs instead.
	PendingMax int
	// WriterHoldFor is how long a delta refused for its writer's right
	// (a *WriterError), when that writer's node hosts no agent known
	// here, is held for it (writerhold.go). Default
	// 2×RetransmitAfter; negative holds none (the sender, or a relayed
	// delta's author, is asked for a digest sync at once).
	WriterHoldFor time.Duration
	// WriterHoldMax bounds the deltas so held; their bytes are bounded
	// by QueueMaxBytes. Default 1024; the oldest goes first, and is
	// asked for again as if its time had passed.
	WriterHoldMax int
	// TreeThreshold is the size of a namespace's replica set (this node and
	// the peers that may read it) from which this node's live deltas of
	// it go over the namespace's epidemic broadcast tree instead of one
	// send per reader (tree.go; doc.go, "Trees"). Default
	// DefaultTreeThreshold (8); negative turns trees off: every live delta
	// goes direct and tree messages are ignored (a cluster uses one
	// setting). An engine without Self has no trees. mnemo node passes -1
	// unless told otherwise (node.Config.TreeThreshold).
	TreeThreshold int
	// Tree configures the trees (sync/epidemic); Self and Seed are set per
	// namespace, zero fields take epidemic's defaults. New panics on a
	// configuration epidemic.New refuses.
	Tree epidemic.Config
}

func (c *Config) withDefaults() {
	if c.QueueMaxDeltas <= 0 {
		c.QueueMaxDeltas = 10000
	}
	if c.QueueMaxBytes <= 0 {
		c.QueueMaxBytes = 8 << 20
	}
	if c.Window <= 0 {
		c.Window = 4
	}
	if c.BatchMaxBytes <= 0 {
		c.BatchMaxBytes = 256 << 10
	}
	if c.WholeAnswerMaxBytes <= 0 {
		c.WholeAnswerMaxBytes = 8 << 20
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 10 * time.Second
	}
	switch {
	case c.Retransmits == 0:
		c.Retransmits = 2
	case c.Retransmits < 0:
		c.Retransmits = 0
	}
	if c.RetransmitAfter <= 0 {
		c.RetransmitAfter = time.Second
	}
	if c.WriterHoldFor == 0 {
		c.WriterHoldFor = 2 * c.RetransmitAfter
	}
	if c.WriterHoldMax <= 0 {
		c.WriterHoldMax = 1024
	}
	if c.AntiEntropyInterval <= 0 {
		c.AntiEntropyInterval = 10 * time.Second
	}
	if c.Limits == (crdt.Limits{}) {
		c.Limits = crdt.DefaultLimits()
	}
	if c.PendingMax <= 0 {
		c.PendingMax = 4096
	}
	if c.MaxSyncContexts <= 0 {
		c.MaxSyncContexts = 4096
	}
	if c.Seals == nil {
		c.Seals = crdt.NewSealCache(0)
	}
	if c.TreeThreshold == 0 {
		c.TreeThreshold = DefaultTreeThreshold
	}
	if c.Self == "" {
		c.TreeThreshold = -1 // a tree names its node: without Self, direct sends
	}
}

// Envelope is a message for one peer.
type Envelope struct {
	To  PeerID
	Msg *wire.Message
}

// Apply is a delta from a peer that passed every check; the node persists
// it (after checking its clock skew and its own gates) and reports the
// outcome through Advance before feeding the engine again.
type Apply struct {
	From      PeerID
	Namespace string
	Delta     *crdt.Map
	// Live: a delta its author's node pushed as it was written (held or
	// not), rather than part of a digest sync answer. For the driver's
	// figures (replication lag by path); the engine decides by it only
	// what a refusal for clock skew does (skewRefused).
	Live bool
	// author: a relayed delta's author, asked for a digest sync if the
	// driver refuses the delta (tree.go, askAuthor).
	author PeerID
}

// Rejection is a namespace delta refused on arrival, or refused by the
// driver after the engine accepted it (ErrRefused, reported by Advance).
type Rejection struct {
	From      PeerID
	Namespace string
	Err       error
	// Held: a delta refused for the right of a writer bound to no agent
	// here (a *WriterError) that the engine keeps for Config.WriterHoldFor and applies if that
	// right comes (a binding: UpdatePeers; a grant: a delta of the
	// namespace applied), or else asks its sender for again
	// (writerhold.go). The driver need not ask for it again itself.
	Held bool
}

// Ready is what the engine produced since the last call. The driver applies
// Apply in order, reports the refusals through Advance, and sends Messages
// (doc.go, "The loop").
type Ready struct {
	Messages []Envelope
	Apply    []Apply
	Rejected []Rejection
	// Errors of State met while answering or asking for a digest sync
	// (each wrapped with the peer and namespace); counted in
	// PeerStats.StateErrors. The sync concerned is not (fully) answered.
	Errors []error
}

// WriterError is an ErrNotAllowed refusal (errors.Is finds it) naming
// the replica whose right to write the namespace this node did not find:
// its grant may not be here yet, or the binding that says which agents
// that replica's node hosts (the driver may pull it from the sender).
type WriterError struct {
	Replica crdt.ReplicaID
	Err     error // wraps ErrNotAllowed
}

func (e *WriterError) Error() string { return e.Err.Error() }
func (e *WriterError) Unwrap() error { return e.Err }

// Errors reported in Rejections.
var (
	ErrNotHeld     = errors.New("replica: namespace not held here")
	ErrNotAllowed  = errors.New("replica: author may not write the namespace")
	ErrUnknownPeer = errors.New("replica: message from an unknown peer")
	// ErrBadSignature: a namespace delta not signed by the peer's key.
	ErrBadSignature = errors.New("replica: delta not signed by its sender")
	// ErrNotAuthor: a live delta carrying writes of another replica than
	// its sender's (live deltas are their sender's own writes).
	ErrNotAuthor = errors.New("replica: live delta holds another replica's writes")
	// ErrTooManyContexts: a sync message asking about more namespaces than
	// Config.MaxSyncContexts.
	ErrTooManyContexts = errors.New("replica: too many namespaces in one sync message")
)

// PeerStats are one peer's counters, for status and metrics.
type PeerStats struct {
	Peer          PeerID    `json:"peer"`
	QueueDeltas   int       `json:"queue_depth"`
	QueueBytes    int       `json:"queue_bytes"`
	InFlight      int       `json:"in_flight"`
	DeltasSent    uint64    `json:"deltas_sent"`
	DeltasRecv    uint64    `json:"deltas_received"`
	Rejected      uint64    `json:"rejected"`
	StateErrors   uint64    `json:"state_errors"`
	Fallbacks     uint64    `json:"fallbacks"`
	Retransmits   uint64    `json:"retransmits"`
	AcksTwice     uint64    `json:"acks_twice"` // acks sent twice, this peer's acks being lost (retransmit.go)
	SyncsSent     uint64    `json:"syncs_sent"`
	BytesSent     uint64    `json:"bytes_sent"`
	LastSync      time.Time `json:"last_sync,omitzero"`
	MaxQueueDepth int       `json:"max_queue_depth"`
}

type queued struct {
	ns    string
	delta *crdt.Map
	from  uint64 // first counter of this replica created by the joined deltas
}

// inflight is a batch sent and not acknowledged yet: kept whole, so that
// it can be sent again (at most Window per peer).
type inflight struct {
	first  time.Time // first sent
	sentAt time.Time // last sent
	sends  int
	nss    []string
	msg    *wire.Message
	size   int
}

type peerState struct {
	Peer
	listed   uint64 // the last SetPeers that listed the peer (Engine.listed)
	queue    []queued
	index    map[string]int // ns → position in queue
	qDeltas  int
	qBytes   int
	inflight map[uint64]inflight
	nextSeq  uint64
	// the round trip measured from acks (retransmit.go)
	srtt, rttvar time.Duration
	rttSamples   int
	needSync     map[string]SyncCause
	// authority: namespaces of needSync asked of the peer though this
	// node cannot tell it may read them (askAuthority)
	authority map[string]bool
	answered  map[string]time.Time // ns → when the peer was last sent all of ns it lacked (answerSync)
	asked     map[string]asking    // ns → the sync request of ns the peer has not answered yet
	// readable: whether the peer could read each namespace when last
	// asked; a namespace never asked about has no entry (doc.go, "Just become a reader")
	readable map[string]bool
	// joining: namespaces the peer has just become a reader of, until its
	// first sync answer goes out. Live deltas wait for that answer (which
	// carries them), so they cannot reach the peer before the records —
	// such as the signed grant — that authorise them.
	joining map[string]time.Time
	// joinWait: namespaces to sync with a peer that has just joined, left
	// to the peer (the smaller id) to ask first until joinAt.
	joinWait map[string]SyncCause
	joinAt   time.Time
	// told: the peer's context of each namespace held, as it last told
	// it (agreement.go); nil until it tells one.
	told map[string]toldContext
	// heard: when the peer's last message arrived (retransmit.go)
	heard time.Time
	// unanswered: the first frame sent to the peer since it last spoke (gap.go)
	unanswered time.Time
	// acked: the last batches acked to the peer, nil until the first
	// (sendAck); ackLost: when one came again
	acked   *[ackRing]uint64
	ackedN  int
	ackLost time.Time
	stats   PeerStats
}

// syncTries bounds the requests in a row for one namespace that a peer
// leaves unanswered (lost on the way, or its answer lost): after that,
// anti-entropy repairs it. Without the retries, a lost request or answer
// waited for anti-entropy to pick that peer again, on average once every
// (peers × AntiEntropyInterval) — the simulator found seeds where it took
// more than five minutes.
const syncTries = 4

// Engine is the replication state machine of one node. It is not safe for
// concurrent use: one goroutine drives it.
type Engine struct {
	cfg    Config
	st     State
	pol    Policy
	rng    *rand.Rand
	peers  map[PeerID]*peerState
	listed uint64   // SetPeers calls
	order  []PeerID // peers' ids sorted (sortedPeers), nil when peers changed since
	// writers: per namespace, the sorted ids of the peers that may write
	// it and this node if it may (writersOf), until the peers change or
	// the next anti-entropy round.
	writers map[string][]PeerID
	now     time.Time
	nextAE  time.Time
	ready   Ready
	wait    outcomes // of the deltas to apply, and the acks waiting on them
	// pending holds live deltas waiting for their dependencies, oldest first.
	pending []held
	// writerHeld holds deltas refused for their writer's right, oldest
	// first (writerhold.go); writerHeldBytes their encoded size,
	// writerHeldNS their count by namespace, writerDirty that a peer's
	// principals changed or a delta of one of those namespaces applied
	// since they were last checked.
	writerHeld      []writerHeld
	writerHeldBytes int
	writerHeldNS    map[string]int
	writerDirty     bool
	// sigs, during one flushAll, memoises the signatures of the namespace
	// deltas it sends (by the hash of the signed bytes): a local delta
	// queued for every reader goes out as the same bytes to each, and one
	// signature costs more than hashing them. nil outside flushAll.
	sigs map[[32]byte][]byte
	// toldLast: per namespace held, the last distinct context a peer told,
	// encoded (agreement.go), shared by the peers that tell the same.
	toldLast map[string][]byte
	// trees: the namespaces' broadcast trees (tree.go), made when a
	// replica set reaches Config.TreeThreshold or a peer speaks of one,
	// never dropped; treeList holds them in namespace order, for every
	// walk over the trees (the drivers' calls between ticks, TreesDue and
	// FlushTrees, and each tick's), which would otherwise sort the map's
	// keys each time. No walk makes a tree.
	trees     map[string]*tree
	treeList  []*tree
	treeStats TreeStats
	syncStats SyncStats
	// treeOut: tree payloads waiting for releaseTree.
	treeOut []treeSend
	// emptyAsked: when an empty holder last asked for a namespace whose
	// tree traffic it refused (askEmpty), by namespace.
	emptyAsked map[string]time.Time
	// emptyTold: when this node, holding none of a namespace, last told a
	// requester its empty context, by namespace: a second requester within
	// RetransmitAfter is not told (answerSync), since each one told sends
	// the whole namespace.
	emptyTold map[string]time.Time
}

// held is a checked live delta whose dependencies have not all arrived.
type held struct {
	from   PeerID
	origin crdt.ReplicaID
	first  uint64 // NamespaceDelta.From
	ns     string
	d      *crdt.Map
}

// New returns an engine over st and pol. It panics if cfg.Signer cannot
// sign for cfg.Replica: a node that cannot sign its deltas cannot take part.
func New(cfg Config, st State, pol Policy) *Engine {
	cfg.withDefaults()
	if cfg.Signer.Sign == nil || crdt.ReplicaOfKey(cfg.Signer.Key) != cfg.Replica {
		panic("replica: Config.Signer is required and its key must derive Config.Replica")
	}
	if cfg.TreeThreshold > 0 {
		tc := cfg.Tree
		tc.Self = epidemic.PeerID(cfg.Self)
		if _, err := epidemic.New(tc); err != nil {
			panic(fmt.Sprintf("replica: Config.Tree: %v", err))
		}
	}
	return &Engine{
		cfg: cfg, st: st, pol: pol,
		rng:   rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Replica))),
		peers: map[PeerID]*peerState{},
	}
}

// LocalDelta sends a delta made on this node to every peer that should
// hold ns: over ns's broadcast tree when its replica set reached
// Config.TreeThreshold (tree.go), else queued for each of them, and sends
// what the windows allow.
func (e *Engine) LocalDelta(ns string, d *crdt.Map) {
	e.appliedIn(ns) // a grant a held delta lacked may be in it
	// A namespace this delta created has no history a new reader lacks.
	fresh := len(d.Context().Missing(e.st.Context(ns))) == 0
	from := d.FirstDot(e.cfg.Replica)
	if from == 0 {
		from = ^uint64(0) // creates nothing (a retract, a bare remove)
	}
	ids := e.sortedPeers()
	may := make([]bool, len(ids))
	n := 0
	for i, id := range ids {
		if may[i] = e.pol.PeerMayRead(e.peers[id].Peer, ns); may[i] {
			n++
		}
	}
	overTree := e.treesOn() && 1+n >= e.cfg.TreeThreshold
	var readers, live []PeerID
	for i, id := range ids {
		p := e.peers[id]
		if !may[i] {
			put(&p.readable, ns, false)
			continue
		}
		readers = append(readers, id)
		if was, known := p.readable[ns]; !was {
			put(&p.readable, ns, true)
			if known && !fresh {
				// The peer has just become a reader (a grant): it lacks the
				// namespace's history, not only this delta.
				e.askNewReader(p, ns)
				put(&p.joining, ns, e.now)
				continue
			}
			// Never asked about: this node did not hold ns when the peer
			// joined, nor since (doc.go, "Just become a reader"). The
			// peer is taken for a reader it already was, over a tree as
			// over direct sends.
		}
		live = append(live, id)
	}
	if overTree {
		if e.broadcastLive(e.treeFor(ns, readers), ns, d, from) {
			e.flushAll()
			return
		}
	}
	size := len(d.Encode())
	for _, id := range live {
		e.enqueue(e.peers[id], ns, d, size, from)
	}
	e.flushAll()
}

func (e *Engine) enqueue(p *peerState, ns string, d *crdt.Map, size int, from uint64) {
	if p.needSync[ns] != causeNone {
		return // a digest sync is pending for ns: it will carry this too
	}
	if t, ok := p.joining[ns]; ok {
		if e.now.Sub(t) < e.cfg.AckTimeout {
			return // the new reader's first sync answer will carry this
		}
		delete(p.joining, ns) // no answer in time: back to live deltas
	}
	if p.qDeltas+1 > e.cfg.QueueMaxDeltas || p.qBytes+size > e.cfg.QueueMaxBytes {
		e.overflow(p)
		needSyncOf(p, ns, CauseOverflow)
		return
	}
	if i, ok := p.index[ns]; ok {
		p.queue[i].delta.Join(d)
		p.queue[i].from = min(p.queue[i].from, from)
	} else {
		put(&p.index, ns, len(p.queue))
		p.queue = append(p.queue, queued{ns: ns, delta: d.Clone(), from: from})
	}
	p.qDeltas++
	p.qBytes += size
	p.stats.MaxQueueDepth = max(p.stats.MaxQueueDepth, p.qDeltas)
}

// put sets (*m)[k] = v, making the map on first use. A peer's maps stay
// nil until traffic with it needs them: a node holds one peerState per
// member, and at 300 simulated nodes the maps made eagerly for each were
// a sixth of the live heap (sim/doc.go, "A thousand nodes").
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// overflow drops the queue and schedules digest sync of what it held.
func (e *Engine) overflow(p *peerState) {
	for _, q := range p.queue {
		needSyncOf(p, q.ns, CauseOverflow)
	}
	p.queue, p.index, p.qDeltas, p.qBytes = nil, nil, 0, 0
	p.stats.Fallbacks++
}

func (e *Engine) flushAll() {
	e.sigs = map[[32]byte][]byte{}
	for _, id := range e.sortedPeers() {
		e.flush(e.peers[id])
	}
	e.sigs = nil
}

// signDelta signs nd for a message of kind, reusing a signature of the
// same bytes made in this flushAll.
func (e *Engine) signDelta(nd *wire.NamespaceDelta, kind wire.Kind) {
	if e.sigs == nil {
		nd.Sign(kind, e.cfg.Signer)
		return
	}
	b := nd.SignedBytes(kind)
	k := sha256.Sum256(b)
	if sig, ok := e.sigs[k]; ok {
		nd.Sig = sig
		return
	}
	nd.Sig = e.cfg.Signer.Sign(b)
	e.sigs[k] = nd.Sig
}

// flush sends queued deltas and pending sync requests while the window allows.
func (e *Engine) flush(p *peerState) {
	if len(p.needSync) > 0 {
		e.requestSync(p)
	}
	for len(p.queue) > 0 && len(p.inflight) < e.cfg.Window {
		msg := &wire.Message{Kind: wire.KindDeltas}
		var nss []string
		size := 0
		for len(p.queue) > 0 {
			q := p.queue[0]
			if !e.pol.PeerMayRead(p.Peer, q.ns) {
				// Read was revoked while the delta waited: it must not go.
				p.queue = p.queue[1:]
				delete(p.index, q.ns)
				continue
			}
			enc := q.delta.Encode()
			if len(msg.Deltas) > 0 && size+len(enc) > e.cfg.BatchMaxBytes {
				break
			}
			nd := wire.NamespaceDelta{Namespace: q.ns, Delta: enc, From: q.from}
			e.signDelta(&nd, wire.KindDeltas)
			msg.Deltas = append(msg.Deltas, nd)
			nss = append(nss, q.ns)
			size += len(enc)
			p.queue = p.queue[1:]
			delete(p.index, q.ns)
		}
		for i := range p.queue {
			p.index[p.queue[i].ns] = i
		}
		if len(msg.Deltas) == 0 {
			p.qDeltas, p.qBytes = 0, 0 // everything left was revoked
			break
		}
		if len(p.queue) == 0 {
			p.qDeltas, p.qBytes = 0, 0
		} else {
			p.qBytes = max(0, p.qBytes-size)
			p.qDeltas = max(len(p.queue), p.qDeltas-len(nss))
		}
		p.nextSeq++
		msg.Seq = p.nextSeq
		put(&p.inflight, msg.Seq, inflight{first: e.now, sentAt: e.now, sends: 1, nss: nss, msg: msg, size: size})
		p.stats.DeltasSent += uint64(len(nss))
		p.stats.BytesSent += uint64(size)
		e.send(p.ID, msg)
	}
}

func (e *Engine) send(to PeerID, m *wire.Message) {
	if p := e.peers[to]; p != nil {
		p.sent(e.now, m)
	}
	e.ready.Messages = append(e.ready.Messages, Envelope{To: to, Msg: m})
}

// Tick advances the engine's time: ack timeouts fall back to digest sync,
// and anti-entropy picks a random reader of each namespace. A driver ticks a new engine before
// any other input: until then its time is zero, and what it sends is
// timed from then (every ack timeout passed at the first Tick).
func (e *Engine) Tick(now time.Time) {
	e.now = now
	e.release()
	e.tickTrees()
	for _, id := range e.sortedPeers() {
		p := e.peers[id]
		e.checkInflight(p, now)
		if len(p.joinWait) > 0 && !now.Before(p.joinAt) {
			for ns, c := range p.joinWait {
				needSyncOf(p, ns, c)
			}
			clear(p.joinWait)
		}
	}
	for _, id := range e.sortedPeers() {
		p := e.peers[id]
		if len(p.asked) == 0 {
			continue // most peers: every tick walks them all
		}
		for _, ns := range slices.Sorted(maps.Keys(p.asked)) {
			a := p.asked[ns]
			switch {
			case a.want != nil && len(e.st.Context(ns).Missing(a.want)) == 0:
				delete(p.asked, ns) // everything the peer had is here
			case a.want != nil && e.heldHas(ns, a.want):
				// What it lacks is held for its writer's right
				// (writerhold.go): asking again would bring it again.
			case now.Sub(a.at) < p.syncRetryWait(e.cfg, a):
			case a.tries >= syncTries:
				delete(p.asked, ns) // anti-entropy's turn
			default:
				needSyncOf(p, ns, CauseRetry) // asked again (requestSync counts the try)
			}
		}
	}
	if e.nextAE.IsZero() {
		e.nextAE = now.Add(e.cfg.AntiEntropyInterval)
	}
	if !now.Before(e.nextAE) && len(e.peers) > 0 {
		e.nextAE = now.Add(e.cfg.AntiEntropyInterval)
		e.writers = nil
		e.forgetUnheld()
		e.refreshTrees()
		e.freshenTrees()
		e.antiEntropy()
	}
	e.flushAll()
}
