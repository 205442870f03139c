package semantic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/mnemohq/mnemo/node/search/vector"
)

// ErrCorrupt wraps every stored vector that does not decode.
var ErrCorrupt = errors.New("semantic: corrupt stored vector")

// codecVersion is the first byte of a stored vector. The layout:
//
//	version (1) | text hash (8, little endian) | dim (uvarint) | dim × float32 (little endian)
const codecVersion = 1

func encodeVector(hash uint64, v []float32) []byte {
	b := make([]byte, 0, 1+8+binary.MaxVarintLen32+4*len(v))
	b = append(b, codecVersion)
	b = binary.LittleEndian.AppendUint64(b, hash)
	b = binary.AppendUvarint(b, uint64(len(v)))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// decodeVector reads what encodeVector wrote; bytes of another version, a
// dimension of 0 or past vector.MaxDim, a length that disagrees with it,
// or a non-finite component are refused with ErrCorrupt.
func decodeVector(b []byte) (uint64, []float32, error) {
	if len(b) < 10 || b[0] != codecVersion {
		return 0, nil, fmt.Errorf("%w: %d bytes, version %v", ErrCorrupt, len(b), b[:min(1, len(b))])
	}
	hash := binary.LittleEndian.Uint64(b[1:9])
	dim, n := binary.Uvarint(b[9:])
	if n <= 0 || dim == 0 || dim > vector.MaxDim {
		return 0, nil, fmt.Errorf("%w: bad dimension", ErrCorrupt)
	}
	rest := b[9+n:]
	if uint64(len(rest)) != 4*dim {
		return 0, nil, fmt.Errorf("%w: %d bytes for %d dimensions", ErrCorrupt, len(rest), dim)
	}
	v := make([]float32, dim)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return 0, nil, fmt.Errorf("%w: component %d is %v", ErrCorrupt, i, x)
		}
		v[i] = x
	}
	return hash, v, nil
}
