package cluster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Who hosts which agent. Every node claims its local principals with a
// binding signed by its key (acl.Binding). Every bindings frame carries
// its sender's digest: a hash of its set that each binding admitted
// updates in O(1), then the number of bindings in it (bindings_digest.go),
// so a peer sees whether it lacks bindings, not only that the two sets
// differ.
//
// A node sends each peer that joins a probe: the bindings naming its own
// key (its claims, and hand-overs to it) with its digest, asking for an
// answer; again at the first tick bindingsProbeRetry after, and so on
// until it hears from the peer, which brings the peer's claims: the
// answer (wire.Message.Answer: the peer's claims, or its digest alone if
// it is this node's), or the peer's own probe (answerProbe: two first
// probes that cross answer each other, any other probe is answered). A new claim or hand-over
// goes, alone, to every peer at once, and every BindingsInterval the
// digest alone (a summary) goes to a few peers that may not hold the same
// (sendBindingsSummary). A node whose digest
// differs from a peer's asks that peer only when the peer holds at least as
// many bindings as it does (a peer with fewer lacks some: it asks), and not
// again while both digests stay those an exchange of the two already ended
// on (a binding one of them refuses for good). To ask, it sends its index
// (a short id per binding); the peer answers with the bindings that index
// lacks, and with its own index if it lacks some itself, which the first
// node answers in turn: four frames at most, and only missing bindings
// travel. A node sends its index on its own account to one peer per
// bindingsAskGap, the peer with the most bindings first; an ask whose
// answer is lost is asked again after bindingsAskGap (three tries). A frame
// whose digest matches the receiver's is not decoded further.
//
// So a cluster starting together moves each claim once per pair (the
// probes: two frames a pair), a settled cluster nothing once each node
// has heard every peer's digest, a partition's heal nothing, and a node
// lacking bindings asks one peer for just those. History, at 100 nodes starting together (`mnemo sim --nodes
// 100 --ops 1000 --seed 1 --loss 0.1 --partitions 3 --tree-threshold -1`):
// every join and claim once sent every binding to every peer (83 MB of
// the 177 MB the run moved); then digests and indexes, every join sending
// an index and every differing digest answered by one (48.4 MB of 139.7
// MB: 23 MB of answers at the start carried 216k bindings where 9,900
// were needed, and a node that heard many indexes naming bindings it
// lacked kept asking those peers, one per half second, for the whole run,
// long after it lacked nothing: 7,700 indexes of 1.8 kB); now 4.7 MB of
// 99.3 MB (probes 3.3 MB, of them 0.6 MB to peers cut off at the start;
// summaries and their answers 1 MB; 150 indexes). A node admits
// bindings into its acl.Directory — first claim stands, only the current
// host's hand-over moves an agent — and stores them, so a node restarted
// alone still knows who signed the grants it holds. Which agents a peer
// hosts (what it may read and write) is read from the directory, never
// from gossip metadata.

// BindingsInterval is how often a node sends the digest of its bindings to
// every peer, so a lost frame costs at most this delay.
const BindingsInterval = 30 * time.Second

// The bindings frames a node sends to many peers, each encoded once per
// change of its set: the digest always, its own claims in a probe, and
// the index in an ask.
type bindingsForm int

const (
	bindingsSummary bindingsForm = iota // the digest alone
	bindingsProbe                       // the digest and this node's claims; answer
	bindingsClaims                      // the digest and this node's claims, answering a probe
	bindingsSame                        // the digest alone, answering a probe that showed the same
	bindingsAsk                         // the digest and the index; send what I lack, and your index
	bindingsForms
)

// probed is a peer being probed (bindingsExchange.probing): when it was
// last, and how many probes it was sent.
type probed struct {
	at    time.Time
	tries int
}

// bindingsProbeRetry is the least time between two probes to a peer not
// heard from: time for the probe's answer to come back. Probing again at
// the next tick, however soon after the join it came, sent a fifth of the
// probes twice at a start of 300 simulated nodes (their answers were on
// the way: the simulator's ticks come every 250 ms, its round trips take
// up to ~100 ms); a real node's ticks come every 500 ms.
const bindingsProbeRetry = 300 * time.Millisecond

// bindingsAskGap is the least time between two indexes a node sends to
// ask a peer for the bindings it lacks.
const bindingsAskGap = 500 * time.Millisecond

