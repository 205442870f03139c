package badgerkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

func ts(n int) crdt.Timestamp {
	return crdt.MakeTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()+int64(n), 0)
}

// mustOpen opens Badger in dir ("": in memory).
func mustOpen(t *testing.T, dir string) *badgerkv.KV {
	t.Helper()
	kv, err := badgerkv.Open(dir, badgerkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// openStore opens a Store over Badger in dir ("": in memory).
func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(mustOpen(t, dir), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// edit writes fields of one record through a Tx.
func edit(t *testing.T, s *store.Store, ns, id string, at int, kv ...string) {
	t.Helper()
	_, err := s.Update(7, func(tx *store.Tx) error {
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
}

func TestApplyPersistsAndReopens(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	edit(t, s, "team://a", "m1", 1, "ti", "hello", "co", "world")
	edit(t, s, "team://a", "m1", 2, "ti", "hello again")
	want, err := s.State("team://a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dir)
	defer s2.Close()
	got, err := s2.State("team://a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != want.Digest() {
		t.Fatal("state changed across reopen")
	}
	r, _ := got.Get("m1")
	if f, _ := r.Field("ti"); string(f.Value) != "hello again" {
		t.Fatalf("title %q", f.Value)
	}
}

// TestSecondOpenNamesTheHolder: a directory held by a KV refuses a second
// one with store.ErrLocked naming this process, and is free again once the
// first is closed.
func TestSecondOpenNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	kv := mustOpen(t, dir)
	_, err := badgerkv.Open(dir, badgerkv.Options{})
	if !errors.Is(err, store.ErrLocked) || !bytes.Contains([]byte(err.Error()), []byte("process")) {
		t.Fatalf("second open: %v", err)
	}
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mustOpen(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestInMemoryTakesLargeValues(t *testing.T) {
	s := openStore(t, "")
	defer s.Close()
	big := string(bytes.Repeat([]byte("x"), 64<<10))
	edit(t, s, "team://a", "m1", 1, "co", big)
	rec, _ := s.Record("team://a", "m1")
	if f, _ := rec.Field("co"); len(f.Value) != len(big) {
		t.Fatal("large value lost in memory mode")
	}
}

// TestReleaseFilePagesFindsBadgersFiles: the Store reaches the KV's
// ReleaseFilePages, which on Linux advises Badger's mapped tables in the
// directory (one is written when the memtable is flushed at Close; 50 KB,
// so that it holds more than its index and the page around it, which stay
// mapped); a KV in memory has none.
func TestReleaseFilePagesFindsBadgersFiles(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	for i := range 100 {
		edit(t, s, "team://a", fmt.Sprintf("m%03d", i), 1, "co", strings.Repeat("x", 500))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	defer s.Close()
	if n := s.ReleaseFilePages(); runtime.GOOS == "linux" && n <= 0 {
		t.Fatalf("advised %d bytes of Badger's files", n)
	}
	mem := openStore(t, "")
	defer mem.Close()
	if n := mem.ReleaseFilePages(); n != 0 {
		t.Fatalf("a KV in memory advised %d bytes", n)
	}
	over, err := store.Open(store.NewMemKV(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if n := over.ReleaseFilePages(); n != 0 {
		t.Fatalf("a MemKV advised %d bytes", n)
	}
}

// TestBackendsAgree runs one seeded history of edits, retracts, peer
// deltas and metadata through a Store over Badger (in memory) and one over
// store.MemKV: every read the node makes answers the same on both.
func TestBackendsAgree(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			bs, err := store.Open(mustOpen(t, ""), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer bs.Close()
			ms, err := store.Open(store.NewMemKV(), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ms.Close()
			rng := rand.New(rand.NewPCG(seed, 1))
			nss := []string{"team://a", "team://b", "agent://x"}
			peer := crdt.NewMap()
			for step := range 120 {
				ns, id := nss[rng.IntN(len(nss))], fmt.Sprintf("m%d", rng.IntN(12))
				for _, s := range []*store.Store{bs, ms} {
					var err error
					switch op := step % 6; {
					case op < 3:
						_, err = s.Update(7, func(tx *store.Tx) error {
							e, err := tx.Edit(ns, id)
							if errors.Is(err, crdt.ErrRetracted) {
								return nil
							}
							if err != nil {
								return err
							}
							if err := e.Set(ts(step), "ti", []byte(fmt.Sprint("v", step))); err != nil {
								return err
							}
							tx.Commit(ns, id, e)
							return nil
						})
					case op == 3:
						_, err = s.Update(7, func(tx *store.Tx) error { return tx.Retract(ns, id) })
					case op == 4:
						_, err = s.Apply(map[string]*crdt.Map{ns: peer})
					default:
						err = s.SetMeta(id, []byte(fmt.Sprint(step)))
					}
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
				if step%6 == 4 {
					d, err := crdt.NewMap().Set(9, ts(step), fmt.Sprintf("p%d", step), "ti", []byte("peer"))
					if err != nil {
						t.Fatal(err)
					}
					peer = d
				}
			}
			if !slices.Equal(bs.Namespaces(), ms.Namespaces()) {
				t.Fatalf("namespaces %v vs %v", bs.Namespaces(), ms.Namespaces())
			}
			for _, ns := range nss {
				b, err1 := bs.State(ns)
				m, err2 := ms.State(ns)
				if err1 != nil || err2 != nil || b.Digest() != m.Digest() {
					t.Fatalf("%s: states differ (%v, %v)", ns, err1, err2)
				}
				bi, _ := bs.RetractedIDs(ns)
				mi, _ := ms.RetractedIDs(ns)
				if !slices.Equal(bi, mi) {
					t.Fatalf("%s: retracted %v vs %v", ns, bi, mi)
				}
			}
			var bk, mk []string
			_ = bs.Scan("", func(ns, id string, _ *crdt.Record) error { bk = append(bk, ns+" "+id); return nil })
			_ = ms.Scan("", func(ns, id string, _ *crdt.Record) error { mk = append(mk, ns+" "+id); return nil })
			if len(bk) == 0 || !slices.Equal(bk, mk) {
				t.Fatalf("scan order differs or is empty: %v vs %v", bk, mk)
			}
			// A search's read of its hits (the value lent, the record
			// reused) reads what Record does, on both.
			var keys []store.RecordKey
			for _, ns := range nss {
				for i := range 12 {
					keys = append(keys, store.RecordKey{Namespace: ns, ID: fmt.Sprintf("m%d", i)})
				}
			}
			shown := func(r *crdt.Record) string {
				if r == nil {
					return "none"
				}
				f, _ := r.Field("ti")
				return fmt.Sprint(string(f.Value), r.Dots())
			}
			for _, s := range []*store.Store{bs, ms} {
				read := 0
				if err := s.EachRecordView(keys, func(i int, r *crdt.Record) {
					want, _ := s.Record(keys[i].Namespace, keys[i].ID)
					if r != nil {
						read++
					}
					if got, w := shown(r), shown(want); got != w {
						t.Fatalf("%v: EachRecordView reads %s, Record %s", keys[i], got, w)
					}
				}); err != nil || read == 0 {
					t.Fatalf("EachRecordView: %v, %d records", err, read)
				}
			}
			for i := range 12 {
				bv, _ := bs.Meta(fmt.Sprintf("m%d", i))
				mv, _ := ms.Meta(fmt.Sprintf("m%d", i))
				if string(bv) != string(mv) {
					t.Fatalf("meta m%d: %q vs %q", i, bv, mv)
				}
			}
		})
	}
}
