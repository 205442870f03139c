package store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// BenchmarkMissing: answering a digest sync of a namespace of 10k
// memory-sized records from a requester that lacks 10 of them, scattered
// through the history (10 gaps in its context, as after lost deltas),
// over MemKV and over Badger on disk.
func BenchmarkMissing(b *testing.B) {
	for _, name := range []string{"MemKV", "Badger"} {
		b.Run(name, func(b *testing.B) {
			var kv store.KV = store.NewMemKV()
			if name == "Badger" {
				var err error
				if kv, err = badgerkv.Open(b.TempDir(), badgerkv.Options{NoSync: true}); err != nil {
					b.Fatal(err)
				}
			}
			s, err := store.Open(kv, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const ns = "team://bench"
			have := fillMissingBench(b, s, ns, 10_000, 10)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				n := 0
				_, err := s.Missing(ns, have, "acl:", func(string, *crdt.Record) error { n++; return nil })
				if err != nil || n != 10 {
					b.Fatalf("missing %d records (%v), want 10", n, err)
				}
			}
		})
	}
}

// fillMissingBench writes n records to ns of s, each with a dozen fields
// like a memory's, 500 per Update, and returns the context of a requester
// that holds all but lack of them (spread evenly).
func fillMissingBench(tb testing.TB, s *store.Store, ns string, n, lack int) *crdt.Context {
	tb.Helper()
	content := strings.Repeat("some remembered content ", 12)
	for lo := 0; lo < n; lo += 500 {
		_, err := s.Update(7, func(tx *store.Tx) error {
			for i := lo; i < min(lo+500, n); i++ {
				id := fmt.Sprintf("m%07d", i)
				e, err := tx.Edit(ns, id)
				if err != nil {
					return err
				}
				for _, f := range []string{"ty", "ti", "co", "im", "cf", "sc", "ch", "au", "ca", "ua", "pr", "ha"} {
					v := f + id
					if f == "co" {
						v = content
					}
					if err := e.Set(crdt.Timestamp(uint64(i+1)<<16), f, []byte(v)); err != nil {
						return err
					}
				}
				if err := e.Add("tg", "tag"+fmt.Sprint(i%7)); err != nil {
					return err
				}
				tx.Commit(ns, id, e)
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	have := crdt.NewContext()
	skip := n / lack
	err := s.Scan(ns, func(_, id string, rec *crdt.Record) error {
		var i int
		if _, err := fmt.Sscanf(id, "m%d", &i); err != nil {
			return err
		}
		if i%skip == skip/2 {
			return nil
		}
		for _, d := range rec.Dots() {
			have.Add(d)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return have
}