// MaxBindingsPerFrame bounds the bindings one frame may carry; a frame with
// more is refused whole.
const MaxBindingsPerFrame = 4096

// maxLackingIDs bounds the ids kept of the bindings a peer's index named
// that this node lacked, waiting for its turn to ask (bindingsExchange.lacking).
const maxLackingIDs = 64

// bindingsExchange is the loop's state of the bindings exchange with its
// peers.
type bindingsExchange struct {
	lastSummary time.Time // when the digest was last sent (sendBindingsSummary)
	// self is this node's id, which with a peer's names their turn of the
	// digest rounds (summaryTurn); served, the last round whose turns
	// were sent.
	self         replica.PeerID
	served       uint64
	lastIndexAsk time.Time // when this node last sent its index asking for what it lacks
	// asked: peers sent this node's index asking for what it lacks, whose
	// answer has not come yet (asked again after bindingsAskGap).
	asked map[replica.PeerID]asked
	heard map[replica.PeerID]bool   // peers whose claims came: their probe, or their answer to this node's
	sums  map[replica.PeerID][]byte // each peer's digest, as its last frame told it
	told  map[replica.PeerID][]byte // this node's digest, as its last frame to each peer told it
	// lacking: per peer, ids its index named that this node lacked, when
	// the index could not be sent back at once (the peer is asked on a
	// later tick, while this node still lacks one of them).
	lacking map[replica.PeerID][][]byte
	// want: peers found worth asking (worthAsking) when their last frame
	// came, not asked since; askNext checks each again before it asks.
	want map[replica.PeerID]bool
	// probing: the peers given a sender since they were last heard, a
	// superset of those askBindings probes (it drops the others as it
	// meets them), each with when it was last probed: walking every
	// sender each tick for the few not heard yet was N² a tick at a start
	// of N nodes.
	probing map[replica.PeerID]probed
	// settled: per peer, the digests (this node's, then the peer's) an
	// exchange with it ended on, unequal: a binding one of them refuses.
	// The peer is not asked again while both stay so.
	settled map[replica.PeerID]string
	// pulled: per peer, the replicas whose bindings were pulled from it
	// (bindings_pull.go), and when
	pulled map[replica.PeerID]map[crdt.ReplicaID]time.Time
	// pulledBy: the peers whose pull this node answered with its own
	// bindings, which on demand get its new ones (sendNewBindings)
	pulledBy map[replica.PeerID]bool
	saver    *bindingsSaver // stores the directory (storeBindings)
}

func newBindingsExchange(now time.Time, self replica.PeerID) bindingsExchange {
	return bindingsExchange{lastSummary: now, self: self, asked: map[replica.PeerID]asked{}, heard: map[replica.PeerID]bool{},
		sums: map[replica.PeerID][]byte{}, told: map[replica.PeerID][]byte{}, lacking: map[replica.PeerID][][]byte{}, settled: map[replica.PeerID]string{},
		want: map[replica.PeerID]bool{}, probing: map[replica.PeerID]probed{}, pulled: map[replica.PeerID]map[crdt.ReplicaID]time.Time{},
		pulledBy: map[replica.PeerID]bool{}, saver: &bindingsSaver{}}
}

// forget drops what the exchange knows of the peers gone picks: they
// left, or restarted.
func (x *bindingsExchange) forget(gone func(replica.PeerID) bool) {
	forgetIn(x.asked, gone)
	forgetIn(x.heard, gone)
	forgetIn(x.sums, gone)
	forgetIn(x.told, gone)
	forgetIn(x.lacking, gone)
	forgetIn(x.settled, gone)
	forgetIn(x.want, gone)
	forgetIn(x.probing, gone)
	forgetIn(x.pulled, gone)
	forgetIn(x.pulledBy, gone)
}

func forgetIn[V any](m map[replica.PeerID]V, gone func(replica.PeerID) bool) {
	for id := range m {
		if gone(id) {
			delete(m, id)
		}
	}
}

