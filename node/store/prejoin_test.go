package store

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"testing/synctest"

	"github.com/mnemohq/mnemo/crdt"
)

// A write's joins are made by its writer before the commit (prejoin) where
// the entries it wrote were committed when it was built, and by the commit
// where one was pending. Both must store exactly what writes made one at a
// time store: the same history, once queued behind a held group (new
// entries, edits of committed and of pending entries, a retraction, a
// write across two namespaces) and once write by write, leaves the same
// KV, byte for byte, every stored dot sealed and the dot index Open builds
// from the entries.
func TestPrejoinStoresWhatTheCommitWould(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	signer := crdt.Signer{Key: priv.Public().(ed25519.PublicKey), Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}
	rep := crdt.ReplicaOfKey(signer.Key)
	const ns, ns2 = "team://p", "team://q"
	retract := func(id string) func(tx *Tx) error {
		return func(tx *Tx) error { return tx.Retract(ns, id) }
	}
	both := func(tx *Tx) error {
		if err := set(ns2, "q", 9, "ti", "q9")(tx); err != nil {
			return err
		}
		return set(ns, "n", 10, "body", "n10")(tx)
	}
	setup := []func(tx *Tx) error{set(ns, "c", 1, "ti", "c1"), set(ns, "r", 2, "ti", "r2")}
	history := []func(tx *Tx) error{
		set(ns, "n", 3, "ti", "n3"),      // new
		set(ns, "c", 4, "ti", "c4"),      // committed before
		set(ns, "p", 5, "ti", "p5"),      // new
		set(ns, "p", 6, "body", "p6"),    // pending when built
		retract("r"),                     // committed before
		set(ns, "c", 7, "body", "c7"),    // pending when built
		both,                             // n pending, q new
		set(ns2, "q", 11, "body", "q11"), // pending when built
	}
	run := func(held bool) map[string]string {
		var out map[string]string
		synctest.Test(t, func(t *testing.T) {
			mem := NewMemKV()
			kv := &groupKV{KV: mem}
			s, err := Open(kv, Options{Signer: signer})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			update := func(fn func(tx *Tx) error) <-chan error {
				done := make(chan error, 1)
				go func() {
					_, err := s.Update(rep, fn)
					done <- err
				}()
				synctest.Wait()
				return done
			}
			for _, fn := range setup {
				if err := <-update(fn); err != nil {
					t.Fatal(err)
				}
			}
			release := make(chan struct{})
			if !held {
				close(release)
			}
			kv.gate = release
			acks := []<-chan error{update(set("team://held", "h", 0, "ti", "held"))}
			for _, fn := range history {
				acks = append(acks, update(fn))
			}
			if held {
				if q := s.QueueLen(); q != len(history)+1 {
					t.Fatalf("queued %d, want %d", q, len(history)+1)
				}
				close(release)
			}
			for i, a := range acks {
				if err := <-a; err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			for _, n := range []string{ns, ns2} {
				st, err := s.State(n)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.VerifySeals(n, nil); err != nil {
					t.Fatalf("held %v: %s: %v", held, n, err)
				}
			}
			out = dump(t, mem)
			// The dot index is what Open builds from the entries of a
			// store without one.
			s.Close()
			re := mem.Restart()
			if err := re.Update(func(w Writer) error {
				for k := range out {
					if k[:2] == "d/" || k[:2] == "o/" || k == string(formatKey) {
						if err := w.Delete([]byte(k)); err != nil {
							return err
						}
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			s2, err := Open(re, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			rebuilt := dump(t, re)
			for k, v := range out {
				if r, ok := rebuilt[k]; !ok || r != v {
					t.Errorf("held %v: key %q: written %q, rebuilt %q (present %v)", held, k, v, r, ok)
				}
			}
			for k := range rebuilt {
				if _, ok := out[k]; !ok {
					t.Errorf("held %v: key %q: rebuilt, not written", held, k)
				}
			}
		})
		return out
	}
	one, grouped := run(false), run(true)
	if len(one) == 0 {
		t.Fatal("nothing stored")
	}
	for k, v := range one {
		if g, ok := grouped[k]; !ok || g != v {
			t.Errorf("key %q: grouped %q (present %v), one at a time %q", k, g, ok, v)
		}
	}
	for k := range grouped {
		if _, ok := one[k]; !ok {
			t.Errorf("key %q stored only by the grouped writes", k)
		}
	}
	if t.Failed() {
		return
	}
	for _, id := range []string{"c", "n", "p"} {
		if _, ok := one["r/"+ns+"\x00"+id]; !ok {
			t.Errorf("record %s not stored", id)
		}
	}
	if _, ok := one["x/"+ns+"\x00r"]; !ok {
		t.Error("r not retracted")
	}
}

// dump is every key and value of kv.
func dump(t *testing.T, kv KV) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := kv.View(func(r Reader) error {
		return r.Iterate(nil, func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
