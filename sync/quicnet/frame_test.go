package quicnet

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"
)

func frameBytes(payload []byte) []byte {
	return append(appendFrameHeader(nil, len(payload)), payload...)
}

func TestReadFrameChunked(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 3*readChunk/16+5) // several growth steps
	got, err := readFrame(iotest.HalfReader(bytes.NewReader(frameBytes(payload))), len(payload))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("payload changed in transit")
	}
	if _, err := readFrame(bytes.NewReader(frameBytes(payload)), len(payload)-1); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("over the limit: %v, want ErrFrameTooLarge", err)
	}
	if _, err := readFrame(iotest.ErrReader(errors.New("boom")), 10); err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("reader error: %v, want it passed through", err)
	}
}

// FuzzReadFrame checks the decoder of peer bytes: it never panics, never
// returns more than the limit, accepts exactly the encodings of frames, and
// round-trips what the sender writes.
func FuzzReadFrame(f *testing.F) {
	f.Add(frameBytes([]byte("hello")), uint16(64))
	f.Add(frameBytes(nil), uint16(0))
	f.Add(frameBytes(make([]byte, 300)), uint16(100))
	f.Add([]byte{frameVersion, 0xff, 0xff, 0xff, 0xff}, uint16(1024))
	f.Add([]byte{frameVersion, 0, 0, 0, 3, 'a', 'b'}, uint16(1024))
	f.Add(append(frameBytes([]byte("x")), 'y'), uint16(1024))
	f.Add([]byte("GET / HTTP/1.1\r\n"), uint16(1024))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		got, err := readFrame(bytes.NewReader(data), int(max))
		if err == nil {
			if len(got) > int(max) {
				t.Fatalf("frame of %d bytes over the limit %d", len(got), max)
			}
			if !bytes.Equal(frameBytes(got), data) {
				t.Fatalf("accepted %x, which is not the encoding of %x", data, got)
			}
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("error %v is neither ErrCorrupt nor ErrFrameTooLarge", err)
		}
		// Whatever data is, as a payload it round-trips.
		if len(data) <= int(max) {
			back, err := readFrame(iotest.OneByteReader(bytes.NewReader(frameBytes(data))), int(max))
			if err != nil || !bytes.Equal(back, data) {
				t.Fatalf("round trip of %x: %x, %v", data, back, err)
			}
		}
	})
}
