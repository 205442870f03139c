package epidemic

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"
)

// Ready is what the node produced since the last call of Node.Ready. The
// driver applies Deliver in order, opens connections to Connect, sends
// Messages in order, and then closes connections to Disconnect (after the
// messages to those peers have gone: a KindDisconnect is among them).
type Ready struct {
	Messages []Envelope
	// Deliver lists payloads received for the first time.
	Deliver []Delivery
	// Connect and Disconnect are the changes to the active view since the
	// last Ready, each sorted.
	Connect, Disconnect []PeerID
	// GaveUp lists payloads announced here and given up (every announcer
	// asked GraftTries times, or MaxMissing reached): the application's
	// repair must bring them (for mnemo, a digest sync).
	GaveUp []Missed
}

// Missed is a payload given up, with the peers that announced it.
type Missed struct {
	ID         MsgID
	Announcers []PeerID
}

// Stats are the node's counters, for status, metrics and the simulation.
type Stats struct {
	Delivered    uint64 `json:"delivered"`
	Duplicates   uint64 `json:"duplicates"`    // payloads received again
	PayloadsSent uint64 `json:"payloads_sent"` // KindGossip messages
	IHaveIDs     uint64 `json:"ihave_ids"`     // announcements sent
	IHaveMsgs    uint64 `json:"ihave_msgs"`    // KindIHave messages
	Grafts       uint64 `json:"grafts"`        // KindGraft messages
	Wants        uint64 `json:"wants"`         // KindWant messages
	Prunes       uint64 `json:"prunes"`        // KindPrune messages
	Control      uint64 `json:"control"`       // HyParView messages
	BytesSent    uint64 `json:"bytes_sent"`    // Message.Size summed
	GaveUp       uint64 `json:"gave_up"`       // missing payloads given up (tries or MaxMissing)
	Malformed    uint64 `json:"malformed"`     // messages refused by Step
}

// Add adds o's counters to s.
func (s *Stats) Add(o Stats) {
	s.Delivered += o.Delivered
	s.Duplicates += o.Duplicates
	s.PayloadsSent += o.PayloadsSent
	s.IHaveIDs += o.IHaveIDs
	s.IHaveMsgs += o.IHaveMsgs
	s.Grafts += o.Grafts
	s.Wants += o.Wants
	s.Prunes += o.Prunes
	s.Control += o.Control
	s.BytesSent += o.BytesSent
	s.GaveUp += o.GaveUp
	s.Malformed += o.Malformed
}

// link is a peer of the active view and its Plumtree state.
type link struct {
	id PeerID
	// eager is the link's state in the last tree that changed it: a new
	// origin's tree starts from these.
	eager     bool
	lazy      []Announcement // announcements waiting for the next IHave
	lazySince time.Time      // when lazy became non-empty
	heard     time.Time      // the last message from the peer (or the link's making)
	probed    time.Time      // the last Probe of the link
}

// request is a neighbor (or join) request waiting for its answer.
type request struct {
	peer     PeerID
	at       time.Time
	priority bool
	join     bool
}

// Node is the Plumtree-over-HyParView state machine of one node. It is not
// safe for concurrent use: one goroutine drives it (doc.go, "The loop").
type Node struct {
	cfg Config
	rng *rand.Rand
	now time.Time

	// HyParView.
	active   []*link // in order of arrival; bounded by ActiveSize
	passive  []PeerID
	pending  []request
	tried    map[PeerID]bool // passive peers asked since the last shuffle
	contact  PeerID          // the last Join's contact, to join again when alone
	joined   time.Time       // when the last join request left
	shuffle  time.Time       // next shuffle
	shuffled []PeerID        // what the last shuffle sent (evicted first on its reply)
	// nonActive: peers sent a KindDisconnect this tick for a Plumtree
	// message from outside the active view.
	nonActive map[PeerID]bool

	// Plumtree.
	rcv     *received
	missing map[MsgID]*missing
	order   []missingRef // missing in order of creation; stale refs skipped
	// missingDue is no later than the earliest deadline in missing (its
	// exact value after pullMissing, earlier if a payload came since);
	// zero when nothing is missing. Due reads it.
	missingDue time.Time
	// lazyDue is no later than the end of the earliest announcement batch
	// waiting (exact after Tick and Flush); zero when none waits.
	lazyDue time.Time
	seq     uint64
	// trees holds each origin's tree: which links its payloads are pushed
	// over (MaxTrees, least recently used dropped).
	trees       map[PeerID]*tree
	treeClock   uint64
	reported    []PeerID // the active view as of the last Ready
	viewChanged bool     // the active view changed since (maybe back)

	ready Ready
	stats Stats
}

