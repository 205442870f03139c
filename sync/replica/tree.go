package replica

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Live deltas of large replica sets go over epidemic broadcast trees
// (doc.go, "Trees"): one epidemic.Node per namespace, whose overlay is
// made of the namespace's readers only. This file drives those nodes as
// sync/epidemic's doc.go says, inside the engine: their messages leave as
// wire.KindTree messages in Ready.Messages, and relayed deltas arrive at
// Step, are checked against their author before the tree may forward
// them, and are applied through Ready.Apply like any live delta.

// DefaultTreeThreshold is Config.TreeThreshold's default.
const DefaultTreeThreshold = 8

// PayloadTable keeps one copy of each relayed delta's bytes
// (wire.NamespaceDelta.RelayBytes) for the engines sharing it. Intern
// returns bytes equal to payload, whose id (wire.RelayID) is id: a copy
// it kept, or payload itself, which it may keep. The bytes returned are
// never written to by the engine or by the table. Called from the engine's
// goroutine only; a table shared by several engines stepped on different
// goroutines must be safe for concurrent use.
type PayloadTable interface {
	Intern(id [wire.TreeIDSize]byte, payload []byte) []byte
}

// TreeStats are the engine's counters of its broadcast trees.
type TreeStats struct {
	// Trees is the number of namespaces with a tree here.
	Trees int `json:"trees"`
	// Broadcasts: local live deltas sent over a tree.
	Broadcasts uint64 `json:"broadcasts"`
	// Direct: local live deltas of a namespace at or above the threshold
	// sent to each reader instead, the tree having no link yet.
	Direct uint64 `json:"direct"`
	// Relayed: relayed deltas that passed the checks and were new here.
	Relayed uint64 `json:"relayed"`
	// Refused: tree messages dropped: from a peer that may not read the
	// namespace or that this node holds not, malformed, or from a peer
	// distrusted for a relayed delta it altered.
	Refused uint64 `json:"refused"`
	// Distrusted: peers dropped from a tree for relaying altered bytes.
	Distrusted uint64 `json:"distrusted"`
	// Withheld: payloads the tree would have sent to a peer that may not
	// read the namespace (the peer is dropped from the tree instead).
	Withheld uint64 `json:"withheld"`
	// Repairs: digest syncs asked of an author whose relayed delta had to
	// be held (it depends on writes that have not arrived: a tree lost
	// them) or was refused (by the driver, or for want of a grant here).
	Repairs uint64 `json:"repairs"`
	// CatchUps: answers sent unasked to a peer whose context, told lately,
	// lacked old writes a sync had just brought this node (catchup.go).
	CatchUps uint64 `json:"catch_ups"`
	// Unreachable: links dropped because the driver's transport could
	// not reach the peer (PeerUnreachable).
	Unreachable uint64 `json:"unreachable"`
	// Node sums the trees' own counters (epidemic.Stats).
	Node epidemic.Stats `json:"node"`
}

// Add adds o's counters to s; Trees becomes the larger of the two (the
// most trees one node had).
func (s *TreeStats) Add(o TreeStats) {
	s.Trees = max(s.Trees, o.Trees)
	s.Broadcasts += o.Broadcasts
	s.Direct += o.Direct
	s.Relayed += o.Relayed
	s.Refused += o.Refused
	s.Distrusted += o.Distrusted
	s.Withheld += o.Withheld
	s.Repairs += o.Repairs
	s.CatchUps += o.CatchUps
	s.Unreachable += o.Unreachable
	s.Node.Add(o.Node)
}

