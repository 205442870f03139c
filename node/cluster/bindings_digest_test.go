package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/sync/wire"
)

// sortedDigest is the digest before the set hash: SHA-256 over the sorted,
// length-prefixed encodings, then their number. It is the reference the
// set hash is checked against: two sets get equal digests from one
// exactly when they do from the other.
func sortedDigest(encs [][]byte) []byte {
	encs = slices.SortedFunc(slices.Values(encs), bytes.Compare)
	h := sha256.New()
	var n [4]byte
	for _, e := range encs {
		binary.BigEndian.PutUint32(n[:], uint32(len(e)))
		h.Write(n[:])
		h.Write(e)
	}
	return binary.AppendUvarint(h.Sum(nil), uint64(len(encs)))
}

func setDigest(encs [][]byte) []byte {
	var h setHash
	for _, e := range encs {
		h.add(e)
	}
	return h.digest()
}

// The set hash is a function of the set alone (any order of adding gives
// the same digest) and tells sets apart as the full recomputation over the
// sorted set does, on random pairs of sets drawn from a small universe
// (so that many pairs are equal, or differ by one binding, or hold
// encodings that are prefixes of one another). Replay a failure with its
// seed.
func TestBindingsDigestAgreesWithSortedDigest(t *testing.T) {
	const seed = 14
	rng := rand.New(rand.NewPCG(seed, seed))
	var universe [][]byte
	for range 24 {
		e := make([]byte, 2+rng.IntN(199)) // two bytes at least: its prefix differs from it
		for i := range e {
			e[i] = byte(rng.Uint32())
		}
		universe = append(universe, e, e[:len(e)/2+1]) // a prefix too
	}
	pick := func() [][]byte {
		var s [][]byte
		for _, e := range universe {
			if rng.IntN(8) == 0 {
				s = append(s, e)
			}
		}
		return s
	}
	shuffled := func(s [][]byte) [][]byte {
		c := slices.Clone(s)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		return c
	}
	differing := 0
	for trial := range 3000 {
		a := pick()
		var b [][]byte
		switch trial % 3 {
		case 0:
			b = shuffled(a)
		case 1:
			b = shuffled(a)
			if len(b) > 0 {
				b = b[1:] // one fewer
			}
		default:
			b = pick()
		}
		da, db := setDigest(a), setDigest(b)
		if !bytes.Equal(da, setDigest(shuffled(a))) {
			t.Fatalf("seed %d trial %d: the digest of a set depends on the order its %d bindings were added", seed, trial, len(a))
		}
		same := bytes.Equal(sortedDigest(a), sortedDigest(b))
		if same != bytes.Equal(da, db) {
			t.Fatalf("seed %d trial %d: sorted digests equal %v, set digests equal %v (sets of %d and %d)", seed, trial, same, !same, len(a), len(b))
		}
		if n, ok := digestCount(da); !ok || n != uint64(len(a)) {
			t.Fatalf("seed %d trial %d: digest counts %d (%v), want %d", seed, trial, n, ok, len(a))
		}
		if !same {
			differing++
		}
	}
	if differing < 1000 {
		t.Fatalf("only %d of 3000 pairs were different sets: the test tells too few apart", differing)
	}
}