// missing is a payload announced by IHave and not yet received.
type missing struct {
	seq        uint64
	deadline   time.Time
	announcers []PeerID
	asked      []PeerID // announcers sent a KindWant
	best       PeerID   // the announcer with the fewest hops, bestRound
	bestRound  int
	next       int // announcer to ask next
	tries      int
}

type missingRef struct {
	id  MsgID
	seq uint64
}

// New returns a node with cfg's defaults filled in, or an error wrapping
// ErrConfig.
func New(cfg Config) (*Node, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte(cfg.Self))
	return &Node{
		cfg:       cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, h.Sum64())),
		tried:     map[PeerID]bool{},
		nonActive: map[PeerID]bool{},
		rcv:       newReceived(&cfg),
		missing:   map[MsgID]*missing{},
		trees:     map[PeerID]*tree{},
	}, nil
}

// Config returns the configuration in use, defaults filled in.
func (n *Node) Config() Config { return n.cfg }

// Active returns the active view, sorted.
func (n *Node) Active() []PeerID {
	out := make([]PeerID, len(n.active))
	for i, l := range n.active {
		out[i] = l.id
	}
	slices.Sort(out)
	return out
}

// Eager returns the peers of the active view that origin's payloads are
// pushed to from here (its tree), sorted; nil if origin has no tree here.
func (n *Node) Eager(origin PeerID) []PeerID {
	t := n.trees[origin]
	if t == nil {
		return nil
	}
	return slices.Sorted(slices.Values(t.eager))
}

// Passive returns the passive view, sorted.
func (n *Node) Passive() []PeerID { return slices.Sorted(slices.Values(n.passive)) }

// Stats returns the node's counters.
func (n *Node) Stats() Stats { return n.stats }

// Received reports whether payload id was received or broadcast here and
// is still remembered (CacheMaxIDs, CacheTTL). Step takes another copy of
// it as a duplicate, so a driver need not check that copy's payload.
func (n *Node) Received(id MsgID) bool { return n.rcv.get(id) != nil }

// Missing returns how many announced payloads are awaited.
func (n *Node) Missing() int { return len(n.missing) }

// HasReady reports whether Ready has anything to return.
func (n *Node) HasReady() bool {
	r := &n.ready
	if len(r.Messages) > 0 || len(r.Deliver) > 0 || len(r.GaveUp) > 0 {
		return true
	}
	if !n.viewChanged {
		return false
	}
	if len(n.reported) != len(n.active) {
		return true
	}
	for _, l := range n.active {
		if !slices.Contains(n.reported, l.id) {
			return true
		}
	}
	return false
}

// Ready returns what the node produced since the last call.
func (n *Node) Ready() Ready {
	r := n.ready
	n.ready = Ready{}
	if !n.viewChanged {
		return r
	}
	n.viewChanged = false
	now := n.Active()
	for _, p := range now {
		if !slices.Contains(n.reported, p) {
			r.Connect = append(r.Connect, p)
		}
	}
	for _, p := range n.reported {
		if !slices.Contains(now, p) {
			r.Disconnect = append(r.Disconnect, p)
		}
	}
	n.reported = now
	return r
}

func (n *Node) send(to PeerID, m Message) {
	n.ready.Messages = append(n.ready.Messages, Envelope{To: to, Msg: m})
	s := &n.stats
	s.BytesSent += uint64(m.Size())
	switch m.Kind {
	case KindGossip:
		s.PayloadsSent++
	case KindIHave:
		s.IHaveMsgs++
		s.IHaveIDs += uint64(len(m.IHave))
	case KindGraft:
		s.Grafts++
	case KindWant:
		s.Wants++
	case KindPrune:
		s.Prunes++
	default:
		s.Control++
	}
}

