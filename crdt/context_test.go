package crdt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestContextGapsFillAndCompact(t *testing.T) {
	const r, q = ReplicaID(7), ReplicaID(9)
	c := NewContext()
	for _, n := range []uint64{3, 5, 4, 2} {
		c.Add(Dot{r, n})
	}
	c.Add(Dot{q, 1})
	if v, cl := c.Size(); v != 1 || cl != 4 {
		t.Fatalf("before the gap fills: %d vector entries, %d cloud dots", v, cl)
	}
	if c.Contains(Dot{r, 1}) || !c.Contains(Dot{r, 4}) || c.Max(r) != 5 {
		t.Fatal("Contains or Max wrong with a gap")
	}
	c.Add(Dot{r, 1})
	if v, cl := c.Size(); v != 2 || cl != 0 {
		t.Fatalf("after the gap filled: %d vector entries, %d cloud dots; want 2, 0", v, cl)
	}
	if got := c.Vector(); got[r] != 5 || got[q] != 1 {
		t.Fatalf("vector %v", got)
	}

	// Join fills gaps too: the other side's vector covers this cloud.
	a, b := NewContext(), NewContext()
	a.Add(Dot{r, 4})
	a.Add(Dot{r, 6})
	for n := range uint64(3) {
		b.Add(Dot{r, n + 1})
	}
	a.Join(b)
	if v, cl := a.Size(); v != 1 || cl != 1 || a.Vector()[r] != 4 || !a.Contains(Dot{r, 6}) {
		t.Fatalf("after join: vector %v, %d cloud dots", a.Vector(), cl)
	}
	if !a.CoversVector(map[ReplicaID]uint64{r: 4}) || a.CoversVector(map[ReplicaID]uint64{r: 5}) {
		t.Fatal("CoversVector")
	}
}

func TestContextMissing(t *testing.T) {
	const r, q = ReplicaID(1), ReplicaID(2)
	have, other := NewContext(), NewContext()
	for n := range uint64(3) {
		have.Add(Dot{r, n + 1})
	}
	for n := range uint64(6) {
		other.Add(Dot{r, n + 1})
	}
	other.Add(Dot{q, 4})
	have.Add(Dot{q, 9})
	got := have.Missing(other)
	want := []DotRange{{r, 4, 6}, {q, 4, 4}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Missing = %v, want %v", got, want)
	}
	if len(other.Missing(other)) != 0 {
		t.Fatal("a context misses nothing of itself")
	}
}

// TestContextRandom compares Context with a plain set of dots: Contains,
// Join, Missing, Equal, the normal form and the codec.
func TestContextRandom(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		reps := []ReplicaID{1, randomReplica(rng), randomReplica(rng)}
		build := func() (*Context, map[Dot]bool) {
			c, ref := NewContext(), map[Dot]bool{}
			for range rng.IntN(40) {
				d := Dot{pick(rng, reps), 1 + uint64(rng.IntN(25))}
				c.Add(d)
				ref[d] = true
			}
			return c, ref
		}
		agree := func(what string, c *Context, ref map[Dot]bool) {
			t.Helper()
			if err := checkContext(c); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, r := range reps {
				var maxN uint64
				for n := uint64(1); n <= 26; n++ {
					d := Dot{r, n}
					if c.Contains(d) != ref[d] {
						t.Fatalf("%s: Contains(%v) = %v", what, d, !ref[d])
					}
					if ref[d] {
						maxN = n
					}
				}
				if c.Max(r) != maxN {
					t.Fatalf("%s: Max(%v) = %d, want %d", what, r, c.Max(r), maxN)
				}
			}
		}
		a, ra := build()
		b, rb := build()
		agree("a", a, ra)

		// Joining a part of a, with or without one more dot, agrees with
		// the reference; a join that adds nothing leaves the spans a clone
		// shares with a shared (copies nothing).
		part, rp := NewContext(), map[Dot]bool{}
		for d := range ra {
			if rng.IntN(2) == 0 {
				part.Add(d)
				rp[d] = true
			}
		}
		if rng.IntN(2) == 0 {
			d := Dot{pick(rng, reps), 1 + uint64(rng.IntN(26))}
			part.Add(d)
			rp[d] = true
		}
		ap, rap, covered := a.Clone(), map[Dot]bool{}, true
		for d := range ra {
			rap[d] = true
		}
		for d := range rp {
			covered = covered && ra[d]
			rap[d] = true
		}
		ap.Join(part)
		agree("a ⊔ part of a", ap, rap)
		if covered && !a.IsEmpty() && !ap.shared.Load() {
			t.Fatal("joining dots a holds copied its spans")
		}

		back, err := DecodeContext(a.Encode(), Limits{})
		if err != nil || !back.Equal(a) || !a.Equal(back) {
			t.Fatalf("codec: %v", err)
		}

		// Every dot b has and a lacks lies in a range Missing returns, and
		// every range lies within b and outside a.
		miss := a.Missing(b)
		for d := range rb {
			in := false
			for _, m := range miss {
				in = in || m.Contains(d)
			}
			if !ra[d] && !in {
				t.Fatalf("Missing %v omits %v", miss, d)
			}
		}
		for _, m := range miss {
			for n := m.From; n <= m.To; n++ {
				if !rb[Dot{m.Replica, n}] {
					t.Fatalf("Missing range %v holds %d, which b lacks", m, n)
				}
				if ra[Dot{m.Replica, n}] {
					t.Fatalf("Missing range %v holds %d, which a has", m, n)
				}
			}
		}

		ab := a.Clone()
		ab.Join(b)
		ba := b.Clone()
		ba.Join(a)
		for d := range rb {
			ra[d] = true
		}
		agree("a ⊔ b", ab, ra)
		if !ab.Equal(ba) || string(ab.Encode()) != string(ba.Encode()) {
			t.Fatal("context join not commutative")
		}
		if len(ab.Missing(a)) != 0 {
			t.Fatalf("a ⊔ b misses %v of a", ab.Missing(a))
		}
	})
}

