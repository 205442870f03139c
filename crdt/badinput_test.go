package crdt

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func sampleState(t *testing.T) (*Map, ReplicaID, *Clock) {
	t.Helper()
	const r = ReplicaID(0xa1b2c3d4e5f60718)
	m, c := NewMap(), NewClock(time.Minute)
	if _, err := m.Set(r, c.Now(t0), "m1", "title", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(r, "m1", "tags", "auth"); err != nil {
		t.Fatal(err)
	}
	return m, r, c
}

func TestMalformedDeltaChangesNothing(t *testing.T) {
	state, r, c := sampleState(t)
	src := state.Clone()
	d, err := src.Set(r, c.Now(t0), "m2", "title", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	good := d.Encode()
	before := state.Digest()
	bad := map[string][]byte{
		"empty":              nil,
		"truncated":          good[:len(good)-3],
		"trailing byte":      append(bytes.Clone(good), 0xc0),
		"not an array":       {0xc0},
		"wrong version":      append([]byte{0x96, 0x02}, good[2:]...),
		"seven parts":        append([]byte{0x97}, good[1:]...),
		"zero replica":       {0x96, 0x01, 0x91, 0x00, 0x00, 0x90, 0x90, 0x90},
		"huge array":         {0x96, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff},
		"partial interval":   {0x96, 0x01, 0x91, 0x05, 0x00, 0x92, 0x00, 0x01, 0x90, 0x90},
		"index out of range": {0x96, 0x01, 0x91, 0x05, 0x00, 0x93, 0x03, 0x01, 0x00, 0x90, 0x90},
		"zero counter":       {0x96, 0x01, 0x91, 0x05, 0x00, 0x93, 0x00, 0x00, 0x00, 0x90, 0x90},
		"touching intervals": {0x96, 0x01, 0x91, 0x05, 0x00, 0x96, 0x00, 0x01, 0x00, 0x00, 0x02, 0x00, 0x90, 0x90},
		"retracted with record": {0x96, 0x01, 0x90, 0x00, 0x90,
			0x92, 0xa1, 'x', 0x92, 0x90, 0x90, 0x91, 0xa1, 'x'},
		"ids out of order": {0x96, 0x01, 0x90, 0x00, 0x90,
			0x94, 0xa1, 'y', 0x92, 0x90, 0x90, 0xa1, 'x', 0x92, 0x90, 0x90, 0x90},
	}
	for name, b := range bad {
		got, err := DecodeMap(b, Limits{})
		if !errors.Is(err, ErrCorrupt) || got != nil {
			t.Errorf("%s: DecodeMap = %v, %v; want nil, ErrCorrupt", name, got, err)
		}
	}
	if state.Digest() != before {
		t.Fatal("state changed")
	}
	// The well-formed original still applies.
	if m, err := DecodeMap(good, Limits{}); err != nil {
		t.Fatal(err)
	} else {
		state.Join(m)
	}
	if state.Digest() != src.Digest() {
		t.Fatal("decoded delta applies differently from the original")
	}
}

func TestOversizedField(t *testing.T) {
	state, r, c := sampleState(t)
	before := state.Digest()
	lim := Limits{MaxValue: 1024}
	e, err := state.Edit(r, "m1", lim)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(c.Now(t0), "body", make([]byte, 1025)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Edit.Set over MaxValue: %v", err)
	}
	if err := e.Set(c.Now(t0), "body", make([]byte, 1024)); err != nil {
		t.Fatalf("Edit.Set at MaxValue: %v", err)
	}
	if _, err := state.Set(r, c.Now(t0), "m1", "body", make([]byte, DefaultLimits().MaxValue+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Map.Set over the default limit: %v", err)
	}
	if state.Digest() != before {
		t.Fatal("a refused write changed the state")
	}

	// A decoder configured with smaller limits refuses what it is sent.
	big := state.Clone()
	if _, err := big.Set(r, c.Now(t0), "m1", "body", make([]byte, 2000)); err != nil {
		t.Fatal(err)
	}
	enc := big.Encode()
	for name, l := range map[string]Limits{
		"MaxValue":    {MaxValue: 1999},
		"MaxBytes":    {MaxBytes: len(enc) - 1},
		"MaxString":   {MaxString: 1},
		"MaxName":     {MaxName: 3},
		"MaxRecords":  {MaxRecords: 0 + 1, MaxString: 512},
		"MaxDots":     {MaxDots: 1},
		"MaxReplicas": {MaxReplicas: 0 + 1},
	} {
		if name == "MaxRecords" || name == "MaxReplicas" {
			continue // one record and one replica fit; checked below
		}
		if _, err := DecodeMap(enc, l); !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: DecodeMap = %v; want ErrCorrupt and ErrTooLarge", name, err)
		}
	}
	if _, err := DecodeRecord(EncodeRecord(big.Entry("m1")), Limits{MaxValue: 1999}); !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrTooLarge) {
		t.Errorf("DecodeRecord over MaxValue: %v", err)
	}
	two := big.Clone()
	if _, err := two.Add(r+1, "m2", "tags", "x"); err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]Limits{"MaxRecords": {MaxRecords: 1}, "MaxReplicas": {MaxReplicas: 1}} {
		if _, err := DecodeMap(two.Encode(), l); !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: DecodeMap = %v; want ErrCorrupt and ErrTooLarge", name, err)
		}
	}
}