// Tick advances the node's time: announcements are flushed, grafts sent
// for payloads announced and not received, unanswered neighbor requests
// given up, the passive view shuffled, the active view refilled, and the
// caches trimmed. Call it regularly and before any other input; between
// ticks, Flush at Due sends announcements and wants on time (or Tick at
// most IHaveInterval apart).
func (n *Node) Tick(now time.Time) {
	if n.now.IsZero() && !now.IsZero() {
		n.start(now)
	}
	n.now = now
	if len(n.nonActive) > 0 {
		clear(n.nonActive)
	}
	n.flushLazies(now)
	n.pullMissing()
	n.rcv.trim(now)
	n.expireRequests()
	if n.shuffle.IsZero() {
		// The first shuffle comes at a random point of the interval, so
		// nodes started together do not shuffle together.
		n.shuffle = now.Add(time.Duration(n.rng.Int64N(int64(n.cfg.ShuffleInterval) + 1)))
	} else if !now.Before(n.shuffle) {
		n.shuffle = now.Add(n.cfg.ShuffleInterval)
		clear(n.tried)
		n.sendShuffle()
	}
	n.fill()
}

// Due is the earliest time a Tick has announcements to flush or a
// payload to ask for (IHaveInterval after an announcement was queued, a
// missing payload's GraftTimeout or GraftRetry), zero when nothing waits.
// A driver that calls Flush then sends them on time whatever its Tick's
// period.
func (n *Node) Due() time.Time {
	if len(n.missing) == 0 {
		return n.lazyDue
	}
	return earlier(n.lazyDue, n.missingDue)
}

// earlier is the earlier of a and b, zero standing for none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// flushLazies sends the announcement batches whose IHaveInterval is over
// at now, and sets lazyDue to the end of the next.
func (n *Node) flushLazies(now time.Time) {
	n.lazyDue = time.Time{}
	for _, l := range n.active {
		if len(l.lazy) == 0 {
			continue
		}
		if now.Sub(l.lazySince) >= n.cfg.IHaveInterval {
			n.flushLazy(l)
		} else {
			n.lazyDue = earlier(n.lazyDue, l.lazySince.Add(n.cfg.IHaveInterval))
		}
	}
}

// Flush does what is due at now of what Tick does for payloads: the
// announcements batched IHaveInterval go out, and the payloads announced
// and not received past their wait are asked for. The views, the
// shuffle and the caches wait for Tick. Before the first Tick it does
// nothing.
func (n *Node) Flush(now time.Time) {
	if n.now.IsZero() || now.Before(n.now) {
		return
	}
	n.now = now
	n.flushLazies(now)
	n.pullMissing()
}

// start gives what happened before the node had a time (inputs before
// the first Tick with a time that is not zero: a driver whose own clock
// had not started, as the replica engine's before its first Tick) that
// time: now. Stamped at the zero time, a payload received then was
// forgotten at the first real Tick (now minus zero exceeds every TTL),
// payload and id, while its announcements were still queued: the peers
// asked this node for it, got no answer, and gave it up after GraftTries;
// requests made then were given up at once, and waits for payloads
// announced then ended at once.
func (n *Node) start(now time.Time) {
	n.rcv.restamp(now)
	n.missingDue = time.Time{}
	for _, ms := range n.missing {
		ms.deadline = now.Add(ms.deadline.Sub(time.Time{}))
		n.missingDue = earlier(n.missingDue, ms.deadline)
	}
	for i := range n.pending {
		n.pending[i].at = now
	}
	for _, l := range n.active {
		if len(l.lazy) > 0 {
			l.lazySince = now
		}
	}
	if n.contact != "" {
		n.joined = now
	}
}

