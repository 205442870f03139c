package store

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestCrashKeepsOnlyWhatCommitted: a Store over MemKV crashed in the middle
// of an Update reopens, over the restarted KV, with every committed write
// and nothing of the interrupted one.
func TestCrashKeepsOnlyWhatCommitted(t *testing.T) {
	kv := NewMemKV()
	s, err := Open(kv, Options{})
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
	s2, err := Open(kv.Restart(), Options{})
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

// TestMemKVAgreesWithModel: seeded random Updates — sets, deletes, reads
// of own writes, some failing, some cut by a crash — against a map. After
// each one every read agrees with the map: Get, Iterate over prefixes,
// Len; and a View open across the Update still reads the state before it.
func TestMemKVAgreesWithModel(t *testing.T) {
	errAbort := errors.New("abort")
	prefixes := []string{"", "a/", "b/1", "c/199", "d", "a/10\x00"}
	// check reads r: Iterate should see iterModel, Get getModel.
	check := func(t *testing.T, r Reader, iterModel, getModel map[string]string, what string) {
		t.Helper()
		keys := slices.Sorted(maps.Keys(iterModel))
		for _, p := range prefixes {
			var got, want []string
			if err := r.Iterate([]byte(p), func(k, v []byte) error {
				got = append(got, string(k)+"="+string(v))
				return nil
			}); err != nil {
				t.Fatalf("%s: iterate %q: %v", what, p, err)
			}
			for _, k := range keys {
				if strings.HasPrefix(k, p) {
					want = append(want, k+"="+iterModel[k])
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: iterate %q:\n got %v\nwant %v", what, p, got, want)
			}
		}
		for i := range 200 {
			k := fmt.Sprintf("b/%d", i)
			v, err := r.Get([]byte(k))
			if w, ok := getModel[k]; ok != (err == nil) || string(v) != w {
				t.Fatalf("%s: get %s: %q %v, want %q", what, k, v, err, w)
			}
		}
	}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			kv := NewMemKV()
			model := map[string]string{}
			for step := range 150 {
				next := maps.Clone(model)
				cut := rng.IntN(30) == 0
				abort := !cut && rng.IntN(10) == 0
				err := kv.View(func(before Reader) error {
					err := kv.Update(func(w Writer) error {
						for range 1 + rng.IntN(40) {
							k := fmt.Sprintf("%c/%d", "abc"[rng.IntN(3)], rng.IntN(200))
							if rng.IntN(3) == 0 {
								delete(next, k)
								if err := w.Delete([]byte(k)); err != nil {
									return err
								}
							} else {
								next[k] = fmt.Sprint(step)
								if err := w.Set([]byte(k), []byte(next[k])); err != nil {
									return err
								}
							}
							if v, err := w.Get([]byte(k)); next[k] != string(v) || (err == nil) != (next[k] != "") {
								t.Fatalf("step %d: own write %s: %q %v, want %q", step, k, v, err, next[k])
							}
						}
						check(t, w, model, next, "inside an update") // Iterate is the snapshot's
						if cut {
							kv.PowerCut()
						}
						if abort {
							return errAbort
						}
						return nil
					})
					check(t, before, model, model, "a view across an update")
					return err
				})
				switch {
				case cut:
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("step %d: cut update: %v", step, err)
					}
					kv = kv.Restart()
				case abort:
					if !errors.Is(err, errAbort) {
						t.Fatalf("step %d: aborted update: %v", step, err)
					}
				case err != nil:
					t.Fatalf("step %d: %v", step, err)
				default:
					model = next
				}
				if kv.Len() != len(model) {
					t.Fatalf("step %d: Len %d, want %d", step, kv.Len(), len(model))
				}
				_ = kv.View(func(r Reader) error { check(t, r, model, model, fmt.Sprint("step ", step)); return nil })
			}
		})
	}
}

