package acl

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"regexp"
	"testing"
)

func TestIdentity(t *testing.T) {
	src := rand.NewChaCha8([32]byte{1})
	id, err := GenerateIdentity(src)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello")
	if !ed25519.Verify(id.Public, msg, id.Sign(msg)) {
		t.Fatal("signature does not verify")
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(string(id.NodeID())) {
		t.Errorf("NodeID %q is not 32 hex digits", id.NodeID())
	}
	if id.ReplicaID() == 0 || id.ReplicaID() != ReplicaIDOf(bytes.Clone(id.Public)) {
		t.Errorf("ReplicaID %v not stable and non-zero", id.ReplicaID())
	}
	other, _ := GenerateIdentity(src)
	if other.NodeID() == id.NodeID() || other.ReplicaID() == id.ReplicaID() {
		t.Error("two keys share an id")
	}

	text := id.EncodePrivate()
	back, err := DecodeIdentity(append([]byte("  "), text...))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Private.Equal(id.Private) || !back.Public.Equal(id.Public) {
		t.Error("private key does not round-trip")
	}
	for _, bad := range []string{"", "not base64!", "AAAA", string(text) + "AAAA"} {
		if _, err := DecodeIdentity([]byte(bad)); !errors.Is(err, ErrBadKey) {
			t.Errorf("DecodeIdentity(%q) error = %v; want ErrBadKey", bad, err)
		}
	}

	pub, err := ParsePublicKey(EncodePublicKey(id.Public))
	if err != nil || !pub.Equal(id.Public) {
		t.Errorf("public key round trip: %v %v", pub, err)
	}
	if _, err := ParsePublicKey("short"); !errors.Is(err, ErrBadKey) {
		t.Errorf("ParsePublicKey(short) error = %v", err)
	}
}
