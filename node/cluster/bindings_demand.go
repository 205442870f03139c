package cluster

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
)

// Bindings on demand: built, swept, and off by default (Measured, below).
// Below Config.BindingsOnDemandAt members (by default at any size) every
// binding goes to every member (bindings.go): a probe to each peer that
// joins, the digest round, new claims to all. That costs each claim once
// per direction per pair, ~N² frames at a start of N nodes: at 1,000 nodes
// 0.86 of what the content itself must cost, and a connection to every
// member. Yet a node uses few of them: the bindings of the writers whose
// deltas it checks (5.5 replicas a node on average at 1,000 nodes, at
// most 45) and of the readers of the sparse namespaces it holds. So from
// that size on, a node sends no probes and no digests, asks no index, and
// learns a binding only where it is used:
//
//   - a writer's, when a delta it wrote is refused for want of it: pulled
//     from the delta's sender, which checked it (bindings_pull.go);
//   - a reader's, of a team or inbox namespace this node holds: a member
//     whose advertised agents (Advert.Agents, gossip metadata, unsigned)
//     name one that may read such a namespace, and whose binding here does
//     not name that member's key, is pulled its own bindings
//     (discoverReaders). Only the verified binding makes the member a
//     reader; the hint only says whom to ask.
//
//   - a signer's, of acl records of a namespace held here that do not
//     count for want of it: pulled with the refused writer's when a
//     delta's own records are the ones (noteDeltaSigners), else from the
//     signer's node (discoverReaders).
//
// A project namespace needs no reader binding at all: on demand it is
// readable by every member (policy.PeerMayRead), as it always was in
// effect, since a member may claim a fresh agent name and read every
// project under it.
//
// A new claim or hand-over goes to the peers that pulled this node's
// bindings (bindingsExchange.pulledBy); the others learn it as above.
//
// First claims. A node that floods hears each claim from its claimant at
// the start, so a member claiming another's agent later loses everywhere
// (first claim stands). Pulled on demand, a first claim could come late
// and from anyone, so a node admits the first binding of a principal on
// demand only when the membership shows the key it ends on (after the
// hand-overs the frame carries) advertising that principal, and no other
// member's key advertising it (firstClaimsOK). A member that advertises
// another's agent to impersonate it makes that agent contested: nodes
// that did not know it yet refuse it (its writes wait, its reads are not
// sent), and the conflict is counted (Status.BindingConflicts). Left: an
// agent whose node is down when a node first needs its binding can be
// claimed by a member advertising it alone then.
//
// Measured (sim, side by side with flooding in one session; the sweep's
// seeds with seed%5 == 2 run on demand, all clean). The bindings go, the
// content doubles: at 1,000 nodes (go test ./sim -run TestScaleFigures
// -scale 1000/20/0 -bindings-on-demand 2 -v, against the same without
// the flag) binding frames 1,016,552 → 34,694 and 178.5 → 2.7 MB,
// connections per node 999 → 78.8 mean (214 → 14.7 in any 10 s), but
// bytes/minimum 1.67 → 1.83: a node that lacks a
// writer's binding refuses its first deltas, pulls, and then syncs the
// namespace again (the loop's "requested" syncs: 268 MB against a 204 MB
// minimum), and a project every member reads from its creation
// overflowed the creator's queues (6,993 fallbacks to state sync). At 100
// nodes (mnemo sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3
// --bindings-on-demand 64, seed 1), where every node reads nearly every
// writer, 2.75 → 4.54. Tried and not kept: sending a writer's bindings
// to a peer before the first tree payload or live batch of that writer
// (per peer and writer once); against the version it was tried on
// (4.58 at 100 nodes), refusals 5,914 → 4,539 at 100 nodes, but
// bytes/minimum 4.58 → 5.09 (binding frames ×3.3) and 1.83 → 2.25 at
// 1,000.
//
// Then the engine came to hold a delta refused for want of its writer's
// binding (bounded) and check it again when the binding comes, instead of
// a sync that brings the content a second time (sync/replica/writerhold.go),
// and the loop pulls a held writer's binding again each tick
// (pullHeldWriters). Side by side in one session, flooding → on demand,
// both with it:
//
//	go test ./sim -run TestScaleFigures -scale 1000/20/0 [-bindings-on-demand 2] -v
//	  bytes/minimum 1.66 → 0.79 (on demand 1.83 before the hold); binding
//	  frames 1,016,508 → 25,596; connections per node 999 → 77.6 (181 →
//	  19.3 in any 10 s); 14,572 deltas held, every one passed
//	-scale 300/20/0: 1.78 → 0.90
//	-scale 300/300/0.1: 2.58 → 3.34, converged after the last fault 8.7 →
//	  0.6 s (without the pulls again 4.24 and 106.6 s)
//	mnemo sim --nodes 100 --ops 1000 --loss 0.1 --partitions 3 --seed 1 [--bindings-on-demand 64]
//	  2.78 → 3.30 (4.54 before the hold)
//
// Again at a052e1a (2026-12-07), the same two ways, seed 1, bytes on the
// wire / minimum (content frames alone), connections window by window
// (first / second 30 s window, mean/most):
//
//	-scale 1000/100/0.1: 2.47 (1.30) → 1.28 (1.25); binding frames
//	  1,246,501 → 73,757 (262 → 5.5 MB); 999/999, 26.6/60 → 109.0/999,
//	  12.8/733; 0 → 6,008 fallbacks to state sync (a project's creator
//	  syncing its new readers past its queues); rounds 3.43 → 5.33× in
//	  link latencies; peak RSS 7.4 → 4.3 GB
//	-scale 500/100/0.1: 2.29 (1.22) → 1.34 (1.31)
//	-scale 500/500/0.1: 2.55 (1.92) → 3.91 (3.77): 77,045 deltas refused
//	  for want of a writer's binding, where flooding refused 484
//
// So the crossover is in the writers, not the members: with one write
// per ten nodes on demand halves the bytes at 500 and 1,000 nodes even
// under loss, with one per node it costs half as much again at 500.
//
// So on demand wins where writes are few beside the members (the
// bindings are then most of the bytes), and loses under loss and many
// writers, where every node needs nearly every writer's binding anyway
// and a relayed delta held is not forwarded, so its subtree waits too.
// It stays off by default. What it needs besides: new readers of a
// project admitted at the pace of the creator's queue (the 6,993
// fallbacks at 1,000 nodes are still there).

