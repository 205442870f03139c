package store

import (
	"errors"
	"fmt"
	"testing"
)

// The simulator runs ~100 nodes over MemKV, each holding thousands of
// keys, so what matters is the cost of one small commit against a large
// committed state, and of the reads a node makes between commits.

// memKVSizes are the committed key counts the benchmarks run at.
var memKVSizes = []int{1_000, 10_000, 100_000}

// benchKey is record id i of ten namespaces, laid out as the Store does.
func benchKey(i int) []byte { return fmt.Appendf(nil, "r/team://n%d\x00m%08d", i%10, i) }

// filledMemKV returns a MemKV holding n records of 100 bytes.
func filledMemKV(b *testing.B, n int) *MemKV {
	b.Helper()
	kv := NewMemKV()
	val := make([]byte, 100)
	for lo := 0; lo < n; lo += 1000 {
		err := kv.Update(func(w Writer) error {
			for i := lo; i < min(lo+1000, n); i++ {
				if err := w.Set(benchKey(i), val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if kv.Len() != n {
		b.Fatalf("Len %d, want %d", kv.Len(), n)
	}
	return kv
}

// BenchmarkMemKVCommit: one Update shaped like an Apply of one edit — read
// the record, write it back, write the namespace context — over n keys
// already committed. "overwrite" rewrites an existing record; "churn"
// adds a new one and deletes the oldest, so the store stays at n keys.
func BenchmarkMemKVCommit(b *testing.B) {
	for _, n := range memKVSizes {
		for _, mode := range []string{"overwrite", "churn"} {
			b.Run(fmt.Sprintf("%s/keys=%d", mode, n), func(b *testing.B) {
				kv := filledMemKV(b, n)
				val := make([]byte, 100)
				ctx := []byte("n/team://n0")
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					key, gone := benchKey(i*7919%n), []byte(nil)
					if mode == "churn" {
						key, gone = benchKey(n+i), benchKey(i)
					}
					err := kv.Update(func(w Writer) error {
						if gone != nil {
							if err := w.Delete(gone); err != nil {
								return err
							}
						}
						if _, err := w.Get(key); err != nil && !errors.Is(err, ErrKeyNotFound) {
							return err
						}
						if err := w.Set(key, val); err != nil {
							return err
						}
						return w.Set(ctx, val[:16])
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				if kv.Len() != n+1 { // the records and one context
					b.Fatalf("Len %d, want %d", kv.Len(), n+1)
				}
			})
		}
	}
}

// BenchmarkMemKVIterate: a View iterating one namespace's records (a
// tenth of the keys), as Store.Scan does.
func BenchmarkMemKVIterate(b *testing.B) {
	for _, n := range memKVSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			kv := filledMemKV(b, n)
			prefix := []byte("r/team://n3\x00")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				seen := 0
				err := kv.View(func(r Reader) error {
					return r.Iterate(prefix, func(_, _ []byte) error { seen++; return nil })
				})
				if err != nil || seen != n/10 {
					b.Fatalf("saw %d keys (%v), want %d", seen, err, n/10)
				}
			}
		})
	}
}

// BenchmarkMemKVGet: a View reading one record.
func BenchmarkMemKVGet(b *testing.B) {
	for _, n := range memKVSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			kv := filledMemKV(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				key := benchKey(i * 7919 % n)
				err := kv.View(func(r Reader) error {
					_, err := r.Get(key)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