// reindexBindings brings up to date byReplica, everByReplica, hostOf, the
// held encodings, their ids and their digest, notes the replicas whose
// principals moved (moved, for refreshPrincipals), and drops the encoded
// bindings frames: call it, with knownMu held, whenever dir changes. The
// directory only appends, so only the bindings it added since are
// indexed, each in O(1) but for the replica's own list: a node starting
// among N peers admits their claims one frame at a time, and encoding,
// sorting and hashing all N at each was N³ at a start of N nodes.
func (l *loop) reindexBindings() {
	l.bindingsFrames = [bindingsForms][]byte{}
	start := len(l.bindingEncs)
	if start == 0 {
		l.byReplica = map[crdt.ReplicaID][]namespace.Address{}
		l.everByReplica = map[crdt.ReplicaID][]namespace.Address{}
		l.hostOf = map[namespace.Address]ed25519.PublicKey{}
		l.bindingsHash = setHash{}
		l.bindingsSum = l.bindingsHash.digest()
	}
	added := l.dir.BindingsSince(start)
	for i, b := range added {
		e := b.Encode()
		k := keyOfBinding(e)
		l.heldBindings[k] = true
		l.bindingsHash.add(e)
		l.bindingIDs = append(l.bindingIDs, k[:])
		l.bindingEncs = append(l.bindingEncs, e)
		l.bindingReps = append(l.bindingReps, acl.ReplicaIDOf(b.Key))
		if b.Key.Equal(l.cfg.Identity.Public) && len(l.ownBindings) < MaxBindingsPerFrame {
			l.ownBindings = append(l.ownBindings, e)
		}
		if r := l.bindingReps[start+i]; !slices.Contains(l.everByReplica[r], b.Principal) {
			// Clipped: the slice a reader holds (hostedBy) is never written.
			l.everByReplica[r] = append(slices.Clip(l.everByReplica[r]), b.Principal)
		}
	}
	// Only the principals of the bindings added can have moved: each leaves
	// the list of the replica it was listed under (hostOf) for that of the
	// replica whose key the directory binds it to now. The lists are
	// replaced, never written, as principalsOfReplica hands them out.
	for _, b := range added {
		p := b.Principal
		if old, ok := l.hostOf[p]; ok {
			r := acl.ReplicaIDOf(old)
			if ps := l.byReplica[r]; len(ps) == 1 && ps[0] == p {
				delete(l.byReplica, r)
			} else if i := slices.Index(ps, p); i >= 0 {
				l.byReplica[r] = slices.Delete(slices.Clone(ps), i, i+1)
			}
			delete(l.hostOf, p)
			l.noteMoved(r, old)
		}
		if cur, ok := l.dir.KeyOf(p); ok {
			r := acl.ReplicaIDOf(cur)
			ps := l.byReplica[r]
			i, _ := slices.BinarySearchFunc(ps, p, func(a, b namespace.Address) int { return strings.Compare(a.String(), b.String()) })
			l.byReplica[r] = slices.Insert(slices.Clone(ps), i, p)
			l.hostOf[p] = cur
			l.noteMoved(r, cur)
		}
	}
	if len(added) > 0 {
		l.bindingsSum = l.bindingsHash.digest()
	}
}

// noteMoved records that the principals of replica r, whose key is key,
// changed: refreshPrincipals hands its peer's to the engine. With knownMu
// held.
func (l *loop) noteMoved(r crdt.ReplicaID, key ed25519.PublicKey) {
	if l.moved == nil {
		l.moved = map[crdt.ReplicaID]ed25519.PublicKey{}
	}
	l.moved[r] = key
}

// claimAgents signs a binding for every local principal not yet bound,
// and returns those it added. A local principal another node already
// hosts is not claimed: the conflict is logged and counted, and that
// principal's records signed here will not count elsewhere.
func (l *loop) claimAgents() []acl.Binding {
	var added []acl.Binding
	l.admitOwn(func() bool { added = l.claim(); return len(added) > 0 }) // durable before it is announced
	return added
}

// claim admits a claim of every local principal not yet bound
// (claimAgents), with knownMu held.
func (l *loop) claim() []acl.Binding {
	var added []acl.Binding
	for _, p := range l.cfg.Agents() {
		if k, ok := l.dir.KeyOf(p); ok {
			if !k.Equal(l.cfg.Identity.Public) {
				l.conflicts.Add(1)
				l.log.Warn("a local principal is hosted by another node; not claimed", "principal", p, "host", acl.NodeIDOf(k))
			}
			continue
		}
		b, err := acl.NewBinding(l.cfg.Identity, p, crdt.Timestamp(l.cfg.Clock.Now().UnixNano()))
		if err != nil {
			l.log.Warn("could not claim principal", "principal", p, "err", err)
			continue
		}
		if changed, err := l.dir.Admit(b); err == nil && changed {
			added = append(added, b)
		}
	}
	if len(added) > 0 {
		l.reindexBindings()
	}
	return added
}

