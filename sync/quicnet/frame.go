package quicnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// On the wire a stream carries exactly one frame: frameVersion, the payload
// length as a big-endian uint32, the payload, then the end of the stream.
// The version byte makes garbage recognisable at the first byte and leaves
// room for a different layout under the same ALPN.
const (
	frameVersion    = 1
	frameHeaderSize = 5

	// readChunk bounds what a declared length can make us allocate before
	// the bytes have actually arrived: the buffer grows as data comes in.
	readChunk = 64 << 10
)

// appendFrameHeader appends the header of an n-byte frame to b.
func appendFrameHeader(b []byte, n int) []byte {
	b = append(b, frameVersion)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// readFrame reads one frame from r, which must end right after it. It
// returns ErrFrameTooLarge if the header declares more than max bytes,
// ErrCorrupt for an unknown version, a truncated frame or trailing bytes,
// and r's own error (wrapped) for anything else, such as a reset stream.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: stream ended inside the frame header", ErrCorrupt)
		}
		return nil, fmt.Errorf("quicnet: read frame header: %w", err)
	}
	if hdr[0] != frameVersion {
		return nil, fmt.Errorf("%w: frame version %d, want %d", ErrCorrupt, hdr[0], frameVersion)
	}
	n := uint64(binary.BigEndian.Uint32(hdr[1:]))
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: peer declared %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	size := int(n)
	buf := make([]byte, 0, min(size, readChunk))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(size-len(buf), cap(buf)))
		}
		m, err := r.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if len(buf) == size && errors.Is(err, io.EOF) {
				return buf, nil
			}
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: stream ended after %d of %d frame bytes", ErrCorrupt, len(buf), size)
			}
			return nil, fmt.Errorf("quicnet: read frame: %w", err)
		}
	}
	// The frame must be the whole stream: anything after it is a protocol
	// violation, and reading to EOF is also what finishes our receive side.
	var extra [1]byte
	for {
		m, err := r.Read(extra[:])
		if m > 0 {
			return nil, fmt.Errorf("%w: bytes after the %d-byte frame", ErrCorrupt, size)
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("quicnet: read frame end: %w", err)
		}
	}
}