func TestRemoteTimestampBeyondSkew(t *testing.T) {
	state, _, clock := sampleState(t)
	farClock := NewClock(time.Minute)
	far := NewMap()
	d, err := far.Set(7, farClock.Now(t0.Add(2*time.Minute)), "m1", "title", []byte("future"))
	if err != nil {
		t.Fatal(err)
	}
	before, last := state.Digest(), clock.Last()
	// The node's receive path: check the largest timestamp, then apply.
	_, err = clock.Observe(d.MaxTimestamp(), t0)
	if !errors.Is(err, ErrClockSkew) {
		t.Fatalf("Observe = %v", err)
	}
	if state.Digest() != before || clock.Last() != last {
		t.Fatal("a rejected delta changed the state or the clock")
	}
}

func TestStaleAndInvalidWrites(t *testing.T) {
	state, r, c := sampleState(t)
	before := state.Digest()
	f, _ := state.Entry("m1").Field("title")
	if _, err := state.Set(r, f.TS, "m1", "title", []byte("same ts")); !errors.Is(err, ErrStaleTimestamp) {
		t.Fatalf("write at the current timestamp: %v", err)
	}
	e, _ := state.Edit(r, "m1", Limits{})
	ts := c.Now(t0)
	if err := e.Set(ts, "body", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := e.Set(ts, "body", []byte("2")); !errors.Is(err, ErrStaleTimestamp) {
		t.Fatalf("same field twice in one edit: %v", err)
	}
	for name, err := range map[string]error{
		"zero replica": func() error { _, err := state.Set(0, c.Now(t0), "m1", "x", nil); return err }(),
		"empty id":     func() error { _, err := state.Set(r, c.Now(t0), "", "x", nil); return err }(),
		"long id":      func() error { _, err := state.Add(r, strings.Repeat("i", 513), "tags", "x"); return err }(),
		"empty field":  func() error { _, err := state.Set(r, c.Now(t0), "m1", "", nil); return err }(),
		"long field":   func() error { _, err := state.Set(r, c.Now(t0), "m1", strings.Repeat("f", 65), nil); return err }(),
		"empty elem":   func() error { _, err := state.Add(r, "m1", "tags", ""); return err }(),
		"orset zero":   func() error { _, err := NewORSet().Add(0, "x"); return err }(),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if state.Digest() != before {
		t.Fatal("refused writes changed the state")
	}
}

// TestMutatorOutputDecodes: a state any mutator accepted must load again;
// a node persists what it applied.
func TestMutatorOutputDecodes(t *testing.T) {
	s := NewORSet()
	for _, e := range []string{"", strings.Repeat("e", DefaultLimits().MaxString+1)} {
		if _, err := s.Add(1, e); !errors.Is(err, ErrInvalid) {
			t.Errorf("ORSet.Add of a %d-byte element: %v, want ErrInvalid", len(e), err)
		}
	}
	if _, err := s.Add(1, strings.Repeat("e", DefaultLimits().MaxString)); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeORSet(s.Encode(), Limits{}); err != nil {
		t.Errorf("ORSet does not decode: %v", err)
	}
	g := NewGSet()
	g.Add("")
	if _, err := DecodeGSet(g.Encode(), Limits{}); err != nil {
		t.Errorf("GSet with an empty element does not decode: %v", err)
	}
	m := NewMap()
	m.Retract("")
	if _, err := DecodeMap(m.Encode(), Limits{}); err != nil {
		t.Errorf("Map with an empty retracted id does not decode: %v", err)
	}
}
