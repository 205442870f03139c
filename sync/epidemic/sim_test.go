package epidemic

import (
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The simulation: N nodes over a virtual network whose every message takes
// one round (simRound of virtual time) and is lost with probability loss.
// A message to a dead node is lost and its sender told next round
// (PeerFailed), as a transport would. One seed drives every choice: the
// nodes' own (Config.Seed), contacts, losses, failures and sources.

// simRound is the virtual time of one round: one hop's latency.
const simRound = 100 * time.Millisecond

var simEpoch = time.Unix(1_800_000_000, 0)

type simMsg struct {
	from, to int
	msg      Message
}

type simFail struct{ node, peer int }

type simNet struct {
	tb    testing.TB
	rng   *rand.Rand
	nodes []*Node
	ids   []PeerID
	index map[PeerID]int
	alive []bool
	loss  float64
	round int
	// writers, if set, are the nodes broadcasts start from (else any).
	writers []int

	queue []simMsg  // delivered next round
	fails []simFail // reported next round

	trace   hash.Hash64 // if set, of every message stepped, in order
	casts   map[MsgID]*simCast
	nextID  uint64
	payload []byte
	sent    [KindShuffleReply + 1]int // messages sent by kind
	bytes   [KindShuffleReply + 1]int
	dupes   int // payloads delivered twice to the application (never)
}

// simCast follows one broadcast.
type simCast struct {
	id     MsgID
	start  int
	got    []uint8 // deliveries per node (the origin counts as one)
	count  int     // nodes reached
	target int     // nodes for 99.99% of those alive at the start
	done   int     // rounds to target; -1 until then
}

func newSim(tb testing.TB, seed uint64, cfg func(*Config)) *simNet {
	return &simNet{tb: tb, rng: rand.New(rand.NewPCG(seed, 0x5eed)), index: map[PeerID]int{},
		casts: map[MsgID]*simCast{}, payload: make([]byte, 1024)}
}

// add creates a node (not yet joined).
func (s *simNet) add(seed uint64, cfg func(*Config)) int {
	i := len(s.nodes)
	id := PeerID(fmt.Sprintf("n%04d", i))
	c := Config{Self: id, Seed: seed}
	if cfg != nil {
		cfg(&c)
	}
	n, err := New(c)
	if err != nil {
		s.tb.Fatal(err)
	}
	n.Tick(s.now())
	s.nodes, s.ids, s.alive = append(s.nodes, n), append(s.ids, id), append(s.alive, true)
	s.index[id] = i
	return i
}

func (s *simNet) now() time.Time { return simEpoch.Add(time.Duration(s.round) * simRound) }

// build makes an overlay of n nodes: each joins through a random node
// already in, perRound a round, and the overlay then runs settle rounds.
func (s *simNet) build(n, perRound, settle int, seed uint64, cfg func(*Config)) {
	s.add(seed, cfg)
	for len(s.nodes) < n {
		in := len(s.nodes)
		for k := 0; k < perRound && len(s.nodes) < n; k++ {
			i := s.add(seed, cfg)
			s.nodes[i].Join(s.ids[s.rng.IntN(in)])
			s.drain(i)
		}
		s.step()
	}
	s.run(settle)
}

func (s *simNet) run(rounds int) {
	for range rounds {
		s.step()
	}
}

// step runs one round: failures reported, messages delivered, every live
// node ticked.
func (s *simNet) step() {
	s.round++
	msgs, fails := s.queue, s.fails
	s.queue, s.fails = nil, nil
	for _, f := range fails {
		if s.alive[f.node] {
			s.nodes[f.node].PeerFailed(s.ids[f.peer])
			s.drain(f.node)
		}
	}
	for _, m := range msgs {
		if !s.alive[m.to] {
			if s.alive[m.from] {
				s.fails = append(s.fails, simFail{m.from, m.to})
			}
			continue
		}
		if s.loss > 0 && s.rng.Float64() < s.loss {
			continue
		}
		if s.trace != nil {
			fmt.Fprintf(s.trace, "%d %d>%d %+v\n", s.round, m.from, m.to, m.msg)
		}
		if err := s.nodes[m.to].Step(s.ids[m.from], m.msg); err != nil {
			s.tb.Fatalf("round %d: %s ← %s: %v", s.round, s.ids[m.to], s.ids[m.from], err)
		}
		s.drain(m.to)
	}
	now := s.now()
	for i, n := range s.nodes {
		if s.alive[i] {
			n.Tick(now)
			s.drain(i)
		}
	}
}

func (s *simNet) drain(i int) {
	n := s.nodes[i]
	for n.HasReady() {
		rd := n.Ready()
		for _, d := range rd.Deliver {
			s.deliver(i, d.ID)
		}
		for _, e := range rd.Messages {
			s.sent[e.Msg.Kind]++
			s.bytes[e.Msg.Kind] += e.Msg.Size()
			s.queue = append(s.queue, simMsg{from: i, to: s.index[e.To], msg: e.Msg})
		}
	}
}

func (s *simNet) deliver(i int, id MsgID) {
	c := s.casts[id]
	c.got[i]++
	if c.got[i] > 1 {
		s.dupes++
		return
	}
	c.count++
	if c.count >= c.target && c.done < 0 {
		c.done = s.round - c.start
	}
}

func (s *simNet) live() int {
	k := 0
	for _, a := range s.alive {
		if a {
			k++
		}
	}
	return k
}

// broadcast starts a broadcast from a random live node.
func (s *simNet) broadcast() *simCast {
	s.nextID++
	var id MsgID
	binary.BigEndian.PutUint64(id[:], s.nextID)
	from := slices.DeleteFunc(slices.Clone(s.writers), func(i int) bool { return !s.alive[i] })
	if len(from) == 0 {
		for i, a := range s.alive {
			if a {
				from = append(from, i)
			}
		}
	}
	src := from[s.rng.IntN(len(from))]
	live := s.live()
	c := &simCast{id: id, start: s.round, got: make([]uint8, len(s.nodes)), count: 1,
		target: int(math.Ceil(0.9999 * float64(live))), done: -1}
	c.got[src] = 1
	s.casts[id] = c
	s.nodes[src].Broadcast(id, s.payload)
	s.drain(src)
	return c
}

// pickWriters makes k random nodes the sources of broadcasts.
func (s *simNet) pickWriters(k int) {
	s.writers = s.rng.Perm(len(s.nodes))[:k]
}

// kill stops a random fraction of the live nodes.
func (s *simNet) kill(frac float64) {
	var live []int
	for i, a := range s.alive {
		if a {
			live = append(live, i)
		}
	}
	s.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	for _, i := range live[:int(frac*float64(len(live)))] {
		s.alive[i] = false
	}
}

// viewSizes returns the max and mean active view of live nodes.
func (s *simNet) viewSizes() (maxV int, mean float64) {
	sum := 0
	for i, n := range s.nodes {
		if s.alive[i] {
			k := len(n.active)
			sum += k
			maxV = max(maxV, k)
		}
	}
	return maxV, float64(sum) / float64(s.live())
}

// asymmetric counts links known at one end only.
func (s *simNet) asymmetric() int {
	k := 0
	for i, n := range s.nodes {
		if !s.alive[i] {
			continue
		}
		for _, l := range n.active {
			j := s.index[l.id]
			if !s.alive[j] || s.nodes[j].link(s.ids[i]) == nil {
				k++
			}
		}
	}
	return k
}

// connected reports whether the live nodes' active views connect them.
func (s *simNet) connected() bool { return len(s.component()) == s.live() }

// component returns the largest set of live nodes the active views
// connect.
func (s *simNet) component() map[int]bool {
	var best map[int]bool
	seen := make([]bool, len(s.nodes))
	for start, a := range s.alive {
		if !a || seen[start] {
			continue
		}
		comp := map[int]bool{start: true}
		seen[start] = true
		stack := []int{start}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, l := range s.nodes[i].active {
				if j := s.index[l.id]; s.alive[j] && !seen[j] {
					seen[j] = true
					comp[j] = true
					stack = append(stack, j)
				}
			}
		}
		if len(comp) > len(best) {
			best = comp
		}
	}
	return best
}

