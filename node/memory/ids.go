package memory

import (
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"time"
)

// newID returns a 26-character, time-ordered id: 48 bits of milliseconds and
// 80 random bits in Crockford base32.
func (s *Service) newID(t time.Time) (string, error) {
	var b [16]byte
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	if _, err := io.ReadFull(s.cfg.Rand, b[6:]); err != nil {
		return "", fmt.Errorf("memory: id randomness: %w", err)
	}
	return encodeID(b), nil
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func encodeID(b [16]byte) string {
	// 128 bits → 26 base32 digits (the top digit carries 3 bits).
	var out [26]byte
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 | uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	lo := uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 | uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// derivedID is a stable id for imported items, so importing twice is idempotent.
func derivedID(t time.Time, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var b [16]byte
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	copy(b[6:], h[:10])
	return encodeID(b)
}