// hostedElsewhere reports whether p is bound to another node's key. Any
// goroutine.
func (l *loop) hostedElsewhere(p namespace.Address) (acl.NodeID, bool) {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	k, ok := l.dir.KeyOf(p)
	if !ok || k.Equal(l.cfg.Identity.Public) {
		return "", false
	}
	return acl.NodeIDOf(k), true
}

// bindingsFrame is the bindings frame of form, and the digest it carries.
// Each form is encoded once per change of the directory: the same frame
// goes to every peer on join, again until heard, in answers and every
// interval, and encoding it (compressed) each time cost as much as
// admitting its bindings.
func (l *loop) bindingsFrame(form bindingsForm) (frame, sum []byte) {
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	if f := l.bindingsFrames[form]; f != nil {
		return f, l.bindingsSum // both replaced together (reindexBindings)
	}
	m := &wire.Message{Kind: wire.KindBindings, Reply: form == bindingsProbe || form == bindingsAsk,
		Answer: form == bindingsClaims || form == bindingsSame, BindingsSum: l.bindingsSum}
	switch form {
	case bindingsProbe, bindingsClaims:
		m.Bindings = l.ownBindings
	case bindingsAsk:
		m.BindingIDs = l.bindingIndex()
	}
	frame, err := l.codec.Encode(m)
	if err != nil {
		l.log.Error("encode bindings", "err", err)
		return nil, nil
	}
	l.bindingsFrames[form] = frame
	return frame, l.bindingsSum
}

// sendNewBindings sends bindings just made here (a claim, a hand-over),
// alone, to every peer: they should not wait for the next summary. On
// demand, only to the peers that pulled this node's bindings
// (bindings_demand.go).
func (l *loop) sendNewBindings(bs []acl.Binding) {
	if len(bs) == 0 {
		return
	}
	m := &wire.Message{Kind: wire.KindBindings}
	for _, b := range bs {
		m.Bindings = append(m.Bindings, b.Encode())
	}
	l.knownMu.RLock()
	m.BindingsSum = l.bindingsSum
	l.knownMu.RUnlock()
	demand := l.onDemand()
	l.sendFrameTo(l.senderIDs(func(id replica.PeerID) bool { return !demand || l.bx.pulledBy[id] }), m)
}

// bindingIndex is the short id of every binding held, in the directory's
// order (made by reindexBindings; callers must not change it). Call with
// knownMu held.
func (l *loop) bindingIndex() [][]byte { return l.bindingIDs }

// bindingKey is the short id of an encoded binding in an index: the first
// wire.BindingIDSize bytes of its SHA-256. Held bindings are known by it
// (heldBindings), not by their encoding: at 1,000 nodes a node holds 1,000
// bindings of ~200 bytes, and keying a set by copies of them was a fifth
// of the simulator's live heap with bindingEncs.
type bindingKey [wire.BindingIDSize]byte

func keyOfBinding(enc []byte) bindingKey {
	sum := sha256.Sum256(enc)
	return bindingKey(sum[:wire.BindingIDSize])
}

// holds reports whether the binding of short id id is held. With knownMu
// held.
func (l *loop) holds(id []byte) bool {
	return len(id) == wire.BindingIDSize && l.heldBindings[bindingKey(id)]
}

// sendFrameTo encodes m and sends it to ids.
func (l *loop) sendFrameTo(ids []replica.PeerID, m *wire.Message) {
	if len(ids) == 0 {
		return
	}
	frame, err := l.codec.Encode(m)
	if err != nil {
		l.log.Error("encode bindings", "err", err)
		l.dropped.Add(uint64(len(ids)))
		return
	}
	l.pushBindings(ids, frame, m.BindingsSum)
}