// readerHintRetry is how often discoverReaders walks the members again
// while what it reads (the membership, the policy, the bindings, the
// namespaces held) stays the same: a pull that bound nothing is retried
// then.
const readerHintRetry = BindingsInterval

// maxHintsParsed bounds the advertised agent names kept parsed
// (demandState.parsed, hintAddr); past it the cache starts afresh.
const maxHintsParsed = 4096

// onDemand reports whether bindings travel on demand: the membership,
// this node included, has reached Config.BindingsOnDemandAt.
func (l *loop) onDemand() bool {
	return l.cfg.BindingsOnDemandAt > 0 && len(l.peers)+1 >= l.cfg.BindingsOnDemandAt
}

// demandState is the loop's state of bindings on demand: who advertises
// which agent (firstClaimsOK) and reader discovery (discoverReaders).
type demandState struct {
	// advertisers: per advertised agent name, the keys of the alive
	// members that advertise it; nil when the membership changed since it
	// was built (advertisersOf builds it).
	advertisers map[string][]ed25519.PublicKey
	parsed      map[string]namespace.Address // advertised names as parsed; a zero address does not parse
	// walked: what the last walk saw (membership, policy, bindings held,
	// namespaces held), so a tick whose inputs are the same walks nothing
	// until next.
	walked walkKey
	next   time.Time
}

type walkKey struct {
	members  uint64
	policy   *acl.Policy
	bindings int
	held     string
}

