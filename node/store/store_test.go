package store

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
)

func ts(n int) crdt.Timestamp {
	return crdt.MakeTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()+int64(n), 0)
}

// edit writes fields of one record through a Tx.
func edit(t *testing.T, s *Store, ns, id string, at int, kv ...string) []Change {
	t.Helper()
	ch, err := s.Update(7, func(tx *Tx) error {
		e, err := tx.Edit(ns, id)
		if err != nil {
			return err
		}
		for i := 0; i < len(kv); i += 2 {
			if err := e.Set(ts(at), kv[i], []byte(kv[i+1])); err != nil {
				return err
			}
		}
		tx.Commit(ns, id, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestUpdateIsAllOrNothing(t *testing.T) {
	s, err := Open(NewMemKV(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("boom")
	_, err = s.Update(7, func(tx *Tx) error {
		e, _ := tx.Edit("team://a", "m1")
		_ = e.Set(ts(1), "ti", []byte("x"))
		tx.Commit("team://a", "m1", e)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if rec, _ := s.Record("team://a", "m1"); rec != nil {
		t.Fatal("a failed Update wrote")
	}
	if len(s.Namespaces()) != 0 {
		t.Fatal("a failed Update created a namespace")
	}
}

func TestRetractIsFinal(t *testing.T) {
	s, err := Open(NewMemKV(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	edit(t, s, "team://a", "m1", 1, "ti", "x")
	stale, _ := s.Record("team://a", "m1")
	if _, err := s.Update(7, func(tx *Tx) error { return tx.Retract("team://a", "m1") }); err != nil {
		t.Fatal(err)
	}
	// a late delta for the retracted id (as from a peer) is absorbed, not applied
	e, _ := crdt.NewEdit(crdt.NewContext(), stale, 9, "m1", crdt.DefaultLimits())
	_ = e.Set(ts(5), "ti", []byte("resurrected"))
	if _, err := s.Apply(map[string]*crdt.Map{"team://a": e.Delta()}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Record("team://a", "m1"); rec != nil {
		t.Fatal("retracted record came back")
	}
	if ids, _ := s.RetractedIDs("team://a"); len(ids) != 1 {
		t.Fatalf("retracted ids %v", ids)
	}
	if _, err := s.Update(7, func(tx *Tx) error { _, err := tx.Edit("team://a", "m1"); return err }); !errors.Is(err, crdt.ErrRetracted) {
		t.Fatalf("edit of a retracted id: %v", err)
	}
}

func TestMissingSendsOnlyWhatThePeerLacks(t *testing.T) {
	s, err := Open(NewMemKV(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, id := range []string{"a", "b", "c"} {
		edit(t, s, "team://x", id, i+1, "ti", id)
	}
	have := s.Context("team://x")
	edit(t, s, "team://x", "b", 10, "ti", "b2")
	var got []string
	if _, err := s.Missing("team://x", have, "", func(id string, _ *crdt.Record) error { got = append(got, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "b" {
		t.Fatalf("missing %v, want [b]", got)
	}
}

func TestOpenNeedsAKV(t *testing.T) {
	if s, err := Open(nil, Options{}); err == nil {
		s.Close()
		t.Fatal("Open without a KV succeeded")
	}
}

// Equal fingerprints mean equal states: a replica given the same state
// fingerprints the same (whatever else it holds, even a namespace whose
// name extends this one's), and a write, a retract or a context that
// differs changes the fingerprint.
func TestFingerprintFollowsTheState(t *testing.T) {
	open := func() *Store {
		s, err := Open(NewMemKV(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	fp := func(s *Store, ns string) [32]byte {
		t.Helper()
		f, err := s.Fingerprint(ns)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := open(), open()
	edit(t, a, "team://x", "m1", 1, "ti", "one")
	edit(t, a, "team://x", "m2", 2, "ti", "two")
	copyTo := func(dst *Store, ns string) {
		st, err := a.State(ns)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Apply(map[string]*crdt.Map{ns: st}); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(b, "team://x")
	edit(t, b, "team://x0", "m9", 3, "ti", "elsewhere")
	if fp(a, "team://x") != fp(b, "team://x") {
		t.Fatal("two stores with one state of team://x fingerprint it differently")
	}
	if fp(a, "team://x") == fp(a, "team://none") {
		t.Fatal("a namespace fingerprints as an unknown one")
	}
	same := fp(a, "team://x")
	edit(t, a, "team://x", "m2", 4, "ti", "two, amended")
	if fp(a, "team://x") == same {
		t.Fatal("a write left the fingerprint unchanged")
	}
	copyTo(b, "team://x")
	if _, err := a.Update(7, func(tx *Tx) error { return tx.Retract("team://x", "m1") }); err != nil {
		t.Fatal(err)
	}
	if fp(a, "team://x") == fp(b, "team://x") {
		t.Fatal("a retract left the fingerprint unchanged")
	}
}

// afterCommitKV calls after once each transaction is committed, before the
// store has taken it in (its contexts in memory, its snapshot).
type afterCommitKV struct {
	KV
	after func()
}

func (k *afterCommitKV) Update(fn func(w Writer) error) error {
	err := k.KV.Update(fn)
	if err == nil && k.after != nil {
		k.after()
	}
	return err
}

// State taken while a write commits is the state before or after it:
// every dot a record of it holds is in its context. (It read the records
// from the KV and the context from memory, which the store updates after
// the commit: a status digest taken then was of neither state.)
func TestStateIsOneView(t *testing.T) {
	kv := &afterCommitKV{KV: NewMemKV()}
	s, err := Open(kv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checked := 0
	var reads sync.WaitGroup
	kv.after = func() {
		// In its own goroutine: a read returns once what it read is
		// durable, which this commit is not until its leader returns.
		reads.Go(func() {
			st, err := s.State("team://a")
			if err != nil {
				t.Error(err)
				return
			}
			st.Records(func(id string, r *crdt.Record) bool {
				for _, d := range r.Dots() {
					if !st.Context().Contains(d) {
						t.Errorf("record %s holds %v, outside the state's context", id, d)
					}
				}
				checked++
				return true
			})
		})
	}
	for i := range 3 {
		if _, err := s.Update(7, set("team://a", "m"+strconv.Itoa(i), 1, "ti", "v")); err != nil {
			t.Fatal(err)
		}
		reads.Wait()
	}
	if checked == 0 {
		t.Fatal("the scenario did not happen: no state was checked mid-commit")
	}
}

// TestRecordsReadsEachKey checks Records against Record, key by key: present,
// absent, in another namespace, retracted, and one whose stored bytes are
// corrupt (nil, and the error says which).
func TestRecordsReadsEachKey(t *testing.T) {
	kv := NewMemKV()
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	sign := func(m []byte) []byte { return ed25519.Sign(priv, m) }
	s, err := Open(kv, Options{Signer: crdt.Signer{Key: priv.Public().(ed25519.PublicKey), Sign: sign}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	edit(t, s, "team://a", "m1", 1, "ti", "one")
	edit(t, s, "team://a", "m2", 2, "ti", "two")
	edit(t, s, "team://b", "m3", 3, "ti", "three")
	edit(t, s, "team://a", "gone", 4, "ti", "x")
	if _, err := s.Update(7, func(tx *Tx) error { return tx.Retract("team://a", "gone") }); err != nil {
		t.Fatal(err)
	}
	if err := kv.Update(func(w Writer) error { return w.Set(recKey("team://a", "bad"), []byte{0xff, 0x00}) }); err != nil {
		t.Fatal(err)
	}
	keys := []RecordKey{{"team://a", "m2"}, {"team://a", "m3"}, {"team://b", "m3"}, {"team://a", "bad"}, {"team://a", "gone"}, {"team://a", "m1"}, {"team://c", "none"}}
	recs := make([]*crdt.Record, len(keys)) // RecordView's, one each
	for i, k := range keys {
		want, _ := s.Record(k.Namespace, k.ID)
		if k.ID == "bad" {
			continue // below
		}
		// RecordView reads a view; Record, which writes go through, keeps
		// the seals.
		v, err := s.RecordView(k.Namespace, k.ID)
		if err != nil || (v == nil) != (want == nil) {
			t.Fatalf("%v: RecordView %v (err %v), Record %v", k, v, err, want)
		}
		if v == nil {
			continue
		}
		recs[i] = v
		w, _ := want.Field("ti")
		if !v.IsView() || want.IsView() {
			t.Fatalf("%v: view %v, full %v", k, v.IsView(), want.IsView())
		}
		if vt, _ := v.Field("ti"); string(vt.Value) != string(w.Value) || !slices.Equal(v.Dots(), want.Dots()) {
			t.Fatalf("%v: RecordView reads %q %v, Record %q %v", k, vt.Value, v.Dots(), w.Value, want.Dots())
		}
	}
	var lent *crdt.Record
	err = s.EachRecordView(keys, func(i int, r *crdt.Record) {
		if (r == nil) != (recs[i] == nil) {
			t.Fatalf("%v: EachRecordView %v, RecordView %v", keys[i], r, recs[i])
		}
		if r == nil {
			return
		}
		if lent != nil && r != lent {
			t.Fatalf("%v: a record of its own, not the one lent before", keys[i])
		}
		lent = r
		g, _ := r.Field("ti")
		w, _ := recs[i].Field("ti")
		if string(g.Value) != string(w.Value) || !r.IsView() || !slices.Equal(r.Dots(), recs[i].Dots()) {
			t.Fatalf("%v: EachRecordView reads %q %v, RecordView %q %v", keys[i], g.Value, r.Dots(), w.Value, recs[i].Dots())
		}
	})
	if err == nil || !strings.Contains(err.Error(), "record bad in team://a") {
		t.Fatalf("EachRecordView error %v, want one naming the corrupt record", err)
	}
	if v, err := s.RecordView("team://a", "bad"); v != nil || err == nil || !strings.Contains(err.Error(), "record bad in team://a") {
		t.Fatalf("RecordView of a corrupt record: %v, %v", v, err)
	}
	if v, err := s.RecordView("team://c", "none"); v != nil || err != nil {
		t.Fatalf("RecordView of no record: %v, %v", v, err)
	}
	// A record sealed by the store's signer: Record keeps the seal, the
	// views read the same content without it.
	if _, err := s.Update(crdt.ReplicaOfKey(priv.Public().(ed25519.PublicKey)), func(tx *Tx) error {
		e, err := tx.Edit("team://a", "sealed")
		if err != nil {
			return err
		}
		if err := e.Set(ts(9), "ti", []byte("sealed")); err != nil {
			return err
		}
		tx.Commit("team://a", "sealed", e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	full, _ := s.Record("team://a", "sealed")
	v, _ := s.RecordView("team://a", "sealed")
	var seals, dots = -1, []crdt.Dot(nil)
	if err := s.EachRecordView([]RecordKey{{"team://a", "sealed"}}, func(_ int, r *crdt.Record) {
		seals, dots = len(r.Seals()), r.Dots()
	}); err != nil {
		t.Fatal(err)
	}
	if len(full.Seals()) != 1 || len(v.Seals()) != 0 || seals != 0 || !slices.Equal(v.Dots(), full.Dots()) || !slices.Equal(dots, full.Dots()) {
		t.Fatalf("seals: full %d, views %d %d; dots %v %v %v", len(full.Seals()), len(v.Seals()), seals, full.Dots(), v.Dots(), dots)
	}
	if recs[0] == nil || recs[2] == nil || recs[5] == nil {
		t.Fatal("a stored record was not read")
	}
	if err := s.EachRecordView(nil, func(int, *crdt.Record) { t.Fatal("a record for no key") }); err != nil {
		t.Fatalf("no keys: %v", err)
	}
}
