package schema

import "testing"

// TestContentHash pins the stored format: the first half of SHA-256, hex.
func TestContentHash(t *testing.T) {
	if got := ContentHash(""); got != "e3b0c44298fc1c149afbf4c8996fb924" {
		t.Fatalf("ContentHash(\"\") = %s", got)
	}
	if ContentHash("a") == ContentHash("b") || len(ContentHash("abc")) != 32 {
		t.Fatal("not a 128-bit hash of the content")
	}
}