// Step takes a message from a peer. The driver calls it only for messages
// whose sender the transport authenticated, and for a KindGossip only once
// the payload has passed its checks (doc.go, "The loop"); a payload is
// kept, not copied, for PayloadTTL, so the driver must not reuse its
// buffer. It returns an
// error wrapping ErrMalformed or ErrFromSelf for a message it refuses;
// nothing of such a message is taken.
func (n *Node) Step(from PeerID, m Message) error {
	if from == n.cfg.Self {
		return ErrFromSelf
	}
	if err := n.check(m); err != nil {
		n.stats.Malformed++
		return fmt.Errorf("%w: %s from %s: %s", ErrMalformed, m.Kind, from, err)
	}
	if l := n.link(from); l != nil {
		l.heard = n.now
	}
	switch m.Kind {
	case KindGossip, KindIHave, KindGraft, KindPrune:
		// Plumtree runs over the active view; a peer outside it believes
		// in a link this node does not have (a lost disconnect or neighbor
		// reply): tell it, so the links stay symmetric. A graft needs no
		// link: it asks for what this node announced.
		n.checkLink(from)
	}
	switch m.Kind {
	case KindGossip:
		n.onGossip(from, m)
	case KindIHave:
		n.onIHave(from, m.IHave)
	case KindGraft:
		n.setEager(n.tree(m.Origin), from, true)
		n.answer(from, m.IDs)
	case KindWant:
		n.answer(from, m.IDs)
	case KindPrune:
		// A prune for an origin without a tree here prunes nothing (and
		// must not make one: a peer could evict the trees in use).
		if t := n.trees[m.Origin]; t != nil {
			n.setEager(t, from, false)
		}
	case KindJoin:
		n.onJoin(from)
	case KindForwardJoin:
		n.onForwardJoin(from, m.Peer, m.TTL)
	case KindNeighbor:
		n.onNeighbor(from, m.Priority)
	case KindNeighborReply:
		n.onNeighborReply(from, m.Accept)
	case KindDisconnect:
		n.linkRefused(from)
	case KindShuffle:
		n.onShuffle(from, m)
	case KindShuffleReply:
		// Only an answer to this node's last shuffle is taken: a peer
		// cannot fill the passive view at will.
		if n.shuffled == nil {
			return nil
		}
		for _, p := range m.Peers {
			n.addPassive(p, n.shuffled)
		}
		n.shuffled = nil
	}
	return nil
}

// check bounds what a peer may make this node hold or do.
func (n *Node) check(m Message) error {
	c := &n.cfg
	switch m.Kind {
	case KindGossip:
		if m.Round < 1 || m.Origin == "" {
			return fmt.Errorf("round %d origin %q", m.Round, m.Origin)
		}
	case KindPrune:
		if m.Origin == "" {
			return errors.New("no origin")
		}
	case KindIHave:
		if len(m.IHave) == 0 || len(m.IHave) > c.IHaveMaxBatch {
			return fmt.Errorf("%d announcements (at most %d)", len(m.IHave), c.IHaveMaxBatch)
		}
	case KindGraft, KindWant:
		if m.Kind == KindGraft && m.Origin == "" {
			return errors.New("no origin")
		}
		if len(m.IDs) > c.IHaveMaxBatch {
			return fmt.Errorf("%d ids (at most %d)", len(m.IDs), c.IHaveMaxBatch)
		}
	case KindForwardJoin, KindShuffle:
		if m.Peer == "" || m.TTL < 0 || m.TTL > c.ActiveWalk {
			return fmt.Errorf("peer %q ttl %d", m.Peer, m.TTL)
		}
	case KindJoin, KindNeighbor, KindNeighborReply, KindDisconnect, KindShuffleReply:
	default:
		return fmt.Errorf("unknown kind %d", m.Kind)
	}
	if len(m.Peers) > c.PassiveSize || slices.Contains(m.Peers, "") {
		return fmt.Errorf("%d peers", len(m.Peers))
	}
	return nil
}

func (n *Node) link(p PeerID) *link {
	for _, l := range n.active {
		if l.id == p {
			return l
		}
	}
	return nil
}

// checkLink answers a Plumtree message from outside the active view
// with a KindDisconnect, once a tick.
func (n *Node) checkLink(from PeerID) {
	if n.link(from) != nil || n.requested(from) || n.nonActive[from] {
		return
	}
	if len(n.nonActive) < maxView {
		n.nonActive[from] = true
	}
	n.send(from, Message{Kind: KindDisconnect})
}

func (n *Node) requested(p PeerID) bool {
	return slices.ContainsFunc(n.pending, func(r request) bool { return r.peer == p })
}
