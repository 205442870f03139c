package replica

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

var words = strings.Fields(`the memory agent store badger replica namespace decision pattern
search index timeline context budget token compaction summary session project team graph
query cache latency throughput write read sync delta state vector clock merge conflict resolve
payment service retry backoff timeout error handler request response schema migration column`)

// memoryText is English-like text of n words from a fixed vocabulary.
func memoryText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// saveDelta builds the delta of a realistic memory save (the fields the
// node writes) on replica r.
func saveDelta(m *crdt.Map, r crdt.ReplicaID, clk *crdt.Clock, now time.Time, rng *rand.Rand, id string) *crdt.Map {
	e, err := m.Edit(r, id, crdt.DefaultLimits())
	if err != nil {
		panic(err)
	}
	ts := clk.Now(now)
	fields := map[string]string{
		"ty": "decision", "ti": memoryText(rng, 6), "co": memoryText(rng, 40+rng.IntN(80)),
		"sc": "project", "pj": "mnemo", "au": "agent://alice", "im": "0.5", "cf": "0.8",
		"ca": fmt.Sprint(now.UnixNano()), "ua": fmt.Sprint(now.UnixNano()), "ha": strings.Repeat("ab", 16),
	}
	for k, v := range fields {
		if err := e.Set(ts, k, []byte(v)); err != nil {
			panic(err)
		}
	}
	for range 3 {
		_ = e.Add("tg", words[rng.IntN(len(words))])
	}
	d := e.Delta()
	m.Join(d)
	return d
}

// TestCatchUpBytes measures what a subscriber that missed 1% of a
// 100k-memory namespace receives on digest sync, against the full state.
func TestCatchUpBytes(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 10_000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	clk := crdt.NewClock(0)
	now := time.Unix(1_800_000_000, 0)
	pub, sub := NewMemState(), NewMemState()
	pm, sm := pub.Map("team://a"), sub.Map("team://a")
	s0, r0 := testSigner(0)
	for i := range n {
		d := sealInto(pm, "team://a", saveDelta(pm, r0, clk, now, rng, fmt.Sprintf("%026d", i)), s0)
		if i%100 != 0 { // the subscriber misses 1%
			sm.Join(d)
		}
	}
	full := len(pm.Encode())
	codec := wire.NewCodec(0)
	pol := openPolicy{}
	pe := New(testConfig(Config{}, "pub", 0), pub, pol)
	se := New(testConfig(Config{}, "sub", 1), sub, pol)
	pe.SetPeers([]Peer{testPeer("sub", 1)})
	se.SetPeers([]Peer{testPeer("pub", 0)})
	pe.Ready()
	se.Ready()
	if err := se.RequestSync("pub", "team://a"); err != nil {
		t.Fatal(err)
	}
	toPub := 0
	for _, env := range se.Ready().Messages {
		f, _ := codec.Encode(env.Msg)
		toPub += len(f)
		if err := pe.Step("sub", env.Msg); err != nil {
			t.Fatal(err)
		}
	}
	toSub := 0
	for _, env := range pe.Ready().Messages {
		f, _ := codec.Encode(env.Msg)
		toSub += len(f)
		m, _ := codec.Decode(f)
		if err := se.Step("pub", m); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range se.Ready().Apply {
		sub.Apply(a)
	}
	if sm.Digest() != pm.Digest() {
		t.Fatal("catch-up did not converge")
	}
	ratio := float64(toSub+toPub) / float64(full)
	t.Logf("catch-up after missing 1%% of %d memories: %d bytes to the subscriber + %d to the publisher = %.1f%% of the full state (%d bytes)",
		n, toSub, toPub, 100*ratio, full)
	if ratio > 0.10 {
		t.Fatalf("catch-up sent %.1f%% of the full state, over the 10%% target", 100*ratio)
	}
}

// TestStalledQueueMemoryBounded pushes a million updates at a subscriber
// that never answers: the queue must stay within its bound and the heap
// must not grow with the backlog.
func TestStalledQueueMemoryBounded(t *testing.T) {
	updates := 1_000_000
	if testing.Short() || raceEnabled {
		updates = 50_000
	}
	st := NewMemState()
	cfg := testConfig(Config{QueueMaxDeltas: 10_000, QueueMaxBytes: 4 << 20}, "pub", 0)
	e := New(cfg, st, openPolicy{})
	e.SetPeers([]Peer{testPeer("stalled", 1)})
	e.Ready()
	m := crdt.NewMap()
	clk := crdt.NewClock(0)
	now := time.Unix(1_800_000_000, 0)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := uint64(0)
	for i := range updates {
		// updates to 1000 distinct memories, as an agent editing its notes
		d, err := m.Set(cfg.Replica, clk.Now(now), fmt.Sprintf("m%04d", i%1000), "co", []byte(fmt.Sprintf("revision %d of this note", i)))
		if err != nil {
			t.Fatal(err)
		}
		e.LocalDelta("team://a", d)
		e.Ready() // the transport takes the frames; no ack ever comes back
		if i%100_000 == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	s := e.Stats()[0]
	if s.MaxQueueDepth > cfg.QueueMaxDeltas {
		t.Fatalf("queue reached %d deltas, bound %d", s.MaxQueueDepth, cfg.QueueMaxDeltas)
	}
	if s.QueueBytes > cfg.QueueMaxBytes {
		t.Fatalf("queue holds %d bytes, bound %d", s.QueueBytes, cfg.QueueMaxBytes)
	}
	if s.Fallbacks == 0 {
		t.Fatal("a stalled peer never fell back to digest sync")
	}
	t.Logf("%d updates to a stalled peer: max queue %d deltas (bound %d), %d fallbacks, peak heap %.1f MiB (start %.1f MiB)",
		updates, s.MaxQueueDepth, cfg.QueueMaxDeltas, s.Fallbacks, float64(peak)/(1<<20), float64(before.HeapAlloc)/(1<<20))
}

// BenchmarkWireBytesPerDelta reports the frame bytes a live delta of a
// realistic memory save costs, against the memory's own encoded size.
func BenchmarkWireBytesPerDelta(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	clk := crdt.NewClock(0)
	now := time.Unix(1_800_000_000, 0)
	codec := wire.NewCodec(0)
	st := NewMemState()
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			var wireBytes, recordBytes int
			for i := 0; i < b.N; i++ {
				msg := &wire.Message{Kind: wire.KindDeltas, Seq: uint64(i + 1)}
				for j := range batch {
					id := fmt.Sprintf("%026d", i*batch+j)
					d := saveDelta(st.Map("team://a"), 1, clk, now, rng, id)
					rec, _ := d.Get(id)
					recordBytes += len(crdt.EncodeRecord(rec))
					msg.Deltas = append(msg.Deltas, wire.NamespaceDelta{Namespace: "team://a", Delta: d.Encode()})
				}
				f, err := codec.Encode(msg)
				if err != nil {
					b.Fatal(err)
				}
				wireBytes += len(f)
			}
			b.ReportMetric(float64(wireBytes)/float64(b.N*batch), "wire-B/delta")
			b.ReportMetric(float64(wireBytes)/float64(recordBytes), "wire/record")
		})
	}
}
