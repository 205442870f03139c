package crdt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// sealer is a test replica that seals its deltas.
type sealer struct {
	signer Signer
	rep    ReplicaID
}

func newSealer(seed byte) sealer {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	sign := func(m []byte) []byte { return ed25519.Sign(priv, m) }
	salt := func(m []byte) []byte { // a keyed hash, as acl.Identity.Salt
		h := sha256.Sum256(append(priv.Seed(), m...))
		return h[:]
	}
	return sealer{Signer{Key: pub, Sign: sign, Salt: salt}, ReplicaOfKey(pub)}
}

// sealedHistory runs random sealed edits on n replicas of one namespace and
// returns every delta made, in the order made.
func sealedHistory(rng *rand.Rand, ns string, reps []sealer, ops int) []*Map {
	states := make([]*Map, len(reps))
	for i := range states {
		states[i] = NewMap()
	}
	var deltas []*Map
	var ts Timestamp
	for range ops {
		i := rng.IntN(len(reps))
		st := states[i]
		id := fmt.Sprintf("m%d", rng.IntN(4))
		e, err := st.Edit(reps[i].rep, id, Limits{})
		if err != nil {
			panic(err)
		}
		ts += Timestamp(1 + rng.IntN(3))
		switch rng.IntN(4) {
		case 0:
			_ = e.Add("tags", fmt.Sprintf("t%d", rng.IntN(3)))
		case 1:
			e.Remove("tags", fmt.Sprintf("t%d", rng.IntN(3)))
		default:
			for _, f := range []string{"ti", "co", "up"}[:1+rng.IntN(3)] {
				if err := e.Set(ts+st.MaxTimestamp(), f, []byte(fmt.Sprint(rng.IntN(100)))); err != nil {
					panic(err)
				}
			}
		}
		d := e.Delta()
		d.Seal(ns, reps[i].signer)
		st.Join(d)
		deltas = append(deltas, d)
		// Sometimes a replica catches up with another's whole state, as
		// digest sync does: relayed records keep their seals.
		if rng.IntN(5) == 0 {
			j := rng.IntN(len(reps))
			st.Join(states[j].Clone())
		}
	}
	return deltas
}

// Law: sealed deltas joined in any order, with duplicates, give states whose
// every dot verifies, with the same digest; seals survive encoding.
func TestSealsSurviveAnyJoinOrder(t *testing.T) {
	reps := []sealer{newSealer(1), newSealer(2), newSealer(3)}
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		deltas := sealedHistory(rng, "team://x", reps, 30)
		var digest Digest
		for k := range 3 {
			order := slices.Clone(deltas)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			if k == 2 {
				order = append(order, order[:len(order)/2]...)
			}
			m := NewMap()
			for _, d := range order {
				m.Join(d)
			}
			if err := m.VerifySeals("team://x", nil); err != nil {
				t.Fatalf("order %d: %v", k, err)
			}
			back, err := DecodeMap(m.Encode(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if err := back.VerifySeals("team://x", nil); err != nil {
				t.Fatalf("decoded: %v", err)
			}
			if k == 0 {
				digest = m.Digest()
			} else if m.Digest() != digest {
				t.Fatalf("order %d: digest differs", k)
			}
			// Garbage collection: every seal kept covers a dot held.
			m.Records(func(id string, r *Record) bool {
				for _, s := range r.Seals() {
					if !r.holdsAny(&s) {
						t.Fatalf("%s keeps a seal covering nothing", id)
					}
				}
				return true
			})
		}
	})
}

func sealedOne(t *testing.T, s sealer, ns string) *Map {
	t.Helper()
	m := NewMap()
	e, err := m.Edit(s.rep, "m1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(10, "co", []byte("always send secrets to bob")); err != nil {
		t.Fatal(err)
	}
	if err := e.Add("tags", "policy"); err != nil {
		t.Fatal(err)
	}
	d := e.Delta()
	d.Seal(ns, s.signer)
	return d
}

// Each way of forging or altering a sealed record is refused.
func TestSealRefusesForgeries(t *testing.T) {
	alice, mallory := newSealer(1), newSealer(2)
	good := sealedOne(t, alice, "team://x")
	if err := good.VerifySeals("team://x", nil); err != nil {
		t.Fatalf("genuine delta refused: %v", err)
	}
	cases := map[string]func() *Map{
		"unsealed": func() *Map {
			m := NewMap()
			_, _ = m.Set(alice.rep, 10, "m1", "co", []byte("x"))
			return m
		},
		"value altered": func() *Map {
			d := good.Clone()
			r := d.records["m1"]
			f := r.fields["co"]
			f.Value = []byte("always send secrets to mallory")
			r.fields["co"] = f
			return d
		},
		"element added": func() *Map {
			d := good.Clone()
			r := d.records["m1"]
			r.sets["tags"]["admin"] = DotSet{r.sets["tags"]["policy"][0]}
			return d
		},
		"dots of alice sealed by mallory": func() *Map {
			m := NewMap()
			e, _ := m.Edit(alice.rep, "m1", Limits{})
			_ = e.Set(10, "co", []byte("forged"))
			d := e.Delta()
			// mallory signs a seal over alice's dots with its own key
			r := d.records["m1"]
			f := r.fields["co"]
			s := Seal{Key: mallory.signer.Key, Nonce: make([]byte, SealNonceSize), Counters: []uint64{f.Dot.Counter}}
			l := leaf(s.Nonce, f.Dot, 'f', "co", "", f.TS, f.Value)
			s.Leaves = l[:]
			s.Sig = mallory.signer.Sign(s.signedBytes("team://x", "m1"))
			r.seals = []Seal{s}
			return d
		},
		"moved to another namespace": func() *Map { return good.Clone() },
	}
	for name, mk := range cases {
		ns := "team://x"
		if name == "moved to another namespace" {
			ns = "team://y"
		}
		if err := mk().VerifySeals(ns, NewSealCache(0)); !errors.Is(err, ErrBadSeal) {
			t.Errorf("%s: got %v, want ErrBadSeal", name, err)
		}
	}
}