// sendBindingsTo sends the bindings frame of form to ids, in that order.
func (l *loop) sendBindingsTo(ids []replica.PeerID, form bindingsForm) {
	if len(ids) == 0 {
		return
	}
	frame, sum := l.bindingsFrame(form)
	if frame == nil {
		l.dropped.Add(uint64(len(ids)))
		return
	}
	l.pushBindings(ids, frame, sum)
}

// pushBindings hands a bindings frame carrying the digest sum to each of
// ids, in that order, and for each peer whose sender took the frame notes
// sum as the digest this node last told it (told, for
// sendBindingsSummary). A frame without a digest (a pull, its answer:
// bindings_pull.go) tells none, and leaves told as it was.
func (l *loop) pushBindings(ids []replica.PeerID, frame, sum []byte) {
	for _, id := range ids {
		if l.push(id, wire.KindBindings, frame) && len(sum) > 0 {
			l.bx.told[id] = sum
		}
	}
}

// receiveBindings admits a peer's bindings and answers as the frame asks:
// a probe gets this node's digest back; an index gets the bindings it
// lacks and, if it asks and names bindings this node lacks, this node's
// index in return (to one peer per bindingsAskGap; the others are asked
// later, while this node still lacks what they named). A frame that asks
// nothing is an answer: the peer was heard, and an exchange this node
// asked for ended (settled, when the two digests still differ). Then, if
// the peer holds bindings this node lacks, it is asked (askNext). A frame
// whose digest is this node's own holds nothing new, and bindings already
// held are not decoded again.
func (l *loop) receiveBindings(from replica.PeerID, m *wire.Message) {
	if len(m.Bindings) > MaxBindingsPerFrame || len(m.BindingIDs) > MaxBindingsPerFrame || len(m.BindingsOf) > maxPullsPerPeer {
		l.rejected.Add(1)
		l.log.Warn("bindings frame too large", "peer", from, "bindings", len(m.Bindings), "ids", len(m.BindingIDs), "pulled", len(m.BindingsOf))
		return
	}
	_, asking := l.bx.asked[from]
	if m.Answer {
		l.bx.heard[from] = true
	}
	if len(m.BindingsSum) > 0 {
		l.bx.sums[from] = slices.Clone(m.BindingsSum)
	}
	l.knownMu.RLock()
	same := bytes.Equal(m.BindingsSum, l.bindingsSum)
	l.knownMu.RUnlock()
	// The answer to this node's index: a frame asking nothing that brings
	// bindings or an index, or shows the sets equal. A bare digest that
	// differs is a summary crossing the ask (an answer from a peer holding
	// at least as many bindings brings some), and the ask stays owed. A
	// frame without a digest (a pull's answer) answers no index.
	answer := asking && !m.Reply && len(m.BindingsSum) > 0 && (same || len(m.Bindings) > 0 || len(m.BindingIDs) > 0)
	if !same {
		l.admitBindings(from, m.Bindings)
	}
	switch {
	case len(m.BindingIDs) > 0 && !same:
		l.answerIndex(from, m)
	case m.Reply:
		l.answerProbe(from, same)
	}
	if len(m.BindingsOf) > 0 {
		l.answerPull(from, m.BindingsOf)
	}
	if answer {
		delete(l.bx.asked, from)
		delete(l.bx.lacking, from) // what its index named came, or was refused
		l.knownMu.RLock()
		if !bytes.Equal(m.BindingsSum, l.bindingsSum) {
			l.bx.settled[from] = string(l.bindingsSum) + string(m.BindingsSum)
		}
		l.knownMu.RUnlock()
	}
	if l.worthAsking(from) {
		l.bx.want[from] = true
		l.askNext(l.cfg.Clock.Now())
	}
}

// answerProbe answers a peer's probe (its claims, asking for an answer),
// and the peer is heard: its claims came. When this node's own first
// probe to the peer is unanswered, the two crossed, and each stands for
// the other's answer: nothing is sent. (If this node's probe was lost,
// the peer, not having heard from it, probes again and is answered then;
// a probe that comes after this node probed again, its earlier ones lost
// or refused by a peer that did not know it yet, is answered at once.)
// Otherwise the answer carries this node's claims, or its digest alone
// when the two digests are the same. So a pair that sees each other join
// sends two frames, its two probes, where answering each with a bare
// digest was four, and at a start of 1,000 nodes 44 MB of answers.
func (l *loop) answerProbe(from replica.PeerID, same bool) {
	p, probing := l.bx.probing[from]
	crossed := probing && p.tries == 1 && !l.bx.heard[from]
	l.bx.heard[from] = true
	delete(l.bx.probing, from)
	switch {
	case crossed:
	case same:
		l.sendBindingsTo([]replica.PeerID{from}, bindingsSame)
	default:
		l.sendBindingsTo([]replica.PeerID{from}, bindingsClaims)
	}
}

