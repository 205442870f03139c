package crdt

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// hashReplica is a realistic replica id: 64 bits of a hash of a node key.
func hashReplica(name string) ReplicaID {
	h := sha256.Sum256([]byte(name))
	return ReplicaID(binary.BigEndian.Uint64(h[:8]))
}

// ulid is a 26-character id, as mnemo's memory ids are.
func ulid(i int) string { return fmt.Sprintf("01JDQ8%020d", i) }

// fullState is n records written by replica r: two fields and two tags each.
func fullState(tb testing.TB, r ReplicaID, n int) *Map {
	m, c := NewMap(), NewClock(time.Minute)
	for i := range n {
		e, err := m.Edit(r, ulid(i), Limits{})
		if err != nil {
			tb.Fatal(err)
		}
		ts := c.Now(t0.Add(time.Duration(i) * time.Millisecond))
		if e.Set(ts, "title", []byte("decision about the login flow")) != nil ||
			e.Set(ts, "importance", []byte("0.7")) != nil ||
			e.Add("tags", "auth") != nil || e.Add("tags", fmt.Sprint("t", i%50)) != nil {
			tb.Fatal("edit failed")
		}
		m.Join(e.Delta())
	}
	return m
}

func benchJoinStates(b *testing.B, n int) {
	a := fullState(b, hashReplica("node-a"), n)
	other := fullState(b, hashReplica("node-b"), n) // same ids, concurrent writes
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dst := a.Clone()
		b.StartTimer()
		dst.Join(other)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func benchDeltaStream(b *testing.B, n int) {
	ra, rb := hashReplica("node-a"), hashReplica("node-b")
	state := fullState(b, ra, n)
	src := state.Clone()
	clock := NewClock(time.Minute)
	clock.Restore(src.MaxTimestamp())
	deltas := make([]*Map, b.N)
	for i := range deltas {
		var err error
		id := ulid((i * 7919) % n)
		switch i % 3 {
		case 0:
			deltas[i], err = src.Set(rb, clock.Now(t0), id, "title", []byte("edited"))
		case 1:
			deltas[i], err = src.Add(rb, id, "tags", fmt.Sprint("new", i))
		default:
			deltas[i], err = src.Remove(rb, id, "tags", "auth")
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for _, d := range deltas {
		state.Join(d)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deltas/s")
	if state.Digest() != src.Digest() {
		b.Fatal("delta stream did not reproduce the source")
	}
}

func BenchmarkJoin10k(b *testing.B) {
	b.Run("states", func(b *testing.B) { benchJoinStates(b, 10_000) })
}

func BenchmarkJoin100k(b *testing.B) {
	b.Run("states", func(b *testing.B) { benchJoinStates(b, 100_000) })
	b.Run("delta-stream", func(b *testing.B) { benchDeltaStream(b, 100_000) })
}

// singleOpDelta is an LWW field update of an existing record by a replica
// that has already written thousands of times.
func singleOpDelta(b *testing.B) *Map {
	r := hashReplica("node-a")
	m := fullState(b, r, 2000)
	c := NewClock(time.Minute)
	c.Restore(m.MaxTimestamp())
	d, err := m.Set(r, c.Now(t0), ulid(1234), "title", []byte("decision about the login flow, revised"))
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func BenchmarkDeltaEncode(b *testing.B) {
	d := singleOpDelta(b)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(d.Encode())
	}
	b.ReportMetric(float64(n), "bytes")
}

func BenchmarkDeltaDecode(b *testing.B) {
	enc := singleOpDelta(b).Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMap(enc, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(enc)), "bytes")
}

// deltaOverhead measures encoded bytes beyond the payload (id + field or
// set name + value or element) for one op, alone and in a group of 100 ops
// of one replica on 100 records.
func deltaOverhead(tb testing.TB, op string) (single, group float64) {
	r := hashReplica("node-a")
	m := fullState(tb, r, 5000) // counters in the thousands, like a live node
	c := NewClock(time.Minute)
	c.Restore(m.MaxTimestamp())
	g := NewMap()
	payload := 0
	for i := range 100 {
		id := ulid(1000 + i*37)
		var d *Map
		var err error
		var p int
		wall := t0.Add(time.Hour + time.Duration(i)*137*time.Millisecond)
		switch op {
		case "lww":
			v := []byte("decision about the login flow, revised")
			d, err = m.Set(r, c.Now(wall), id, "title", v)
			p = len(id) + len("title") + len(v)
		case "add":
			d, err = m.Add(r, id, "tags", "authentication")
			p = len(id) + len("tags") + len("authentication")
		case "remove":
			d, err = m.Remove(r, id, "tags", "auth")
			p = len(id) + len("tags") + len("auth")
		}
		if err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			single = float64(len(d.Encode()) - p)
		}
		g.Join(d)
		payload += p
	}
	return single, float64(len(g.Encode())-payload) / 100
}

func BenchmarkDeltaOverhead(b *testing.B) {
	for _, op := range []string{"lww", "add", "remove"} {
		b.Run(op, func(b *testing.B) {
			var single, group float64
			for b.Loop() {
				single, group = deltaOverhead(b, op)
			}
			b.ReportMetric(single, "overhead-B/single-op")
			b.ReportMetric(group, "overhead-B/op-in-100")
		})
	}
}

func BenchmarkCausalMetadata(b *testing.B) {
	var setCtx, setDots, mapCtx, mapDots int
	for b.Loop() {
		setCtx, setDots, mapCtx, mapDots = causalMetadata(b, 100_000)
	}
	b.ReportMetric(float64(setCtx), "orset-ctx-B")
	b.ReportMetric(float64(setDots), "orset-elem-dots")
	b.ReportMetric(float64(mapCtx), "map-ctx-B")
	b.ReportMetric(float64(mapDots), "map-elem-dots")
}

// simContext is a namespace's context as in the simulator's 100-node runs:
// 100 replicas, a few intervals each.
func simContext() *Context {
	c := NewContext()
	for i := range 100 {
		r := hashReplica(fmt.Sprint("node ", i))
		for n := uint64(1); n <= 200; n++ {
			if n%50 != 0 {
				c.Add(Dot{r, n})
			}
		}
	}
	return c
}

// BenchmarkContextEncode: a namespace's context as a store persists it on
// every commit in the simulator's 100-node runs: 100 replicas, a few
// intervals each.
func BenchmarkContextEncode(b *testing.B) {
	c := simContext()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Encode()
	}
}

// BenchmarkContextClone: the same context copied, as a store and the
// engine copy a namespace's context.
func BenchmarkContextClone(b *testing.B) {
	c := simContext()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Clone()
	}
}

// BenchmarkContextCloneJoin: a peer's delta joined into a copy of the
// namespace's context, as a store records every delta it applies
// (store.pendDeltas): the delta's context names one replica.
func BenchmarkContextCloneJoin(b *testing.B) {
	c := simContext()
	d := NewContext()
	r := hashReplica("node 7")
	for n := c.Max(r) + 1; n <= c.Max(r)+8; n++ {
		d.Add(Dot{r, n})
	}
	b.ReportAllocs()
	for b.Loop() {
		n := c.Clone()
		n.Join(d)
	}
}

// BenchmarkContextDecode: a peer's context decoded, as every digest sync
// request is answered.
func BenchmarkContextDecode(b *testing.B) {
	enc := simContext().Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeContext(enc, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContextMissing: what a peer's context holds that this one
// lacks, a few dots of a few replicas (a digest sync's answer).
func BenchmarkContextMissing(b *testing.B) {
	c := simContext()
	o := c.Clone()
	for i := range 5 {
		r := hashReplica(fmt.Sprint("node ", i*13))
		o.Add(Dot{r, c.Max(r) + 1})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Missing(o)
	}
}
