package replica

import (
	"crypto/ed25519"
	"encoding/binary"

	"github.com/mnemohq/mnemo/crdt"
)

// testSigner is the key pair of test node i: its signer and replica id.
func testSigner(i int) (crdt.Signer, crdt.ReplicaID) {
	seed := make([]byte, ed25519.SeedSize)
	binary.BigEndian.PutUint64(seed, uint64(i)+1)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return crdt.Signer{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}, crdt.ReplicaOfKey(pub)
}

// testConfig is cfg for test node i, named self, with its signer.
func testConfig(cfg Config, self PeerID, i int) Config {
	cfg.Self = self
	cfg.Signer, cfg.Replica = testSigner(i)
	return cfg
}

// testPeer is test node i as its peers see it.
func testPeer(id PeerID, i int) Peer {
	s, r := testSigner(i)
	return Peer{ID: id, Key: s.Key, Replica: r}
}

// sealInto seals d, a delta made on m by signer's replica, and joins it
// back into m so the state holds the seal too (as the node's store does).
func sealInto(m *crdt.Map, ns string, d *crdt.Map, s crdt.Signer) *crdt.Map {
	d.Seal(ns, s)
	m.Join(d)
	return d
}