func TestContextDecodeRejects(t *testing.T) {
	c := NewContext()
	c.Add(Dot{5, 1})
	c.Add(Dot{5, 3})
	good := c.Encode()
	for _, b := range [][]byte{nil, good[:len(good)-1], append(good[:len(good):len(good)], 0)} {
		if _, err := DecodeContext(b, Limits{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeContext(%x) = %v", b, err)
		}
	}
}

// TestContextEncodeAsWriter: Context.Encode, which appends the bytes
// itself, writes exactly what the writer (replica table, then the
// context's intervals) writes, for random contexts whose replica ids,
// counters and interval counts cross every msgpack integer and array size.
func TestContextEncodeAsWriter(t *testing.T) {
	viaWriter := func(c *Context) []byte {
		w := newWriter()
		reps := make(map[ReplicaID]struct{})
		c.replicas(reps)
		w.array(3)
		w.uint(encodingVersion)
		w.replicaTable(reps)
		w.context(c, nil)
		return w.bytes()
	}
	sizes := []uint64{1, 1 << 7, 1 << 8, 1 << 16, 1 << 32, 1 << 62}
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		c := NewContext()
		reps := []ReplicaID{ReplicaID(1 + rng.IntN(100)), ReplicaID(1 + rng.IntN(300)), randomReplica(rng)}
		for range rng.IntN(20) {
			reps = append(reps, randomReplica(rng))
		}
		for range rng.IntN(200) {
			top := sizes[rng.IntN(len(sizes))]
			c.Add(Dot{pick(rng, reps), 1 + rng.Uint64N(top)})
		}
		got, want := c.Encode(), viaWriter(c)
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode = %x, the writer's %x", got, want)
		}
		back, err := DecodeContext(got, DefaultLimits())
		if err != nil || !back.Equal(c) {
			t.Fatalf("decode: %v, equal %v", err, err == nil && back.Equal(c))
		}
	})
	big := NewContext() // 3 × 22,000 intervals: a 32-bit array length
	for i := range uint64(22_000) {
		big.Add(Dot{5, 2*i + 1})
	}
	if !bytes.Equal(big.Encode(), viaWriter(big)) {
		t.Fatal("Encode of 22,000 intervals differs from the writer's")
	}
}

// TestContextCloneIndependent: adding dots to a clone (merging intervals
// in place, splitting them, growing a replica's list) changes nothing in
// the original, nor the other way round, and every other clone stays as
// it was made.
func TestContextCloneIndependent(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		reps := []ReplicaID{1, 2, randomReplica(rng), randomReplica(rng)}
		c := NewContext()
		for range rng.IntN(60) {
			c.Add(Dot{pick(rng, reps), 1 + uint64(rng.IntN(40))})
		}
		want := c.Encode()
		a, b := c.Clone(), c.Clone()
		for range 1 + rng.IntN(40) {
			a.Add(Dot{pick(rng, reps), 1 + uint64(rng.IntN(45))})
		}
		if !bytes.Equal(c.Encode(), want) || !bytes.Equal(b.Encode(), want) {
			t.Fatal("adding to a clone changed the original or another clone")
		}
		wantA := a.Encode()
		for range 1 + rng.IntN(40) {
			c.Add(Dot{pick(rng, reps), 1 + uint64(rng.IntN(45))})
		}
		if !bytes.Equal(a.Encode(), wantA) || !bytes.Equal(b.Encode(), want) {
			t.Fatal("adding to the original changed a clone")
		}
		if err := checkContext(a); err != nil {
			t.Fatal(err)
		}
		// A clone of a clone, and Join as the change.
		bb := b.Clone()
		b.Join(a)
		if !bytes.Equal(bb.Encode(), want) || !bytes.Equal(a.Encode(), wantA) {
			t.Fatal("joining into a clone changed the clone made of it, or the context joined")
		}
		wantB := b.Encode()
		bb.Join(c)
		if !bytes.Equal(b.Encode(), wantB) {
			t.Fatal("joining into a clone of a clone changed the clone it was made of")
		}
	})
}
