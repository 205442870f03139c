package crdt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// randomMaps returns states and deltas from random edits on three replicas,
// for seed corpora and benchmarks of the codec.
func randomMaps(rng *rand.Rand, n int) []*Map {
	reps := []ReplicaID{randomReplica(rng), randomReplica(rng), 1}
	state := NewMap()
	clock := NewClock(time.Minute)
	out := []*Map{NewMap()}
	for i := range n {
		r := pick(rng, reps)
		id := fmt.Sprintf("01JD%022d", rng.IntN(6))
		var d *Map
		var err error
		switch rng.IntN(7) {
		case 0, 1:
			d, err = state.Set(r, clock.Now(t0.Add(time.Duration(i)*time.Millisecond)), id, pick(rng, []string{"title", "body"}), []byte(fmt.Sprint("v", rng.IntN(100))))
		case 2, 3:
			d, err = state.Add(r, id, "tags", pick(rng, []string{"auth", "db", "ui"}))
		case 4, 5:
			d, err = state.Remove(r, id, "tags", pick(rng, []string{"auth", "db", "ui"}))
		default:
			d = state.Retract(id)
		}
		if err == nil {
			out = append(out, d)
		}
		if rng.IntN(4) == 0 {
			out = append(out, state.Clone())
		}
	}
	return append(out, state)
}

func randomORSets(rng *rand.Rand, n int) []*ORSet {
	s := NewORSet()
	out := []*ORSet{NewORSet()}
	for range n {
		e := fmt.Sprint("e", rng.IntN(8))
		if rng.IntN(3) == 0 {
			out = append(out, s.Remove(e))
		} else {
			d, _ := s.Add(ReplicaID(1+rng.IntN(3))<<40, e)
			out = append(out, d)
		}
	}
	return append(out, s)
}

// addSeeds adds each encoding and a few truncations and bit flips of it.
func addSeeds(f *testing.F, encs [][]byte) {
	for i, b := range encs {
		f.Add(b)
		if len(b) > 1 && i%3 == 0 {
			f.Add(b[:len(b)/2])
			f.Add(b[:len(b)-1])
			flipped := bytes.Clone(b)
			flipped[len(b)/3] ^= 0x21
			f.Add(flipped)
		}
	}
}

// roundTrip checks the decoder contract on arbitrary bytes: no panic, errors
// match ErrCorrupt with a nil value, and an accepted input re-encodes to a
// fixed point.
func roundTrip[T any](t *testing.T, b []byte, decode func([]byte, Limits) (T, error), encode func(T) []byte, isNil func(T) bool) (T, bool) {
	v, err := decode(b, Limits{})
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not match ErrCorrupt", err)
		}
		if !isNil(v) {
			t.Fatal("a value returned with an error")
		}
		return v, false
	}
	e1 := encode(v)
	v2, err := decode(e1, Limits{})
	if err != nil {
		t.Fatalf("re-encoding of an accepted input does not decode: %v\n%x", err, e1)
	}
	if e2 := encode(v2); !bytes.Equal(e1, e2) {
		t.Fatalf("encode(decode(encode(decode(b)))) != encode(decode(b))\n%x\n%x", e2, e1)
	}
	return v, true
}

func FuzzDecodeMap(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	var encs [][]byte
	for _, m := range randomMaps(rng, 40) {
		encs = append(encs, m.Encode())
	}
	for _, m := range sealedHistory(rng, "team://x", []sealer{newSealer(1), newSealer(2)}, 20) {
		encs = append(encs, m.Encode())
	}
	addSeeds(f, encs)
	base := randomMaps(rng, 30)
	state := base[len(base)-1]
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := roundTrip(t, b, DecodeMap, (*Map).Encode, func(m *Map) bool { return m == nil })
		if !ok {
			return
		}
		// Whatever a peer sends that decodes can be joined without a panic.
		s := state.Clone()
		s.Join(m)
		_ = s.Digest()
		_ = m.MaxTimestamp()
		_ = m.VerifySeals("team://x", nil)
	})
}

func FuzzDecodeRecord(f *testing.F) {
	addSeeds(f, sealedRecordEncodings(rand.New(rand.NewPCG(3, 4))))
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, DecodeRecord, EncodeRecord, func(r *Record) bool { return r == nil })
		agreeView(t, b) // the read-only decoder agrees on every input
	})
}

func FuzzDecodeContext(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	var encs [][]byte
	for _, m := range randomMaps(rng, 40) {
		encs = append(encs, m.Context().Encode())
	}
	addSeeds(f, encs)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, DecodeContext, (*Context).Encode, func(c *Context) bool { return c == nil })
	})
}

func FuzzDecodeORSet(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	var encs [][]byte
	for _, s := range randomORSets(rng, 40) {
		encs = append(encs, s.Encode())
	}
	addSeeds(f, encs)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := roundTrip(t, b, DecodeORSet, (*ORSet).Encode, func(s *ORSet) bool { return s == nil })
		if ok {
			NewORSet().Join(s)
		}
	})
}

func FuzzDecodeGSet(f *testing.F) {
	var encs [][]byte
	s := NewGSet()
	for i := range 10 {
		encs = append(encs, s.Add(fmt.Sprint("audit-", i)).Encode(), s.Encode())
	}
	addSeeds(f, encs)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, DecodeGSet, (*GSet).Encode, func(s *GSet) bool { return s == nil })
	})
}
