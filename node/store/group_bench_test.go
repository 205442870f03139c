package store

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
)

// BenchmarkGroupCommit times what the leader does, one write after
// another, for a group of 32 sealed saves of new memory-sized records
// (a 300-byte content and 12 short fields) queued behind a held write:
// from the release to the last acknowledgement, per write. Building and
// sealing happen before the release and are not timed. Over MemKV, so
// the KV's own commit weighs little.
func BenchmarkGroupCommit(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	signer := crdt.Signer{Key: priv.Public().(ed25519.PublicKey), Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}
	rep := crdt.ReplicaOfKey(signer.Key)
	kv := &groupKV{KV: NewMemKV()}
	s, err := Open(kv, Options{Signer: signer})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const ns, n = "agent://bench", 32
	content := strings.Repeat("memory ", 43)
	save := func(id string) func(tx *Tx) error {
		return func(tx *Tx) error {
			e, err := tx.Edit(ns, id)
			if err != nil {
				return err
			}
			for f := range 12 {
				if err := e.Set(ts(1), fmt.Sprint("f", f), []byte("a short field value")); err != nil {
					return err
				}
			}
			if err := e.Set(ts(1), "content", []byte(content)); err != nil {
				return err
			}
			tx.Commit(ns, id, e)
			return nil
		}
	}
	k := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		release := make(chan struct{})
		kv.gate = release
		done := make(chan error, n+1)
		update := func(fn func(tx *Tx) error) {
			go func() {
				_, err := s.Update(rep, fn)
				done <- err
			}()
		}
		update(save(fmt.Sprint("held", k)))
		for s.QueueLen() < 1 {
			runtime.Gosched()
		}
		for range n {
			k++
			update(save(fmt.Sprint("m", k)))
		}
		for s.QueueLen() < n+1 || !s.frontSealed(n+1) {
			runtime.Gosched()
		}
		b.StartTimer()
		close(release)
		for range n + 1 {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		kv.gate = nil
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/write")
}