// advertisersOf lists the keys of the alive members that advertise the
// agent name p (this node's own key if it hosts p).
func (l *loop) advertisersOf(p string) []ed25519.PublicKey {
	if l.demand.advertisers == nil {
		idx := map[string][]ed25519.PublicKey{}
		for i := range l.sightings {
			m := &l.sightings[i]
			if m.State != StateAlive || len(m.PublicKey) != ed25519.PublicKeySize {
				continue
			}
			for _, a := range m.Agents {
				if !containsKey(idx[a], m.PublicKey) {
					idx[a] = append(idx[a], m.PublicKey)
				}
			}
		}
		for _, a := range l.cfg.Agents() {
			if s := a.String(); !containsKey(idx[s], l.cfg.Identity.Public) {
				idx[s] = append(idx[s], l.cfg.Identity.Public)
			}
		}
		l.demand.advertisers = idx
	}
	return l.demand.advertisers[p]
}

// firstClaimsOK keeps of bs, on demand, all but the bindings of
// principals not bound here whose chain in bs (the claim, then the
// hand-overs each signed by the key before) does not end on the key of
// the one member advertising that principal; it returns what it keeps and
// how many it dropped. With knownMu held.
func (l *loop) firstClaimsOK(bs []acl.Binding) ([]acl.Binding, int) {
	type chain struct {
		key ed25519.PublicKey
		bad bool
	}
	var chains map[namespace.Address]*chain
	for _, b := range bs {
		if _, bound := l.dir.KeyOf(b.Principal); bound {
			continue
		}
		if chains == nil {
			chains = map[namespace.Address]*chain{}
		}
		c := chains[b.Principal]
		switch {
		case c == nil && b.From == nil:
			chains[b.Principal] = &chain{key: b.Key}
		case c == nil:
			chains[b.Principal] = &chain{bad: true} // a hand-over of a principal this node never saw claimed
		case b.From != nil && bytes.Equal(b.From, c.key):
			c.key = b.Key
		}
	}
	if len(chains) == 0 {
		return bs, 0
	}
	// In order: the warnings go into the simulator's trace.
	for _, p := range slices.SortedFunc(maps.Keys(chains), func(a, b namespace.Address) int { return strings.Compare(a.String(), b.String()) }) {
		c := chains[p]
		ads := l.advertisersOf(p.String())
		if c.bad || len(ads) != 1 || !ads[0].Equal(c.key) {
			c.bad = true
			if len(ads) > 1 {
				l.conflicts.Add(1)
			}
			l.log.Warn("first binding refused: its key is not the one member advertising the principal", "principal", p, "advertisers", len(ads))
		}
	}
	kept := bs[:0:0]
	for _, b := range bs {
		if c := chains[b.Principal]; c == nil || !c.bad {
			kept = append(kept, b)
		}
	}
	return kept, len(bs) - len(kept)
}

// discoverReaders pulls, on demand, the bindings of each member that
// advertises an agent that may read a team or inbox namespace held here
// and is not bound to that member's key here, and of each member whose key
// signed acl records of a namespace held here that do not count for want
// of their signer's binding (unboundSignersIn): once per readerHintRetry
// while nothing changes, at once when the membership, the policy, the
// bindings or the namespaces held do. The loop's tick calls it.
func (l *loop) discoverReaders(now time.Time) {
	if !l.onDemand() {
		return
	}
	names := (storeState{l.svc}).Namespaces()
	if len(names) == 0 {
		return
	}
	var held []byte
	for _, ns := range names {
		held = append(append(held, ns...), 0)
	}
	l.knownMu.RLock()
	nb := len(l.bindingEncs)
	l.knownMu.RUnlock()
	key := walkKey{members: l.membersGen, policy: l.svc.Policy(), bindings: nb, held: string(held)}
	if key == l.demand.walked && now.Before(l.demand.next) {
		return // the same walk as last time, not yet due again: nothing parsed
	}
	l.demand.walked, l.demand.next = key, now.Add(readerHintRetry)
	var all, sparse []namespace.Address
	for _, ns := range names {
		a, err := namespace.Parse(ns)
		if err != nil {
			continue
		}
		all = append(all, a)
		if a.Kind != namespace.KindProject {
			sparse = append(sparse, a)
		}
	}
	// The signers no refused delta pulled (their records came in a delta
	// another member wrote, or were stored before).
	var signers map[crdt.ReplicaID]bool
	for _, ns := range all {
		signers = l.unboundSignersIn(key.policy, ns, signers)
	}
	for _, id := range slices.Sorted(maps.Keys(l.peers)) {
		pi := l.peers[id]
		if signers[pi.peer.Replica] || l.wantsBindingsOf(pi, sparse) {
			l.pullBindings(id, []crdt.ReplicaID{pi.peer.Replica}) // at most once per bindingsPullGap
		}
	}
}