// simFigures are what a batch of broadcasts cost and achieved.
type simFigures struct {
	casts        int
	reachedAll   int     // broadcasts that reached every live node
	minReached   float64 // smallest fraction of live nodes reached
	roundsMean   float64 // rounds to 99.99%, over the broadcasts that got there
	roundsMax    int
	payloadRatio float64 // payload sends per broadcast ÷ (N−1)
	bytesRatio   float64 // Plumtree bytes per broadcast ÷ (N−1) payload messages
	ihaves       float64 // announcements per broadcast
	grafts       float64 // grafts per broadcast
	wants        float64 // wants per broadcast
	prunes       float64 // prunes per broadcast
}

// measure runs k broadcasts one after another, each given gap rounds,
// under loss, and returns their figures.
func (s *simNet) measure(k, gap int, loss float64) simFigures {
	s.loss = loss
	defer func() { s.loss = 0 }()
	var f simFigures
	f.casts, f.minReached = k, 1
	sent0, bytes0 := s.sent, s.bytes
	doneSum, doneN := 0, 0
	for range k {
		live := s.live()
		c := s.broadcast()
		s.run(gap)
		reached := 0
		for i, g := range c.got {
			if g > 0 && s.alive[i] {
				reached++
			}
		}
		if reached == live {
			f.reachedAll++
		}
		f.minReached = min(f.minReached, float64(reached)/float64(live))
		if c.done >= 0 {
			doneSum += c.done
			doneN++
			f.roundsMax = max(f.roundsMax, c.done)
		}
	}
	if doneN > 0 {
		f.roundsMean = float64(doneSum) / float64(doneN)
	}
	n1 := float64(s.live()-1) * float64(k)
	gossip := float64(s.sent[KindGossip] - sent0[KindGossip])
	f.payloadRatio = gossip / n1
	var b int
	for _, kind := range []Kind{KindGossip, KindIHave, KindGraft, KindWant, KindPrune} {
		b += s.bytes[kind] - bytes0[kind]
	}
	one := Message{Kind: KindGossip, Payload: s.payload}
	f.bytesRatio = float64(b) / (n1 * float64(one.Size()))
	f.ihaves = float64(s.sent[KindIHave]-sent0[KindIHave]) / float64(k)
	f.grafts = float64(s.sent[KindGraft]-sent0[KindGraft]) / float64(k)
	f.wants = float64(s.sent[KindWant]-sent0[KindWant]) / float64(k)
	f.prunes = float64(s.sent[KindPrune]-sent0[KindPrune]) / float64(k)
	return f
}

