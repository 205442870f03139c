package schema

import (
	"crypto/sha256"
	"encoding/hex"
)

// ContentHash is the value of FieldHash for content: the first 16 bytes of
// its SHA-256, in lower-case hex. It is part of the stored and replicated
// format (peers and exports compare it), so it never changes.
func ContentHash(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:16])
}