// tree is one namespace's broadcast tree here.
type tree struct {
	ns   string
	node *epidemic.Node
	// members are the peers offered to the overlay (Hint): the readers of
	// ns when last looked, less distrusted ones.
	members map[PeerID]bool
	// distrusted peers relayed a delta whose bytes failed a check no
	// honest relay would have let through (signature, seals, authorship,
	// decoding): they are kept out of this tree until they restart.
	distrusted map[PeerID]bool
	// sent: per peer, samples of the payloads and announcements this tree
	// sent it since it last spoke; probed: peers back from a silence that
	// were announced those again (gap.go). nil until the first.
	sent   map[PeerID]*sentIDs
	probed map[PeerID]probe
	// spreadBase: ns's context before a sync brought content that
	// repaired a gap, to be told to the links at the next Tick if it
	// brought enough; spreadAt: when last told (gap.go)
	spreadBase *crdt.Context
	spreadAt   time.Time
	// catchBase: ns's context before a sync brought content, when this
	// node may write ns (catchup.go)
	catchBase *crdt.Context
}

// relayed is a relayed delta checked in Step, waiting for the tree to
// deliver it (or take it as a duplicate).
type relayed struct {
	id     epidemic.MsgID
	nd     wire.NamespaceDelta
	d      *crdt.Map
	origin *peerState // nil for this node's own delta come back
}

func (e *Engine) treesOn() bool { return e.cfg.TreeThreshold > 0 }

// leave takes id out of t's overlay: out of members (so the next refresh
// offers it again if it may read) and reported failed to the tree. The
// caller drains t.
func (t *tree) leave(id PeerID) {
	delete(t.members, id)
	delete(t.sent, id)
	delete(t.probed, id)
	t.node.PeerFailed(epidemic.PeerID(id))
}

// treeFor returns ns's tree, made if it has none, with readers (ns's
// readers as they are now) offered to it.
func (e *Engine) treeFor(ns string, readers []PeerID) *tree {
	if t := e.trees[ns]; t != nil {
		e.offerReaders(t, readers)
		return t
	}
	c := e.cfg.Tree
	c.Self = epidemic.PeerID(e.cfg.Self)
	c.NoShuffle = true // freshenTrees keeps the passive views fresh
	h := fnv.New64a()
	h.Write([]byte(ns))
	c.Seed = e.cfg.Seed ^ h.Sum64()
	n, err := epidemic.New(c)
	if err != nil {
		panic(fmt.Sprintf("replica: Config.Tree: %v", err)) // checked by New
	}
	n.Tick(e.now)
	t := &tree{ns: ns, node: n, members: map[PeerID]bool{}, distrusted: map[PeerID]bool{}}
	if e.trees == nil {
		e.trees = map[string]*tree{}
	}
	e.trees[ns] = t
	i, _ := slices.BinarySearchFunc(e.treeList, ns, func(t *tree, ns string) int { return strings.Compare(t.ns, ns) })
	e.treeList = slices.Insert(e.treeList, i, t)
	e.offerReaders(t, readers)
	return t
}

// readersOf lists the peers that may read ns, sorted.
func (e *Engine) readersOf(ns string) []PeerID {
	var out []PeerID
	for _, id := range e.sortedPeers() {
		if e.pol.PeerMayRead(e.peers[id].Peer, ns) {
			out = append(out, id)
		}
	}
	return out
}