// unboundSignersIn adds to want (made if nil) the replicas of the node
// keys that signed records of ns which pol does not count because no key
// is known here for their signer, and returns it.
func (l *loop) unboundSignersIn(pol *acl.Policy, ns namespace.Address, want map[crdt.ReplicaID]bool) map[crdt.ReplicaID]bool {
	for _, rj := range pol.Rejected(ns) {
		if !errors.Is(rj.Err, acl.ErrWrongKey) || len(rj.Record.SignerKey) != ed25519.PublicKeySize {
			continue
		}
		if _, bound := l.keyOf(rj.Record.Signer); bound {
			continue // bound to another key: not for want of a binding
		}
		if want == nil {
			want = map[crdt.ReplicaID]bool{}
		}
		if len(want) < maxPullsPerPeer {
			want[acl.ReplicaIDOf(rj.Record.SignerKey)] = true
		}
	}
	return want
}

// wantsBindingsOf reports whether the member pi advertises an agent not
// bound to its key here that may read one of the namespaces sparse.
func (l *loop) wantsBindingsOf(pi peerInfo, sparse []namespace.Address) bool {
	for _, h := range pi.member.Agents {
		a := l.hintAddr(h)
		if a.IsZero() {
			continue
		}
		if k, bound := l.keyOf(a); bound && k.Equal(pi.member.PublicKey) {
			continue
		}
		for _, ns := range sparse {
			if l.svc.MayReadAddress(a, ns) {
				return true
			}
		}
	}
	return false
}

// hintAddr is the agent an advertised name names, or the zero address.
func (l *loop) hintAddr(h string) namespace.Address {
	if a, ok := l.demand.parsed[h]; ok {
		return a
	}
	var a namespace.Address
	if p, err := namespace.Parse(h); err == nil && p.Kind == namespace.KindAgent && p.Path == "" {
		a = p
	}
	if l.demand.parsed == nil || len(l.demand.parsed) >= maxHintsParsed {
		l.demand.parsed = map[string]namespace.Address{}
	}
	l.demand.parsed[h] = a
	return a
}

func containsKey(keys []ed25519.PublicKey, k ed25519.PublicKey) bool {
	return slices.ContainsFunc(keys, func(o ed25519.PublicKey) bool { return o.Equal(k) })
}

// noteDeltaSigners notes, for the refusal of a delta of ns whose records
// pol counts with the held ones, the replicas of the keys that signed
// records pol does not count for want of their signer's binding: pulled
// with the refused writer's (pullForRejection).
func (l *loop) noteDeltaSigners(ns string, addr namespace.Address, pol *acl.Policy) {
	if _, noted := l.deltaSigners[ns]; noted || len(l.deltaSigners) >= maxRefused {
		return
	}
	want := l.unboundSignersIn(pol, addr, nil)
	if l.deltaSigners == nil {
		l.deltaSigners = map[string][]crdt.ReplicaID{}
	}
	l.deltaSigners[ns] = slices.Sorted(maps.Keys(want))
}
