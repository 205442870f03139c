package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
)

// TestBackendsAgree runs one seeded history of edits, retracts, peer
// deltas and metadata through a Store over Badger (in memory) and one over
// MemKV: every read the node makes answers the same on both.
func TestBackendsAgree(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			bs, err := Open("", Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer bs.Close()
			ms, err := Open("", Options{KV: NewMemKV()})
			if err != nil {
				t.Fatal(err)
			}
			defer ms.Close()
			rng := rand.New(rand.NewPCG(seed, 1))
			nss := []string{"team://a", "team://b", "agent://x"}
			peer := crdt.NewMap()
			for step := range 120 {
				ns, id := nss[rng.IntN(len(nss))], fmt.Sprintf("m%d", rng.IntN(12))
				for _, s := range []*Store{bs, ms} {
					var err error
					switch op := step % 6; {
					case op < 3:
						_, err = s.Update(7, func(tx *Tx) error {
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
						_, err = s.Update(7, func(tx *Tx) error { return tx.Retract(ns, id) })
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

// TestCrashKeepsOnlyWhatCommitted: a Store over MemKV crashed in the middle
// of an Update reopens, over the restarted KV, with every committed write
// and nothing of the interrupted one.
func TestCrashKeepsOnlyWhatCommitted(t *testing.T) {
	kv := NewMemKV()
	s, err := Open("", Options{KV: kv})
	if err != nil {
		t.Fatal(err)
	}
	edit(t, s, "team://a", "m1", 1, "ti", "committed")
	want, _ := s.State("team://a")
	_, err = s.Update(7, func(tx *Tx) error {
		e, err := tx.Edit("team://a", "m2")
		if err != nil {
			return err
		}
		if err := e.Set(ts(2), "ti", []byte("in flight")); err != nil {
			return err
		}
		tx.Commit("team://a", "m2", e)
		kv.PowerCut() // the process dies before the commit
		return nil
	})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("an update cut mid-write reported %v, want ErrClosed", err)
	}
	s2, err := Open("", Options{KV: kv.Restart()})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, _ := s2.State("team://a")
	if got.Digest() != want.Digest() {
		t.Fatal("the restarted store is not the committed state")
	}
	if r, _ := s2.Record("team://a", "m2"); r != nil {
		t.Fatal("the interrupted write survived the crash")
	}
	if r, _ := s2.Record("team://a", "m1"); r == nil {
		t.Fatal("a committed write was lost")
	}
	if _, err := s.Record("team://a", "m1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("the crashed store still answers: %v", err)
	}
}

// TestMemKVTransaction: an Update reads its own writes and deletes, commits
// them together, and a View started before sees none of them.
func TestMemKVTransaction(t *testing.T) {
	kv := NewMemKV()
	if err := kv.Update(func(w Writer) error { return w.Set([]byte("r/a"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	err := kv.View(func(before Reader) error {
		err := kv.Update(func(w Writer) error {
			if err := w.Set([]byte("r/b"), []byte("2")); err != nil {
				return err
			}
			if v, err := w.Get([]byte("r/b")); err != nil || string(v) != "2" {
				t.Fatalf("own write: %q %v", v, err)
			}
			if err := w.Delete([]byte("r/a")); err != nil {
				return err
			}
			if _, err := w.Get([]byte("r/a")); !errors.Is(err, ErrKeyNotFound) {
				t.Fatalf("own delete still reads: %v", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if v, err := before.Get([]byte("r/a")); err != nil || string(v) != "1" {
			t.Fatalf("an older snapshot changed: %q %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	_ = kv.View(func(r Reader) error {
		return r.Iterate([]byte("r/"), func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	})
	if !slices.Equal(keys, []string{"r/b"}) {
		t.Fatalf("after commit: %v", keys)
	}
}
