package cluster

import (
	"crypto/sha256"
	"crypto/sha3"
	"encoding/binary"
)

// The digest of a node's bindings is a homomorphic set hash (LtHash, as
// Facebook's "Securing update propagation with homomorphic hashing",
// Lewi et al. 2019, describes it): each encoded binding expands, by
// SHAKE128, to setHashLanes 16-bit lanes, and the set's hash is their
// lane-wise sum modulo 2¹⁶. A sum does not depend on the order of its
// terms, so two nodes holding the same bindings agree whatever order they
// admitted them in, and adding a binding updates the hash in O(1): the
// earlier digest, SHA-256 over the sorted set, was recomputed over all N
// bindings at each one admitted, N³ work at a start of N nodes (58% of
// the simulator's allocation at 300 nodes). A plain XOR or a sum of
// 256-bit hashes would be as cheap but lets a member who signs bindings
// build a set colliding with another (Wagner's generalized birthday, or
// linear algebra for XOR); LtHash with 1,024 lanes of 16 bits is the
// paper's instance with over 200 bits of security for the sum. The digest
// as a whole is as strong as its weakest part: SHAKE128 and the SHA-256
// on the wire give 128 bits against collisions, and a binding is known
// by 16 bytes of its hash (heldBindings), so a member could, with ~2⁶⁴
// signatures, make two of its own bindings that nodes take for one; that
// touches only its own principals, which first-claim-stands already lets
// it show differently to different nodes.
//
// On the wire the digest is SHA-256 of the 2 KB lane array, then the
// number of bindings (uvarint) as before, so frames keep their size and
// digestCount its reading. This changed what the digest is: a node of a
// build before it and one after never find their digests equal (the
// digest carries no version: they look like different sets), and each
// pair exchanges indexes whenever either digest changes. Both ends are this
// codebase and released together; there is no mixed-version cluster.

// setHashLanes is the number of 16-bit lanes of a setHash.
const setHashLanes = 1024

// setHash is the LtHash of a set of encoded bindings.
type setHash struct {
	lanes [setHashLanes]uint16
	n     uint64 // the number of bindings added
}

// add adds an encoded binding to the set.
func (h *setHash) add(enc []byte) {
	var buf [2 * setHashLanes]byte
	x := sha3.NewSHAKE128()
	_, _ = x.Write(enc) // never fails
	_, _ = x.Read(buf[:])
	for i := range h.lanes {
		h.lanes[i] += binary.LittleEndian.Uint16(buf[2*i:])
	}
	h.n++
}

// digest is the set's digest as frames carry it: SHA-256 over the lanes
// (little-endian), then the number of bindings (uvarint).
func (h *setHash) digest() []byte {
	var buf [2 * setHashLanes]byte
	for i, v := range h.lanes {
		binary.LittleEndian.PutUint16(buf[2*i:], v)
	}
	sum := sha256.Sum256(buf[:])
	return binary.AppendUvarint(sum[:], h.n)
}

// digestCount is the number of bindings a digest says its set holds;
// false for a digest without one (a node of an earlier build) or garbled.
func digestCount(sum []byte) (uint64, bool) {
	if len(sum) <= sha256.Size {
		return 0, false
	}
	n, k := binary.Uvarint(sum[sha256.Size:])
	return n, k > 0 && sha256.Size+k == len(sum)
}