// TestMemKVConcurrentViews: Views, nested ones among them, run while
// Updates commit (run it with -race): each sees one whole commit. Every
// commit rewrites 50 keys and replaces 20 others, splitting and merging
// tree nodes that older snapshots still share.
func TestMemKVConcurrentViews(t *testing.T) {
	kv := NewMemKV()
	commit := func(i int) error {
		return kv.Update(func(w Writer) error {
			for j := range 50 {
				if err := w.Set(fmt.Appendf(nil, "k/%02d", j), fmt.Append(nil, i)); err != nil {
					return err
				}
				if j < 20 {
					if err := w.Delete(fmt.Appendf(nil, "y/%d/%02d", i-1, j)); err != nil {
						return err
					}
					if err := w.Set(fmt.Appendf(nil, "y/%d/%02d", i, j), fmt.Append(nil, i)); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err := commit(0); err != nil {
		t.Fatal(err)
	}
	// consistent reads one snapshot: 70 keys all holding the same commit.
	consistent := func(r Reader) error {
		var vals []string
		if err := r.Iterate(nil, func(_, v []byte) error { vals = append(vals, string(v)); return nil }); err != nil {
			return err
		}
		if len(vals) != 70 || slices.ContainsFunc(vals, func(v string) bool { return v != vals[0] }) {
			return fmt.Errorf("a torn snapshot: %v", vals)
		}
		return nil
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				err := kv.View(func(r Reader) error {
					return r.Iterate([]byte("k/00"), func(_, _ []byte) error {
						return kv.View(consistent) // nested, mid-iteration
					})
				})
				if err == nil {
					err = kv.View(consistent)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := 1; i <= 300; i++ {
		if err := commit(i); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestMemKVRestartsShareNothing: two KVs restarted from one crash start
// from the state committed before it and then diverge, neither seeing the
// other's writes, though their trees share every node at first.
func TestMemKVRestartsShareNothing(t *testing.T) {
	kv := NewMemKV()
	err := kv.Update(func(w Writer) error {
		for i := range 1000 {
			if err := w.Set(fmt.Appendf(nil, "k/%04d", i), []byte("0")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := kv.Crash()
	b := kv.Restart()
	for i, k := range []*MemKV{a, b} {
		err := k.Update(func(w Writer) error {
			for j := i; j < 1000; j += 2 {
				if err := w.Delete(fmt.Appendf(nil, "k/%04d", j)); err != nil {
					return err
				}
			}
			return w.Set(fmt.Appendf(nil, "k/%04d", 1-i), fmt.Append(nil, "written by ", i))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range []*MemKV{a, b} {
		var keys []string
		_ = k.View(func(r Reader) error {
			return r.Iterate(nil, func(key, v []byte) error { keys = append(keys, string(key)+"="+string(v)); return nil })
		})
		if len(keys) != 500 || k.Len() != 500 {
			t.Fatalf("restart %d holds %d keys (Len %d), want 500", i, len(keys), k.Len())
		}
		if want := fmt.Sprintf("k/%04d=written by %d", 1-i, i); keys[0] != want {
			t.Fatalf("restart %d: %v…", i, keys[:3])
		}
	}
	if err := kv.View(func(Reader) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("the crashed KV still answers: %v", err)
	}
}

// An UpdateNoSync is visible at once and durable only once a Sync covers
// it: a crash before loses it, an Update or a Sync after keeps it, and a
// clean Close keeps what was committed (Badger's Close flushes).
func TestMemKVUnsyncedIsLostOnCrash(t *testing.T) {
	put := func(k *MemKV, key string) {
		t.Helper()
		if err := k.UpdateNoSync(func(w Writer) error { return w.Set([]byte(key), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
	has := func(k *MemKV, key string) bool {
		var ok bool
		_ = k.View(func(r Reader) error {
			_, err := r.Get([]byte(key))
			ok = err == nil
			return nil
		})
		return ok
	}
	k := NewMemKV()
	put(k, "a")
	if !has(k, "a") {
		t.Fatal("a committed write is not visible")
	}
	k = k.Crash()
	if has(k, "a") {
		t.Fatal("a write never synced survived a crash")
	}
	put(k, "b")
	if err := k.Sync(); err != nil {
		t.Fatal(err)
	}
	put(k, "c")
	if err := k.Update(func(w Writer) error { return w.Set([]byte("d"), nil) }); err != nil {
		t.Fatal(err)
	}
	put(k, "e")
	k = k.Crash()
	for key, want := range map[string]bool{"b": true, "c": true, "d": true, "e": false} {
		if has(k, key) != want {
			t.Fatalf("after the crash %s present %v, want %v", key, !want, want)
		}
	}
	put(k, "f")
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if !has(k.Restart(), "f") {
		t.Fatal("a clean Close lost a committed write")
	}
	k2 := NewMemKV()
	put(k2, "g")
	k2.PowerCut()
	if err := k2.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after a power cut: %v, want ErrClosed", err)
	}
	if has(k2.Restart(), "g") {
		t.Fatal("a write cut before its sync survived")
	}
}
