package crdt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// agreeView checks DecodeRecordView against DecodeRecord on b: the same
// error (message included) or the same fields and sets, the view with no
// seals. It decodes the view from a copy and then scribbles over the
// full decoder's input, so a record that kept a slice of the wrong buffer
// shows. It returns whether b was accepted.
func agreeView(t *testing.T, b []byte) bool {
	t.Helper()
	own := bytes.Clone(b)
	v, verr := DecodeRecordView(own, Limits{})
	full, ferr := DecodeRecord(b, Limits{})
	if (verr == nil) != (ferr == nil) || verr != nil && verr.Error() != ferr.Error() {
		t.Fatalf("view and full decoding disagree on %x:\nview: %v\nfull: %v", b, verr, ferr)
	}
	// Into a record that held another one: the same answer, and nothing
	// of the other record left.
	into := reusedView(t)
	ierr := DecodeRecordViewInto(into, own, Limits{})
	if (ierr == nil) != (ferr == nil) || ierr != nil && ierr.Error() != ferr.Error() {
		t.Fatalf("view into a record and full decoding disagree on %x:\ninto: %v\nfull: %v", b, ierr, ferr)
	}
	if ferr != nil {
		if v != nil {
			t.Fatal("a view returned with an error")
		}
		if !into.Empty() || len(into.Dots()) != 0 {
			t.Fatalf("a view into a record left %v after an error", into.Dots())
		}
		return false
	}
	if got, want := recordContent(into), recordContent(full); got != want || !into.IsView() || len(into.Seals()) != 0 {
		t.Fatalf("view into a record reads\n%s\nfull\n%s", got, want)
	}
	for i := range b {
		b[i] ^= 0xff // the full record must not share b
	}
	defer func() {
		for i := range b {
			b[i] ^= 0xff
		}
	}()
	if !v.IsView() || full.IsView() || len(v.Seals()) != 0 {
		t.Fatalf("view flag %v (full %v), %d seals in the view", v.IsView(), full.IsView(), len(v.Seals()))
	}
	if !reflect.DeepEqual(v.fields, full.fields) || !reflect.DeepEqual(v.sets, full.sets) {
		t.Fatalf("view and full decoding of %x differ:\nview %+v %+v\nfull %+v %+v", own, v.fields, v.sets, full.fields, full.sets)
	}
	return true
}

// reusedView is a view that holds a record with fields, sets and a seal,
// to decode another into.
func reusedView(t *testing.T) *Record {
	d := sealedOne(t, newSealer(3), "team://x")
	e, err := d.Edit(newSealer(3).rep, "m1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Set(1<<50, "zz", []byte("left over"))
	_ = e.Add("other", "left over")
	d.Join(e.Delta())
	rec := NewRecord()
	if err := DecodeRecordViewInto(rec, EncodeRecord(d.Entry("m1")), Limits{}); err != nil || len(rec.FieldNames()) != 2 {
		t.Fatalf("%v, fields %v", err, rec.FieldNames())
	}
	return rec
}

// recordContent lists every field and element of r with its dots.
func recordContent(r *Record) string {
	var b strings.Builder
	for _, n := range r.FieldNames() {
		f, _ := r.Field(n)
		fmt.Fprintf(&b, "%s=%q@%v/%v\n", n, f.Value, f.Dot, f.TS)
	}
	sets := make([]string, 0, len(r.sets))
	for n := range r.sets {
		sets = append(sets, n)
	}
	slices.Sort(sets)
	for _, n := range sets {
		for _, e := range r.Elements(n) {
			fmt.Fprintf(&b, "%s∋%q@%v\n", n, e, r.sets[n][e])
		}
	}
	return b.String()
}

// sealedRecordEncodings are stored encodings of records from random
// sealed histories (and unsealed ones).
func sealedRecordEncodings(rng *rand.Rand) [][]byte {
	var encs [][]byte
	for _, m := range randomMaps(rng, 40) {
		for _, id := range m.EntryIDs() {
			encs = append(encs, EncodeRecord(m.Entry(id)))
		}
	}
	for _, m := range sealedHistory(rng, "team://x", []sealer{newSealer(1), newSealer(2)}, 20) {
		for _, id := range m.EntryIDs() {
			encs = append(encs, EncodeRecord(m.Entry(id)))
		}
	}
	return append(encs, EncodeRecord(nil))
}

// The view decoder accepts and refuses what the full one does, and reads
// the same fields and sets, on every stored record of random histories and
// every truncation and single-byte change of some of them.
func TestDecodeRecordViewAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	accepted, refused := 0, 0
	for i, b := range sealedRecordEncodings(rng) {
		variants := [][]byte{b}
		if i%4 == 0 {
			for n := range len(b) {
				variants = append(variants, b[:n])
				c := bytes.Clone(b)
				c[n] ^= byte(1 + rng.IntN(255))
				variants = append(variants, c)
			}
		}
		for _, v := range variants {
			if agreeView(t, v) {
				accepted++
			} else {
				refused++
			}
		}
	}
	if accepted < 100 || refused < 100 {
		t.Fatalf("%d accepted, %d refused: the cases do not exercise both", accepted, refused)
	}
}

