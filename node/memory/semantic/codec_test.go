package semantic

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

func TestCodecRoundTripAndRefusals(t *testing.T) {
	v := []float32{1, -2.5, 0, 3e-7}
	b := encodeVector(0xdeadbeef, v)
	h, got, err := decodeVector(b)
	if err != nil || h != 0xdeadbeef || !slices.Equal(got, v) {
		t.Fatalf("round trip: %x %v %v", h, got, err)
	}
	nan := encodeVector(1, []float32{float32(math.NaN())})
	for name, bad := range map[string][]byte{
		"empty": nil, "short": b[:9], "version": append([]byte{2}, b[1:]...),
		"truncated": b[:len(b)-1], "trailing": append(slices.Clone(b), 0), "nan": nan,
		"zero dim": encodeVector(1, nil),
	} {
		if _, _, err := decodeVector(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzDecodeVector: stored bytes come from disk; whatever they are, decode
// either refuses them with ErrCorrupt or returns a vector that encodes
// back to the same bytes.
func FuzzDecodeVector(f *testing.F) {
	f.Add(encodeVector(7, []float32{1, 2, 3}))
	f.Add(encodeVector(0, []float32{0.5}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, v, err := decodeVector(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error outside ErrCorrupt: %v", err)
			}
			return
		}
		if again := encodeVector(h, v); !bytes.Equal(again, b) {
			// a non-minimal uvarint decodes too; it must at least decode the same
			h2, v2, err := decodeVector(again)
			if err != nil || h2 != h || !slices.Equal(v2, v) {
				t.Fatalf("re-encoding %x changed it", b)
			}
		}
	})
}