// What reindexBindings keeps up to date one binding at a time, after
// claims and hand-overs have spread, equals what a recomputation from the
// directory gives: the digest, the principals each replica hosts, and
// the principals every peer is given (refreshPrincipals).
func TestBindingsIndexIncremental(t *testing.T) {
	net := newSteppedNet(t, 5, 23)
	net.join()
	net.tick() // a hand-over must be newer than the claim it replaces
	n0, n1, n2, n3 := net.nodes[0], net.nodes[1], net.nodes[2], net.nodes[3]
	if _, err := n0.st.Handover(n0.me.Principal, n1.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	if _, err := n2.st.Handover(n2.me.Principal, n3.id.Public); err != nil {
		t.Fatal(err)
	}
	net.run()
	for range 8 {
		net.tick()
	}
	for _, nd := range net.nodes {
		l := nd.st.loop
		backward := slices.Clone(l.bindingEncs)
		slices.Reverse(backward)
		if want := setDigest(backward); !bytes.Equal(l.bindingsSum, want) {
			t.Errorf("node %d: digest %x, recomputed %x", nd.i, l.bindingsSum, want)
		}
		for _, other := range net.nodes {
			if other == nd {
				continue
			}
			want := l.dir.PrincipalsOf(other.id.Public)
			slices.SortFunc(want, func(a, b namespace.Address) int { return strings.Compare(a.String(), b.String()) })
			if got := l.byReplica[acl.ReplicaIDOf(other.id.Public)]; !slices.Equal(got, want) {
				t.Errorf("node %d: node %d hosts %v, its directory says %v", nd.i, other.i, got, want)
			}
			if got := l.peers[other.st.loop.self].peer.Principals; !slices.Equal(got, want) {
				t.Errorf("node %d: its peer %d is given %v, its directory says %v", nd.i, other.i, got, want)
			}
		}
	}
	if got := n3.st.loop.dir.PrincipalsOf(n3.id.Public); len(got) != 2 {
		t.Fatalf("the scenario did not happen: node 3 hosts %v", got)
	}
}

// A probe lost at a join is sent again within a second (at the first tick
// bindingsProbeRetry after it), not left to the next summary
// (BindingsInterval): a peer is probed again until heard; and not at the
// first tick after it (100 ms here), while its answer may still be on the
// way: probing again at every tick sent a fifth of the probes twice at a
// start of 300 simulated nodes.
func TestBindingsProbeLostIsSentAgain(t *testing.T) {
	net := newSteppedNet(t, 3, 29)
	n0, n2 := net.nodes[0], net.nodes[2]
	net.cut = func(from, to int) bool { return to == 2 }
	net.join()
	if _, ok := n2.st.HostedElsewhere(n0.me.Principal); ok {
		t.Fatal("the scenario did not happen: node 2 got node 0's claim through the cut")
	}
	net.cut = nil
	tally := net.tallyBindings()
	net.tick()
	if tally.bindings > 0 {
		t.Fatalf("a probe was sent again at the first tick, %v after the first", steppedTick)
	}
	for ticks := 1; ; ticks++ {
		if host, _ := n2.st.HostedElsewhere(n0.me.Principal); host == n0.id.NodeID() {
			break
		}
		if ticks >= int(time.Second/steppedTick) {
			t.Fatalf("%v after the join node 2 does not have node 0's principal at node 0", time.Duration(ticks)*steppedTick)
		}
		net.tick()
	}
}

// Two nodes that see each other join probe each other, and two first
// probes that cross answer each other: two frames. Whatever is lost, each
// keeps probing until it hears from the other, any other probe is
// answered with the other's claims, and within a second each knows whom
// the other hosts.
func TestBindingsProbesCrossOrAreAnswered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lose   func(from int, n map[int]int) bool // n: frames node from sent so far
		frames int                                // bindings frames delivered
	}{
		{"nothing lost", func(int, map[int]int) bool { return false }, 2},
		// Node 1's probe comes while node 0 probes: heard, nothing sent;
		// node 1 hears nothing and probes again; node 0 answers.
		{"one probe lost", func(from int, n map[int]int) bool { return from == 0 && n[0] == 1 }, 3},
		{"that answer lost too", func(from int, n map[int]int) bool { return from == 0 && n[0] <= 2 }, 4},
		// Probes sent again are answered even when they cross: an earlier
		// probe was lost, or refused by a peer that did not know the
		// sender yet.
		{"both probes lost", func(_ int, n map[int]int) bool { return n[0]+n[1] <= 2 }, 4},
	} {
		net := newSteppedNet(t, 2, 31)
		codec := wire.NewCodec(wire.DefaultMaxFrame)
		sent, lost, delivered := map[int]int{}, 0, 0
		net.lose = func(from, _ int, frame []byte) bool {
			if m, err := codec.Decode(frame); err != nil || m.Kind != wire.KindBindings {
				return false
			}
			sent[from]++
			if tc.lose(from, sent) {
				lost++
				return true
			}
			return false
		}
		net.observe = func(_, _ int, frame []byte) {
			if m, err := codec.Decode(frame); err == nil && m.Kind == wire.KindBindings {
				delivered++
			}
		}
		net.join()
		for ticks := 1; !net.knowsAll(); ticks++ {
			if ticks > int(time.Second/steppedTick) {
				t.Fatalf("%s: a second after the join the two do not know each other's agents", tc.name)
			}
			net.tick()
		}
		for range 10 {
			net.tick() // nothing more once both know
		}
		if delivered != tc.frames || (lost == 0) != (tc.name == "nothing lost") {
			t.Fatalf("%s: %d bindings frames delivered, %d lost; want %d delivered", tc.name, delivered, lost, tc.frames)
		}
	}
}