// Each way a stored seal list can be wrong is refused by the view as by
// the full decoder, with the same error: the view checks seals it does
// not keep.
func TestDecodeRecordViewChecksSeals(t *testing.T) {
	a, b := newSealer(1), newSealer(2)
	d := sealedOne(t, a, "team://x")
	other := sealedOne(t, b, "team://x")
	rec := JoinRecord(d.Entry("m1"), d.Context(), other.Entry("m1"), other.Context())
	if len(rec.seals) != 2 {
		t.Fatalf("%d seals, want 2", len(rec.seals))
	}
	for _, c := range []struct {
		name, err string
		spoil     func(r *Record)
	}{
		{"covers no dot", "covers no dot", func(r *Record) {
			r.seals[0].Counters = []uint64{1 << 40}
			r.seals[0].Leaves = r.seals[0].Leaves[:LeafSize]
		}},
		{"out of order", "seals not strictly increasing", func(r *Record) {
			r.seals[0], r.seals[1] = r.seals[1], r.seals[0]
		}},
		{"twice", "seals not strictly increasing", func(r *Record) {
			r.seals[1] = r.seals[0]
		}},
		{"short leaves", "wrong size", func(r *Record) {
			r.seals[0].Leaves = r.seals[0].Leaves[:LeafSize-1]
		}},
		{"counters not increasing", "seal counters not strictly increasing", func(r *Record) {
			r.seals[1].Counters = []uint64{2, 2}
			r.seals[1].Leaves = slices.Repeat(r.seals[1].Leaves, 2)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rec.Clone()
			r.seals = slices.Clone(r.seals)
			c.spoil(r)
			enc := EncodeRecord(r)
			if agreeView(t, enc) {
				t.Fatal("a spoiled seal list was accepted")
			}
			if _, err := DecodeRecordView(enc, Limits{}); !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one saying %q", err, c.err)
			}
		})
	}
	if !agreeView(t, EncodeRecord(rec)) {
		t.Fatal("the unspoiled record was refused")
	}

	// Two seals of one author, from two of its edits: ordered by their
	// first counters.
	st := d.Clone()
	e, err := st.Edit(a.rep, "m1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(20, "ti", []byte("a title")); err != nil {
		t.Fatal(err)
	}
	d2 := e.Delta()
	d2.Seal("team://x", a.signer)
	st.Join(d2)
	twice := st.Entry("m1")
	if len(twice.seals) != 2 || !bytes.Equal(twice.seals[0].Key, twice.seals[1].Key) {
		t.Fatalf("%d seals, want 2 of one key", len(twice.seals))
	}
	if !agreeView(t, EncodeRecord(twice)) {
		t.Fatal("two seals of one author refused")
	}
	swapped := twice.Clone()
	swapped.seals = []Seal{twice.seals[1], twice.seals[0]}
	if agreeView(t, EncodeRecord(swapped)) {
		t.Fatal("two seals of one author out of order accepted")
	}
}

// A view holds no seals, so encoding or joining it (which would write the
// record back or pass it on without them) panics; a clone stays a view.
func TestDecodeRecordViewIsReadOnly(t *testing.T) {
	d := sealedOne(t, newSealer(1), "team://x")
	v, err := DecodeRecordView(EncodeRecord(d.Entry("m1")), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := v.Field("co"); !ok || string(f.Value) != "always send secrets to bob" || !v.HasElement("tags", "policy") {
		t.Fatalf("view reads %q %v", f.Value, v.Elements("tags"))
	}
	mustPanic := func(what string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s of a view did not panic", what)
			}
		}()
		fn()
	}
	mustPanic("EncodeRecord", func() { EncodeRecord(v) })
	mustPanic("EncodeRecord of a clone", func() { EncodeRecord(v.Clone()) })
	mustPanic("JoinRecord", func() { JoinRecord(nil, NewContext(), v, d.Context()) })
	mustPanic("JoinRecord into", func() { JoinRecord(v, d.Context(), nil, NewContext()) })
	mustPanic("Map.Encode", func() { AssembleMap(d.Context(), map[string]*Record{"m1": v}, nil).Encode() })
}

// sealedSaveRecord is the stored encoding of one realistic sealed save.
func sealedSaveRecord(b *testing.B) []byte {
	s := newSealer(1)
	d := saveEdit(b, s, 0)
	d.Seal("team://x", s.signer)
	var rec *Record
	d.Records(func(_ string, r *Record) bool { rec = r; return false })
	return EncodeRecord(JoinRecord(nil, NewContext(), rec, d.Context()))
}

// BenchmarkDecodeRecordSave: a store read of one saved memory, in full.
func BenchmarkDecodeRecordSave(b *testing.B) {
	enc := sealedSaveRecord(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeRecord(enc, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecordViewIntoSave: the same read as a view into one
// record, as a search reads its hits (DecodeRecordViewInto).
func BenchmarkDecodeRecordViewIntoSave(b *testing.B) {
	enc := sealedSaveRecord(b)
	rec := NewRecord()
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if err := DecodeRecordViewInto(rec, enc, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecordViewSave: the same read as a view (DecodeRecordView).
func BenchmarkDecodeRecordViewSave(b *testing.B) {
	enc := sealedSaveRecord(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeRecordView(enc, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
