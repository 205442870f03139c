package quicnet

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"testing"
)

// BenchmarkSend measures Send on loopback: sequential round trips (latency
// per frame) and parallel senders over one connection (throughput).
func BenchmarkSend(b *testing.B) {
	for _, size := range []int{200, 64 << 10} {
		idA, idB := newIdentity(b), newIdentity(b)
		allowed := newKeySet(idA, idB)
		quiet := slog.New(slog.DiscardHandler)
		sender := newNode(b, Config{Identity: idA, Allowed: allowed.allowed, Logger: quiet})
		recv := newNode(b, Config{Identity: idB, Allowed: allowed.allowed, Logger: quiet,
			Handler: func(ed25519.PublicKey, []byte) {}})
		frame := make([]byte, size)
		ctx := b.Context()
		if err := sender.tr.Send(ctx, recv.addr(), idB.Public, frame); err != nil { // connect outside the timing
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("sequential/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := sender.tr.Send(ctx, recv.addr(), idB.Public, frame); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("parallel/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := sender.tr.Send(ctx, recv.addr(), idB.Public, frame); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
