package gossip

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
)

// ErrBadClusterKey: a cluster key of the wrong size or encoding.
var ErrBadClusterKey = errors.New("gossip: bad cluster key")

// validKeySize reports whether n bytes is an AES key size memberlist
// accepts (AES-128, -192, -256).
func validKeySize(n int) bool { return n == 16 || n == 24 || n == 32 }

// LoadClusterKey reads the file at path, which holds the standard base64 of
// a 16-, 24- or 32-byte key (surrounding white space is ignored). Errors
// wrap ErrBadClusterKey for bad contents, which they never quote, or the
// file system's error.
func LoadClusterKey(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gossip: read cluster key: %w", err)
	}
	return ParseClusterKey(text)
}

// ParseClusterKey decodes the contents of a cluster key file; see
// LoadClusterKey.
func ParseClusterKey(text []byte) ([]byte, error) {
	t := bytes.TrimSpace(text)
	if len(t) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadClusterKey)
	}
	if len(t) > base64.StdEncoding.EncodedLen(32) {
		return nil, fmt.Errorf("%w: %d characters, want at most %d", ErrBadClusterKey, len(t), base64.StdEncoding.EncodedLen(32))
	}
	key, err := base64.StdEncoding.AppendDecode(nil, t)
	if err != nil {
		return nil, fmt.Errorf("%w: not standard base64", ErrBadClusterKey)
	}
	if !validKeySize(len(key)) {
		return nil, fmt.Errorf("%w: %d bytes, want 16, 24 or 32", ErrBadClusterKey, len(key))
	}
	return key, nil
}

// GenerateClusterKey returns a new random 32-byte key as the text of a
// cluster key file (standard base64, no newline).
func GenerateClusterKey() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails; it panics if the system has no randomness
	return base64.StdEncoding.EncodeToString(key)
}
