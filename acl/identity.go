package acl

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/mnemohq/mnemo/crdt"
)

// NodeID names a node: the lowercase hex of the first 16 bytes of
// sha256(public key), 32 characters. Hex rather than base32 because it is
// what operators see in logs and compare by eye, and 128 bits is ample for
// a cluster's worth of nodes.
type NodeID string

// NodeIDOf derives the node id of a public key.
func NodeIDOf(pub ed25519.PublicKey) NodeID {
	sum := sha256.Sum256(pub)
	return NodeID(hex.EncodeToString(sum[:16]))
}

// ReplicaIDOf derives the CRDT replica id of a public key: the first 8 bytes
// of sha256(public key), big-endian. The (astronomically unlikely) zero value
// is replaced by 1, because crdt reserves zero.
func ReplicaIDOf(pub ed25519.PublicKey) crdt.ReplicaID { return crdt.ReplicaOfKey(pub) }

// Identity is a node's ed25519 key pair. The node's agents are principals
// bound to Public. The zero Identity cannot sign.
type Identity struct {
	Public  ed25519.PublicKey
	Private ed25519.PrivateKey
}

// GenerateIdentity makes a new key pair from rand (crypto/rand.Reader in
// production, a seeded reader in tests).
func GenerateIdentity(rand io.Reader) (Identity, error) {
	pub, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return Identity{}, fmt.Errorf("acl: generate identity: %w", err)
	}
	return Identity{Public: pub, Private: priv}, nil
}

// IdentityFromSeed builds the identity of a 32-byte ed25519 seed.
func IdentityFromSeed(seed []byte) (Identity, error) {
	if len(seed) != ed25519.SeedSize {
		return Identity{}, fmt.Errorf("%w: seed is %d bytes, want %d", ErrBadKey, len(seed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return Identity{Public: priv.Public().(ed25519.PublicKey), Private: priv}, nil
}

// NodeID is NodeIDOf(id.Public).
func (id Identity) NodeID() NodeID { return NodeIDOf(id.Public) }

// ReplicaID is ReplicaIDOf(id.Public).
func (id Identity) ReplicaID() crdt.ReplicaID { return ReplicaIDOf(id.Public) }

// Salt is HMAC-SHA256 of msg keyed with the private key's seed: bytes only
// this identity can compute, the same each time (crdt.Signer.Salt).
func (id Identity) Salt(msg []byte) []byte {
	m := hmac.New(sha256.New, id.Private.Seed())
	m.Write(msg)
	return m.Sum(nil)
}

// Signer is the crdt.Signer of this identity: it seals and signs as it.
func (id Identity) Signer() crdt.Signer {
	return crdt.Signer{Key: id.Public, Sign: id.Sign, Salt: id.Salt}
}

// Sign signs msg with the private key. It panics if the identity has no
// valid private key, as ed25519.Sign does.
func (id Identity) Sign(msg []byte) []byte { return ed25519.Sign(id.Private, msg) }

// valid reports whether the identity can sign and its halves match.
func (id Identity) valid() bool {
	if len(id.Private) != ed25519.PrivateKeySize || len(id.Public) != ed25519.PublicKeySize {
		return false
	}
	return bytes.Equal(id.Private.Public().(ed25519.PublicKey), id.Public)
}

// EncodePrivate returns the private key as text for the node's key file:
// the standard base64 of the 32-byte seed and a newline. The node writes it
// with mode 0600; nothing else should ever see it.
func (id Identity) EncodePrivate() []byte {
	out := base64.StdEncoding.AppendEncode(nil, id.Private.Seed())
	return append(out, '\n')
}

// DecodeIdentity reads text written by EncodePrivate; surrounding white space
// is ignored. Errors wrap ErrBadKey and never quote the text.
func DecodeIdentity(text []byte) (Identity, error) {
	t := bytes.TrimSpace(text)
	if len(t) > base64.StdEncoding.EncodedLen(ed25519.SeedSize) {
		return Identity{}, fmt.Errorf("%w: private key text is %d bytes, want %d", ErrBadKey, len(t), base64.StdEncoding.EncodedLen(ed25519.SeedSize))
	}
	seed, err := base64.StdEncoding.AppendDecode(nil, t)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: private key is not base64", ErrBadKey)
	}
	return IdentityFromSeed(seed)
}

// EncodePublicKey formats a public key as unpadded URL-safe base64, the form
// used in membership metadata and configuration.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return base64.RawURLEncoding.EncodeToString(pub)
}

// ParsePublicKey parses EncodePublicKey's output. Errors wrap ErrBadKey.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	if len(s) != base64.RawURLEncoding.EncodedLen(ed25519.PublicKeySize) {
		return nil, fmt.Errorf("%w: public key text is %d characters, want %d", ErrBadKey, len(s), base64.RawURLEncoding.EncodedLen(ed25519.PublicKeySize))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: public key is not base64: %w", ErrBadKey, err)
	}
	return ed25519.PublicKey(b), nil
}