// admitBindings admits the encoded bindings a peer sent.
func (l *loop) admitBindings(from replica.PeerID, encs [][]byte) {
	changed := false
	l.knownMu.Lock()
	var fresh []acl.Binding
	for _, e := range encs {
		if l.heldBindings[keyOfBinding(e)] {
			continue
		}
		b, err := acl.DecodeBinding(e)
		if err != nil {
			l.rejected.Add(1)
			l.log.Warn("binding refused", "peer", from, "err", err)
			continue
		}
		fresh = append(fresh, b)
	}
	if len(fresh) > 0 && l.onDemand() {
		var dropped int
		fresh, dropped = l.firstClaimsOK(fresh)
		l.rejected.Add(uint64(dropped))
	}
	var bound map[crdt.ReplicaID]bool // the replicas of the keys the bindings admitted name
	for _, b := range fresh {
		ch, err := l.dir.Admit(b)
		changed = changed || ch
		if ch {
			if bound == nil {
				bound = map[crdt.ReplicaID]bool{}
			}
			bound[acl.ReplicaIDOf(b.Key)] = true
		}
		if err != nil {
			l.rejected.Add(1)
			if errors.Is(err, acl.ErrHostedElsewhere) {
				l.conflicts.Add(1)
			}
			l.log.Warn("binding refused", "peer", from, "err", err)
		}
	}
	if changed {
		l.reindexBindings()
		l.bx.saver.unsaved.Store(true) // stored on the next tick
	}
	l.knownMu.Unlock()
	if changed {
		l.svc.RefreshPolicy() // records signed for newly bound principals may count now
		l.refreshPrincipals()
		l.resyncRefused(bound)
	}
}

// refreshPrincipals gives the engine the principals each peer hosts now,
// after the bindings changed. The membership is as it was, so the peers
// are (setMembers, which the membership's own changes call, would
// recompute them too: once per binding admitted, at a start among N peers
// that was N times the whole membership a node). Only the peers of the
// replicas whose principals moved since (reindexBindings' moved) are
// looked at, found by their key: walking every peer at each binding
// admitted was N² a node at a start among N (8% of the simulator's CPU at
// 300 nodes).
func (l *loop) refreshPrincipals() {
	var changed []replica.PeerID
	l.knownMu.Lock()
	moved := l.moved
	l.moved = nil
	update := func(id replica.PeerID, pi peerInfo) {
		if ps := l.byReplica[pi.peer.Replica]; !slices.Equal(ps, pi.peer.Principals) {
			pi.peer.Principals = slices.Clone(ps)
			l.peers[id] = pi
			changed = append(changed, id)
		}
	}
	for r, key := range moved {
		if len(key) != ed25519.PublicKeySize || !l.known[[ed25519.PublicKeySize]byte(key)] {
			continue // not a live member's key: no peer has it (setMembers)
		}
		// A member's id is its key's (sync/gossip refuses others); a
		// membership that lists one under another id is walked whole.
		id := replica.PeerID(acl.NodeIDOf(key))
		if pi, ok := l.peers[id]; ok && pi.peer.Replica == r {
			update(id, pi)
			continue
		}
		for id, pi := range l.peers {
			if pi.peer.Replica == r {
				update(id, pi)
			}
		}
	}
	l.knownMu.Unlock()
	if len(changed) == 0 {
		return
	}
	// Only the peers whose principals changed are handed to the engine
	// (the others are as setMembers last gave them): all of them at each
	// binding admitted was N² a node at a start among N.
	slices.Sort(changed)
	changed = slices.Compact(changed)
	peers := make([]replica.Peer, 0, len(changed))
	for _, id := range changed {
		peers = append(peers, l.peers[id].peer)
	}
	l.eng.UpdatePeers(peers)
}