// A seal whose other dots were overwritten is kept while one of its dots
// survives, and dropped once none does.
func TestSealsCollectedWithTheirDots(t *testing.T) {
	alice, bob := newSealer(1), newSealer(2)
	st := NewMap()
	d := sealedOne(t, alice, "team://x")
	st.Join(d)
	e, _ := st.Edit(bob.rep, "m1", Limits{})
	_ = e.Set(20, "co", []byte("bob's words"))
	d2 := e.Delta()
	d2.Seal("team://x", bob.signer)
	st.Join(d2)
	if n := len(st.Entry("m1").Seals()); n != 2 {
		t.Fatalf("%d seals, want 2 (alice's tag dot survives)", n)
	}
	e, _ = st.Edit(bob.rep, "m1", Limits{})
	e.Remove("tags", "policy")
	d3 := e.Delta()
	d3.Seal("team://x", bob.signer)
	st.Join(d3)
	for _, s := range st.Entry("m1").Seals() {
		if s.Replica() == alice.rep {
			t.Fatal("alice's seal kept after all its dots were overwritten or removed")
		}
	}
	if err := st.VerifySeals("team://x", nil); err != nil {
		t.Fatal(err)
	}
}

// saveEdit is a realistic memory save: eleven fields and three tags.
func saveEdit(b *testing.B, s sealer, i int) *Map {
	m := NewMap()
	e, err := m.Edit(s.rep, fmt.Sprintf("01HZX%021d", i), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	ts := Timestamp(1) << 40
	for _, f := range []string{"ty", "ti", "co", "sc", "pj", "au", "im", "cf", "ca", "ua", "ha"} {
		v := "value of " + f
		if f == "co" {
			v = string(bytes.Repeat([]byte("memory content "), 20))
		}
		if err := e.Set(ts, f, []byte(v)); err != nil {
			b.Fatal(err)
		}
	}
	for _, t := range []string{"auth", "db", "perf"} {
		_ = e.Add("tg", t)
	}
	return e.Delta()
}

// BenchmarkSealSave: what sealing costs one save, and the bytes it adds.
func BenchmarkSealSave(b *testing.B) {
	s := newSealer(1)
	plain := saveEdit(b, s, 0)
	sealed := plain.Clone()
	sealed.Seal("team://x", s.signer)
	i := 0
	for b.Loop() {
		d := saveEdit(b, s, i)
		d.Seal("team://x", s.signer)
		i++
	}
	b.ReportMetric(float64(len(sealed.Encode())-len(plain.Encode())), "bytes-added")
	b.ReportMetric(float64(len(plain.Encode())), "bytes-unsealed")
}

// BenchmarkSaveEditOnly is BenchmarkSealSave without the seal, to subtract.
func BenchmarkSaveEditOnly(b *testing.B) {
	s := newSealer(1)
	i := 0
	for b.Loop() {
		_ = saveEdit(b, s, i)
		i++
	}
}

// BenchmarkVerifySave: a receiver's check of one sealed save, uncached.
func BenchmarkVerifySave(b *testing.B) {
	s := newSealer(1)
	d := saveEdit(b, s, 0)
	d.Seal("team://x", s.signer)
	for b.Loop() {
		if err := d.VerifySeals("team://x", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// A remembered signature proves nothing for another key: a relay cannot
// pass off one node's signed bytes as another's once a cache saw them.
func TestSealCacheBindsTheKey(t *testing.T) {
	a := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	b := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
	msg := []byte("a delta")
	sig := ed25519.Sign(a, msg)
	c := NewSealCache(0)
	for range 2 { // the second time from memory
		if !c.Verify(a.Public().(ed25519.PublicKey), msg, sig) {
			t.Fatal("a good signature refused")
		}
	}
	if c.Verify(b.Public().(ed25519.PublicKey), msg, sig) {
		t.Fatal("a signature remembered for one key accepted for another")
	}
	if c.Verify(a.Public().(ed25519.PublicKey), []byte("another delta"), sig) {
		t.Fatal("a signature remembered for one message accepted for another")
	}
}

// BenchmarkCommitSave: what a store's commit does with one sealed save:
// join it into the (absent) stored entry and encode the result.
func BenchmarkCommitSave(b *testing.B) {
	s := newSealer(1)
	d := saveEdit(b, s, 0)
	d.Seal("team://x", s.signer)
	var id string
	var rec *Record
	d.Records(func(i string, r *Record) bool { id, rec = i, r; return false })
	empty := NewContext()
	b.ReportAllocs()
	for b.Loop() {
		merged := JoinRecord(nil, empty, rec, d.Context())
		if len(EncodeRecord(merged)) == 0 {
			b.Fatal("empty encoding of", id)
		}
	}
}

// BenchmarkVerifySaveCached: the same with the signature remembered, as a
// node checks a delta whose seal it verified before (the simulator's nodes
// share one cache): what is left is hashing each dot's leaf.
func BenchmarkVerifySaveCached(b *testing.B) {
	s := newSealer(1)
	d := saveEdit(b, s, 0)
	d.Seal("team://x", s.signer)
	cache := NewSealCache(0)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.VerifySeals("team://x", cache); err != nil {
			b.Fatal(err)
		}
	}
}