func (f simFigures) String() string {
	return fmt.Sprintf("reached all %d/%d (min %.4f), rounds to 99.99%% mean %.1f max %d, payload sends/(N−1) %.3f, bytes/(N−1 payloads) %.3f, IHAVE msgs %.0f, wants %.1f, grafts %.1f, prunes %.1f per broadcast",
		f.reachedAll, f.casts, f.minReached, f.roundsMean, f.roundsMax, f.payloadRatio, f.bytesRatio, f.ihaves, f.wants, f.grafts, f.prunes)
}

// epidemicRounds is the epidemic model the broadcast is measured
// against: push rumour spreading, each informed node telling one random
// node a round, each message lost with probability loss. It returns the
// mean rounds, over trials, to reach 99.99% of n.
func epidemicRounds(rng *rand.Rand, n int, loss float64, trials int) float64 {
	target := int(math.Ceil(0.9999 * float64(n)))
	sum := 0
	for range trials {
		informed := make([]bool, n)
		informed[0] = true
		k, r := 1, 0
		for k < target {
			r++
			var told []int
			for i, in := range informed {
				if !in {
					continue
				}
				j := rng.IntN(n - 1)
				if j >= i {
					j++
				}
				if rng.Float64() >= loss {
					told = append(told, j)
				}
			}
			for _, j := range told {
				if !informed[j] {
					informed[j] = true
					k++
				}
			}
		}
		sum += r
	}
	return float64(sum) / float64(trials)
}