// offerReaders makes t's overlay the readers given: new ones are offered
// (Hint), departed ones reported failed, so no link stays to a peer that
// may no longer read. A tree short of peers is offered them all again.
func (e *Engine) offerReaders(t *tree, readers []PeerID) {
	var hint []epidemic.PeerID
	now := map[PeerID]bool{}
	for _, id := range readers {
		if t.distrusted[id] {
			continue
		}
		now[id] = true
		if !t.members[id] {
			hint = append(hint, epidemic.PeerID(id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.members)) {
		if !now[id] {
			t.leave(id)
		}
	}
	t.members = now
	if len(t.node.Active())+len(t.node.Passive()) < t.node.Config().ActiveSize {
		hint = hint[:0]
		for _, id := range readers {
			if now[id] {
				hint = append(hint, epidemic.PeerID(id))
			}
		}
	}
	if len(hint) > 0 {
		t.node.Hint(hint...)
	}
	e.drainTree(t, nil)
}

// refreshTrees makes a tree for every namespace held whose replica set
// reached the threshold and offers each tree its readers as they are now.
func (e *Engine) refreshTrees() {
	if !e.treesOn() {
		return
	}
	for _, ns := range e.st.Namespaces() {
		e.refreshTree(ns)
	}
}

// refreshTree is refreshTrees for ns alone.
func (e *Engine) refreshTree(ns string) {
	if !e.pol.ShouldHold(ns) {
		return
	}
	readers := e.readersOf(ns)
	if e.trees[ns] != nil || 1+len(readers) >= e.cfg.TreeThreshold {
		e.treeFor(ns, readers)
	}
}

// freshenTrees offers each tree a few of its members picked at random
// (as many as a shuffle brings, ShufflePassive), so its passive view stays
// a fresh sample of the readers. The trees start no shuffles of their own
// (epidemic.Config.NoShuffle): a shuffle walks six hops and carries eight
// peer ids to learn what the engine knows already, the readers, and in
// mnemo sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3 the shuffles
// were 7.3 of the 101 MB sent (doc.go, "Trees").
func (e *Engine) freshenTrees() {
	for _, t := range e.treeList {
		members := slices.Sorted(maps.Keys(t.members))
		k := min(len(members), t.node.Config().ShufflePassive)
		if k == 0 {
			continue
		}
		pick := make([]epidemic.PeerID, k)
		for i := range k {
			j := i + e.rng.IntN(len(members)-i)
			members[i], members[j] = members[j], members[i]
			pick[i] = epidemic.PeerID(members[i])
		}
		t.node.Hint(pick...)
		e.drainTree(t, nil)
	}
}

// peerGone tells every tree that id failed or restarted (its old
// incarnation's links are gone); a restarted peer is offered again by the
// next refresh.
func (e *Engine) peerGone(id PeerID) {
	for _, t := range e.treeList {
		delete(t.distrusted, id)
		t.leave(id)
		e.drainTree(t, nil)
	}
}

// PeerUnreachable tells the engine that the driver's transport could not
// deliver a frame to id (a send that failed, a connection that broke):
// every tree reports id failed, so its links move to other readers at
// once rather than wait for the membership to find id dead; id stays a
// peer, and the next refresh of the trees (a membership change, an
// anti-entropy round, a local delta at the threshold) offers it again.
// The driver calls it at most once a tick per peer, not per frame.
func (e *Engine) PeerUnreachable(id PeerID) {
	for _, t := range e.treeList {
		if t.members[id] {
			e.treeStats.Unreachable++
			t.leave(id)
			e.drainTree(t, nil)
		}
	}
}

// askSilentLinks has ns's tree ask its links that have been silent whether
// their far ends still hold them (epidemic.Node.Probe), on a sync answer
// bringing ns: writes that came another way than the tree. A node whose
// links were all held at its end only heard nothing over the tree and got
// every write from digest syncs, seconds late (doc.go, "Trees": in the
// simulator at N=1,000, seed 2, one such node was the last holder of
// each of the last eight tracked updates, up to 7.5 s after the write).
// Not the heal probes of gap.go (tree.probed), which announce payloads
// again to a link that speaks after a silence.
func (e *Engine) askSilentLinks(ns string) {
	if t := e.trees[ns]; t != nil {
		t.node.Probe()
		e.drainTree(t, nil)
	}
}

// broadcastLive sends a local live delta of ns over its tree and reports
// whether it did: false when the tree has no link yet (the caller sends it
// to each reader).
func (e *Engine) broadcastLive(t *tree, ns string, d *crdt.Map, from uint64) bool {
	if len(t.node.Active()) == 0 {
		e.treeStats.Direct++
		return false
	}
	nd := wire.NamespaceDelta{Namespace: ns, Delta: d.Encode(), From: from, Author: string(e.cfg.Self)}
	nd.Sign(wire.KindDeltas, e.cfg.Signer)
	payload := nd.RelayBytes()
	id := wire.RelayID(payload)
	if e.cfg.Payloads != nil {
		payload = e.cfg.Payloads.Intern(id, payload)
	}
	if t.node.Broadcast(id, payload) {
		e.treeStats.Broadcasts++
	}
	e.drainTree(t, nil)
	return true
}

// tickTrees advances every tree's time.
func (e *Engine) tickTrees() {
	for _, t := range e.treeList {
		t.node.Tick(e.now)
		e.drainTree(t, nil)
		e.spread(t)
		e.catchUp(t)
	}
}

// TreesDue is the earliest time a tree owes announcements or wants
// (epidemic.Node.Due), zero when none does: a driver calls FlushTrees
// then, so a lost push is repaired without waiting for the next Tick.
func (e *Engine) TreesDue() time.Time {
	var due time.Time
	for _, t := range e.treeList {
		if d := t.node.Due(); !d.IsZero() && (due.IsZero() || d.Before(due)) {
			due = d
		}
	}
	return due
}

// FlushTrees sends what the trees owe at now (epidemic.Node.Flush): the
// announcements whose batch is over and the wants for payloads announced
// and not received in time; and, for a payload given up there (its last
// want unanswered), the digest sync with an announcer that repairs it
// (gap.go), rather than at the next Tick. Everything else waits for Tick.
func (e *Engine) FlushTrees(now time.Time) {
	if now.Before(e.now) {
		return
	}
	e.now = now
	gaveUp := false
	for _, t := range e.treeList { // Flush and drainTree make no tree
		if d := t.node.Due(); d.IsZero() || now.Before(d) {
			continue
		}
		t.node.Flush(now)
		gaveUp = e.drainTree(t, nil) || gaveUp
	}
	if !gaveUp {
		return
	}
	for _, id := range e.sortedPeers() {
		if p := e.peers[id]; len(p.needSync) > 0 {
			e.requestSync(p)
		}
	}
}

// errAltered marks the checks of a relayed delta no honest relay lets
// through: the relay altered the bytes.
var errAltered = errors.New("replica: relayed delta altered")

// stepTree takes a tree message from peer p.
func (e *Engine) stepTree(p *peerState, m *wire.Message) {
	if !e.treesOn() {
		return
	}
	ns := m.Overlay
	t := e.trees[ns]
	if !e.pol.ShouldHold(ns) || !e.pol.PeerMayRead(p.Peer, ns) {
		// No place in ns's overlay here: not a holder, or a peer that may
		// not read ns (its read revoked, or not yet granted here).
		e.treeStats.Refused++
		if t != nil {
			t.leave(p.ID)
			e.drainTree(t, nil)
		}
		if e.pol.ShouldHold(ns) && e.st.Context(ns).IsEmpty() {
			e.askEmpty(p, ns)
		}
		return
	}
	if t == nil {
		// Made at a reader's first word, held here yet or not (a node
		// refusing until it held the namespace converged later in the
		// sweep: median 5.25 → 6.5 s). A peer can make trees only of
		// namespaces it may read by this node's acl.
		t = e.treeFor(ns, e.readersOf(ns))
	}
	if t.distrusted[p.ID] {
		e.treeStats.Refused++
		return
	}
	em, err := fromWire(m)
	if err != nil {
		e.treeStats.Refused++
		return
	}
	var rl *relayed
	if em.Kind == epidemic.KindGossip && !t.node.Received(em.ID) {
		rl, err = e.checkRelayed(p, em.ID, m.Deltas[0])
		if err != nil {
			if rl != nil && e.holdForWriter(writerHeld{from: p.ID, ns: ns, d: rl.d, rep: rl.origin.Replica, author: rl.origin.ID, lacks: lackedBy(err),
				live: true, first: rl.nd.From, size: len(rl.nd.Delta), relay: &heldRelay{em: em, rl: rl}}) {
				e.rejectHeld(p, ns, err)
				return
			}
			e.reject(p, ns, err)
			if errors.Is(err, ErrNotAllowed) {
				// This node's view (the author's grant not here yet):
				// the author's sync brings what it lacks.
				e.askAuthor(PeerID(m.Deltas[0].Author), ns)
			}
			if errors.Is(err, errAltered) {
				// Route around the relay: out of this tree for good.
				t.distrusted[p.ID] = true
				t.leave(p.ID)
				e.treeStats.Distrusted++
				e.drainTree(t, nil)
			}
			return
		}
		e.keepRelayed(&em)
	}
	if em.Kind == epidemic.KindWant && t.probed != nil {
		// A want of what a heal's probe announced again is its evidence,
		// and the heal's sync brings the payload's writes (gap.go).
		if em.IDs = e.wantFrom(p, t, em.IDs); len(em.IDs) == 0 {
			e.drainTree(t, rl)
			return
		}
	}
	if err := t.node.Step(epidemic.PeerID(p.ID), em); err != nil {
		e.treeStats.Refused++
	}
	e.drainTree(t, rl)
}

// keepRelayed readies a checked relayed delta's message for its tree,
// which keeps the payload: one copy for the engines sharing the table,
// and the origin as the author's id held here, not a copy per message
// (checkRelayed found it).
func (e *Engine) keepRelayed(em *epidemic.Message) {
	if e.cfg.Payloads != nil {
		em.Payload = e.cfg.Payloads.Intern(em.ID, em.Payload)
	}
	if em.Origin == epidemic.PeerID(e.cfg.Self) {
		em.Origin = epidemic.PeerID(e.cfg.Self)
	} else if op, ok := e.peers[PeerID(em.Origin)]; ok {
		em.Origin = epidemic.PeerID(op.ID)
	}
}

// checkRelayed runs the checks on arrival (doc.go) on a relayed delta,
// naming its author where they name the sender: the author's signature,
// only the author's writes, the author may write. The relay vouches for
// nothing; it may read ns (stepTree checked).
func (e *Engine) checkRelayed(p *peerState, id epidemic.MsgID, nd wire.NamespaceDelta) (*relayed, error) {
	author := PeerID(nd.Author)
	var key ed25519.PublicKey
	var rep crdt.ReplicaID
	var origin *peerState
	switch op, ok := e.peers[author]; {
	case author == e.cfg.Self:
		key, rep = e.cfg.Signer.Key, e.cfg.Replica
	case ok:
		key, rep, origin = op.Key, op.Replica, op
	default:
		return nil, fmt.Errorf("%w: the author %s of a relayed delta", ErrUnknownPeer, author)
	}
	d, err := e.checkDelta(nd, wire.KindDeltas, key, rep, author, true)
	if err != nil && d != nil && origin != nil {
		// Refused for the author's right (a *WriterError), which may
		// come: the delta with it, to be held (writerhold.go).
		return &relayed{id: id, nd: nd, d: d, origin: origin}, err
	}
	if err != nil {
		if !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrNotAllowed) {
			// About the bytes, not this node's view: the author's
			// signature, seals and decoding hold wherever they are
			// checked, so an honest relay never forwards such a delta.
			err = fmt.Errorf("%w by %s (author %s): %w", errAltered, p.ID, author, err)
		}
		return nil, err
	}
	return &relayed{id: id, nd: nd, d: d, origin: origin}, nil
}

// drainTree takes t's outputs: deliveries (rl is the relayed delta just
// stepped, already checked) go to apply, messages out as KindTree.
func (e *Engine) drainTree(t *tree, rl *relayed) (gaveUp bool) {
	for t.node.HasReady() {
		r := t.node.Ready()
		for _, dv := range r.Deliver {
			e.deliverRelayed(t, dv, rl)
		}
		for _, env := range r.Messages {
			e.sendTree(t, env)
		}
		for _, m := range r.GaveUp {
			e.gaveUp(t, m)
			gaveUp = true
		}
	}
	return gaveUp
}

// deliverRelayed applies a relayed delta delivered for the first time, or
// holds it until what it depends on is here (Order).
func (e *Engine) deliverRelayed(t *tree, dv epidemic.Delivery, rl *relayed) {
	from := e.peers[PeerID(dv.From)]
	if rl == nil || rl.id != dv.ID || from == nil {
		return // only what Step checked is delivered (a tree delivers in Step only)
	}
	if rl.origin == nil {
		return // this node's own delta, come back after its id was forgotten
	}
	e.applyRelayed(from, t.ns, rl)
}

// applyRelayed hands out a relayed delta of ns delivered from a relay
// to apply, or holds it until what it depends on is here.
func (e *Engine) applyRelayed(from *peerState, ns string, rl *relayed) {
	e.treeStats.Relayed++
	from.stats.DeltasRecv++
	o := rl.origin
	if !rl.d.DependsOn(noDots, o.Replica, rl.nd.From) && !rl.d.DependsOn(e.haveFor(ns), o.Replica, rl.nd.From) {
		// Held on the author's account; a sync on overflow goes to the
		// author, which may write ns (a relay may only read it).
		e.holdFrom(o.ID, o.Replica, ns, rl.d, rl.nd.From)
		// This node missed something the author wrote or had seen.
		e.askAuthor(o.ID, ns)
		return
	}
	e.toApply(Apply{From: from.ID, Namespace: ns, Delta: rl.d, Live: true, author: o.ID})
}

// askAuthor asks the author of a relayed delta this node could not apply
// (held for what it depends on, refused by the driver or by this node's
// view) for a digest sync of ns. A direct send's ack timeout does that
// for its sender; no ack tells the author of a tree's delta, so without
// this the delta waited for anti-entropy to pick its author or another
// writer (one request owed per namespace, retried as digest sync's).
func (e *Engine) askAuthor(author PeerID, ns string) {
	o := e.peers[author]
	if o == nil {
		return
	}
	if _, owed := o.asked[ns]; !owed {
		if o.needSync[ns] == causeNone {
			e.treeStats.Repairs++
		}
		needSyncOf(o, ns, CauseTreeRepair)
	}
	// As a direct delta refused for want of the author's grant does
	// (askAuthority): this node may not know yet that the author may read
	// ns, and the request goes anyway.
	e.askAuthority(o, ns)
}

// sendTree sends one of t's messages, as a KindTree message. A payload
// waits in treeOut until the driver has applied what the same input
// brought (releaseTree): a relayed delta is forwarded as it arrives,
// before it is applied, and it may carry the revocation of a next hop's
// read.
func (e *Engine) sendTree(t *tree, env epidemic.Envelope) {
	to := PeerID(env.To)
	if e.peers[to] == nil {
		t.leave(to)
		return
	}
	if env.Msg.Kind == epidemic.KindGossip {
		e.treeOut = append(e.treeOut, treeSend{ns: t.ns, env: env})
		return
	}
	if env.Msg.Kind == epidemic.KindIHave && len(env.Msg.IHave) > 0 {
		e.noteSent(t, e.peers[to], env.Msg.IHave[0].ID)
	}
	e.send(to, toWire(t.ns, env.Msg))
}

// treeSend is a tree's payload waiting for releaseTree.
type treeSend struct {
	ns  string
	env epidemic.Envelope
}

// releaseTree sends the payloads waiting in treeOut, once no delta handed
// out to apply is waiting for its outcome: each only to a peer that may
// read its namespace now, with what was applied counted. A peer that may
// not is reported failed to the tree and the payload withheld (DESIGN.md
// invariant 3).
func (e *Engine) releaseTree() {
	for len(e.treeOut) > 0 && len(e.ready.Apply) == 0 && e.wait.out == nil {
		out := e.treeOut
		e.treeOut = nil
		for _, ts := range out {
			to := PeerID(ts.env.To)
			p := e.peers[to]
			if p == nil || !e.pol.PeerMayRead(p.Peer, ts.ns) {
				e.treeStats.Withheld++
				if t := e.trees[ts.ns]; t != nil {
					t.leave(to)
					e.drainTree(t, nil)
				}
				continue
			}
			m := toWire(ts.ns, ts.env.Msg)
			p.stats.DeltasSent++
			p.stats.BytesSent += uint64(len(m.Deltas[0].Delta))
			if t := e.trees[ts.ns]; t != nil {
				e.noteSent(t, p, ts.env.Msg.ID)
			}
			e.send(to, m)
		}
	}
}

// TreeStats returns the trees' counters.
func (e *Engine) TreeStats() TreeStats {
	s := e.treeStats
	s.Trees = len(e.trees)
	for _, t := range e.trees {
		s.Node.Add(t.node.Stats())
	}
	return s
}

// TreeActive returns the peers of ns's tree's active view, sorted (nil if
// ns has no tree here).
func (e *Engine) TreeActive(ns string) []PeerID {
	t := e.trees[ns]
	if t == nil {
		return nil
	}
	var out []PeerID
	for _, p := range t.node.Active() {
		out = append(out, PeerID(p))
	}
	return out
}

// toWire converts a tree's message for ns. A payload is a relayed delta's
// RelayBytes, made or checked here, so it parses.
func toWire(ns string, m epidemic.Message) *wire.Message {
	w := &wire.Message{Kind: wire.KindTree, Overlay: ns, Tree: &wire.Tree{Kind: uint8(m.Kind),
		Round: m.Round, Peer: string(m.Peer), TTL: m.TTL, Priority: m.Priority, Accept: m.Accept}}
	if m.Kind == epidemic.KindGossip {
		nd, err := wire.ParseRelayBytes(m.Payload)
		if err != nil {
			panic(fmt.Sprintf("replica: a tree payload that does not parse: %v", err))
		}
		w.Deltas = []wire.NamespaceDelta{nd}
	} else {
		w.Tree.Origin = string(m.Origin)
	}
	for _, a := range m.IHave {
		w.Tree.IHave = append(w.Tree.IHave, wire.Announcement{ID: a.ID[:], Round: a.Round})
	}
	for _, id := range m.IDs {
		w.Tree.IDs = append(w.Tree.IDs, id[:])
	}
	for _, p := range m.Peers {
		w.Tree.Peers = append(w.Tree.Peers, string(p))
	}
	return w
}

// fromWire converts a KindTree message (its shape checked by wire.Decode).
// A payload's id and origin are derived from the relayed delta itself.
func fromWire(w *wire.Message) (epidemic.Message, error) {
	t := w.Tree
	m := epidemic.Message{Kind: epidemic.Kind(t.Kind), Origin: epidemic.PeerID(t.Origin), Round: t.Round,
		Peer: epidemic.PeerID(t.Peer), TTL: t.TTL, Priority: t.Priority, Accept: t.Accept}
	if m.Kind == epidemic.KindGossip {
		if len(w.Deltas) != 1 {
			return m, errors.New("replica: a tree payload message without its delta")
		}
		m.Payload = w.Deltas[0].RelayBytes()
		m.ID = wire.RelayID(m.Payload)
		m.Origin = epidemic.PeerID(w.Deltas[0].Author)
	} else if len(w.Deltas) != 0 {
		return m, errors.New("replica: a delta in a tree message of another kind")
	}
	for _, a := range t.IHave {
		if len(a.ID) != wire.TreeIDSize {
			return m, errors.New("replica: a tree id of the wrong size")
		}
		m.IHave = append(m.IHave, epidemic.Announcement{ID: epidemic.MsgID(a.ID), Round: a.Round})
	}
	for _, id := range t.IDs {
		if len(id) != wire.TreeIDSize {
			return m, errors.New("replica: a tree id of the wrong size")
		}
		m.IDs = append(m.IDs, epidemic.MsgID(id))
	}
	for _, p := range t.Peers {
		m.Peers = append(m.Peers, epidemic.PeerID(p))
	}
	return m, nil
}