// answerIndex sends a peer the bindings its index lacks, and, when it asks
// and its index names bindings this node lacks, this node's index (not
// asking back, so an exchange is at most four frames even when a binding
// is refused for good; and at most one such index per bindingsAskGap, so
// a node that hears many indexes at once sends its own once; the peers
// not answered so are asked later, by askNext, while this node still
// lacks what their index named).
func (l *loop) answerIndex(from replica.PeerID, m *wire.Message) {
	theirs := make(map[string]bool, len(m.BindingIDs))
	for _, id := range m.BindingIDs {
		theirs[string(id)] = true
	}
	now := l.cfg.Clock.Now()
	reply := &wire.Message{Kind: wire.KindBindings}
	l.knownMu.RLock()
	reply.BindingsSum = l.bindingsSum
	for i, id := range l.bindingIDs {
		if !theirs[string(id)] {
			reply.Bindings = append(reply.Bindings, l.bindingEncs[i])
		}
	}
	var lacking [][]byte
	for _, id := range m.BindingIDs {
		if !l.holds(id) && len(lacking) < maxLackingIDs {
			lacking = append(lacking, id)
		}
	}
	switch {
	case len(lacking) > 0 && m.Reply && now.Sub(l.bx.lastIndexAsk) >= bindingsAskGap:
		l.bx.lastIndexAsk = now
		reply.BindingIDs = l.bindingIndex() // no Reply: the exchange ends with the peer's answer
	case len(lacking) > 0 && m.Reply:
		l.bx.lacking[from] = lacking // asked on a later tick (askNext)
		l.bx.want[from] = true
	}
	l.knownMu.RUnlock()
	if len(reply.Bindings) > 0 || len(reply.BindingIDs) > 0 || m.Reply {
		l.sendFrameTo([]replica.PeerID{from}, reply) // an ask always gets an answer
	}
}

// keyOf is the acl.KeyLookup of the memory service: remote principals from
// verified bindings.
func (l *loop) keyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return l.dir.KeyOf(p)
}

// principalsOfKey lists the principals bound to key.
func (l *loop) principalsOfKey(key ed25519.PublicKey) []namespace.Address {
	r := acl.ReplicaIDOf(key)
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return slices.Clone(l.byReplica[r])
}

// hostedBy reports whether the replica r's node hosts p or hosted it before
// a hand-over (an author check: p's writes come from p's node).
func (l *loop) hostedBy(p namespace.Address, r crdt.ReplicaID) bool {
	if r == l.replica {
		return slices.Contains(l.cfg.Agents(), p)
	}
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return slices.Contains(l.everByReplica[r], p)
}

// principalsOfReplica lists the principals bound to the key of replica r.
func (l *loop) principalsOfReplica(r crdt.ReplicaID) []namespace.Address {
	l.knownMu.RLock()
	defer l.knownMu.RUnlock()
	return l.byReplica[r]
}

// ErrNotHosted reports a hand-over of a principal this node does not host.
var ErrNotHosted = errors.New("cluster: principal not hosted by this node")

// handover signs the hand-over of p, which this node hosts, to the node
// whose key is to, and admits it; the driver then runs announceBindings
// on its loop. Any goroutine. Errors wrap ErrNotHosted or acl.ErrInvalid.
func (l *loop) handover(p namespace.Address, to ed25519.PublicKey) (acl.Binding, error) {
	var b acl.Binding
	var err error
	l.admitOwn(func() bool { // durable before it is announced
		cur, ok := l.dir.KeyOf(p)
		if !ok || !cur.Equal(l.cfg.Identity.Public) {
			err = fmt.Errorf("%w: %s", ErrNotHosted, p)
			return false
		}
		if b, err = acl.NewHandover(l.cfg.Identity, p, to, crdt.Timestamp(l.cfg.Clock.Now().UnixNano())); err == nil {
			_, err = l.dir.Admit(b)
		}
		if err != nil {
			return false
		}
		l.reindexBindings()
		return true
	})
	if err != nil {
		return acl.Binding{}, err
	}
	l.log.Info("handed over", "binding", b.String())
	l.svc.RefreshPolicy()
	return b, nil
}

// announceHandover sends the hand-over b to every peer and re-reads which
// agents each member hosts.
func (l *loop) announceHandover(b acl.Binding) {
	l.sendNewBindings([]acl.Binding{b})
	l.setMembers(l.drv.members())
}
