package gossip

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/acl"
)

// MaxMetaBytes is memberlist's limit on a node's encoded metadata.
const MaxMetaBytes = memberlist.MetaMaxSize

const metaVersion = 1

var (
	// ErrCorrupt: a member's metadata does not decode.
	ErrCorrupt = errors.New("gossip: corrupt metadata")
	// ErrIdentity: metadata whose key does not derive its node id, or a
	// node id that is not the member's name.
	ErrIdentity = errors.New("gossip: node id does not match key")
	// ErrMetaTooLarge: metadata that does not fit MaxMetaBytes even with no
	// agents.
	ErrMetaTooLarge = errors.New("gossip: metadata too large")
)

// Meta is what a node tells the cluster about itself.
type Meta struct {
	// NodeID is acl.NodeIDOf(PublicKey). In Config.Meta and UpdateMeta it
	// may be left empty and is then derived.
	NodeID acl.NodeID
	// PublicKey is the node's ed25519 key: peers pin it when they dial
	// QUICAddr.
	PublicKey ed25519.PublicKey
	// QUICAddr is the host:port peers dial for replication.
	QUICAddr string
	// Agents names the agents the node hosts. When the encoded metadata
	// would exceed MaxMetaBytes the list is cut from the end (so put the
	// most important first); about 20 names of 20 bytes fit.
	Agents []string
	// Incarnation tells the starts of one node apart: each start picks a
	// higher one (the node uses its start time). It is part of the
	// memberlist name (MemberName), so a node restarted at a new address
	// is a new member at once rather than a conflict with its old
	// incarnation (see doc.go). Zero names the member by NodeID alone.
	Incarnation uint64
}

// MemberName is the memberlist name of the incarnation inc of node id:
// the node id, then "-" and inc in hex unless inc is zero.
func MemberName(id acl.NodeID, inc uint64) string {
	if inc == 0 {
		return string(id)
	}
	return string(id) + "-" + strconv.FormatUint(inc, 16)
}

// wireMeta is Meta as gossiped: a msgpack map with one-letter keys, so
// fields can be added (unknown keys are ignored) at a cost of one byte each.
type wireMeta struct {
	V  uint8    `msgpack:"v"`
	ID string   `msgpack:"i"`
	K  []byte   `msgpack:"k"`
	Q  string   `msgpack:"q"`
	A  []string `msgpack:"a,omitempty"`
	// L marks a node that is leaving. memberlist's leave notification
	// does not say whether a node left or failed (v0.7.0 passes a Node
	// whose State is never set), so Leave first gossips this flag and
	// members that saw it report StateLeft rather than StateDead.
	L bool `msgpack:"l,omitempty"`
	// N is Meta.Incarnation.
	N uint64 `msgpack:"n,omitempty"`
}

func (m *Meta) check() error {
	if len(m.PublicKey) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key is %d bytes, want %d", ErrIdentity, len(m.PublicKey), ed25519.PublicKeySize)
	}
	if want := acl.NodeIDOf(m.PublicKey); m.NodeID != want {
		return fmt.Errorf("%w: node id %q, key derives %s", ErrIdentity, m.NodeID, want)
	}
	host, port, err := net.SplitHostPort(m.QUICAddr)
	if err != nil {
		return fmt.Errorf("gossip: QUIC address %q: %w", m.QUICAddr, err)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || host == "" {
		return fmt.Errorf("gossip: QUIC address %q: want host:port with a non-zero port", m.QUICAddr)
	}
	return nil
}

// encodeMeta encodes m, keeping as many agents as fit in MaxMetaBytes; kept
// says how many.
func encodeMeta(m Meta, leaving bool) (b []byte, kept int, err error) {
	if m.NodeID == "" && len(m.PublicKey) == ed25519.PublicKeySize {
		m.NodeID = acl.NodeIDOf(m.PublicKey)
	}
	if err := m.check(); err != nil {
		return nil, 0, err
	}
	enc := func(n int) ([]byte, error) {
		return msgpack.Marshal(&wireMeta{V: metaVersion, ID: string(m.NodeID), K: m.PublicKey, Q: m.QUICAddr, A: m.Agents[:n], L: leaving, N: m.Incarnation})
	}
	// The size grows with the number of agents kept: binary search for
	// the most that fit.
	lo, hi := 0, len(m.Agents)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		b, err := enc(mid)
		if err != nil {
			return nil, 0, fmt.Errorf("gossip: encode metadata: %w", err)
		}
		if len(b) <= MaxMetaBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	b, err = enc(lo)
	if err != nil {
		return nil, 0, fmt.Errorf("gossip: encode metadata: %w", err)
	}
	if len(b) > MaxMetaBytes {
		return nil, 0, fmt.Errorf("%w: %d bytes without agents, limit %d", ErrMetaTooLarge, len(b), MaxMetaBytes)
	}
	return b, lo, nil
}

// decodeMeta decodes the metadata gossiped by the member called name and
// checks that its key derives its node id, and that the node id and the
// incarnation make its name. leaving reports
// the flag Leave sets. Errors wrap ErrCorrupt or ErrIdentity.
func decodeMeta(name string, b []byte) (m Meta, leaving bool, err error) {
	if len(b) > MaxMetaBytes {
		return Meta{}, false, fmt.Errorf("%w: %d bytes, limit %d", ErrCorrupt, len(b), MaxMetaBytes)
	}
	if err := checkBounds(b); err != nil {
		return Meta{}, false, err
	}
	var w wireMeta
	if err := msgpack.Unmarshal(b, &w); err != nil {
		return Meta{}, false, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if w.V != metaVersion {
		return Meta{}, false, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, w.V, metaVersion)
	}
	m = Meta{NodeID: acl.NodeID(w.ID), PublicKey: ed25519.PublicKey(w.K), QUICAddr: w.Q, Agents: w.A, Incarnation: w.N}
	if err := m.check(); err != nil {
		if errors.Is(err, ErrIdentity) {
			return Meta{}, false, err
		}
		return Meta{}, false, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if want := MemberName(m.NodeID, m.Incarnation); name != want {
		return Meta{}, false, fmt.Errorf("%w: member %q gossips the name %s", ErrIdentity, name, want)
	}
	return m, w.L, nil
}

// checkBounds walks the msgpack values in b and fails unless each declared
// length and element count fits in the bytes that follow it and the values
// end exactly at the end of b. The msgpack decoder preallocates by declared
// length (up to 1 MiB per string, a million elements per array), so without
// this check 512 gossiped bytes could make us allocate megabytes.
func checkBounds(b []byte) error {
	bad := func(what string, at int) error {
		return fmt.Errorf("%w: msgpack %s at byte %d", ErrCorrupt, what, at)
	}
	// uintAt reads an n-byte big-endian length at b[i:].
	uintAt := func(i, n int) (int, bool) {
		if i+n > len(b) {
			return 0, false
		}
		switch n {
		case 1:
			return int(b[i]), true
		case 2:
			return int(binary.BigEndian.Uint16(b[i:])), true
		default:
			return int(binary.BigEndian.Uint32(b[i:])), true
		}
	}
	pending := 1 // values still to read
	i := 0
	for pending > 0 {
		if i >= len(b) {
			return bad("truncated", i)
		}
		pending--
		c := b[i]
		i++
		var (
			skip  int // payload bytes after the code and length
			items int // nested values that follow
		)
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		default:
			// Codes with a fixed payload, or a length of lenBytes bytes.
			fixed, lenBytes, ext := 0, 0, 0
			switch c {
			case 0xca:
				fixed = 4
			case 0xcb:
				fixed = 8
			case 0xcc, 0xd0:
				fixed = 1
			case 0xcd, 0xd1:
				fixed = 2
			case 0xce, 0xd2:
				fixed = 4
			case 0xcf, 0xd3:
				fixed = 8
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext: type byte + 1..16
				fixed = 1 + 1<<(c-0xd4)
			case 0xc4, 0xd9:
				lenBytes = 1
			case 0xc5, 0xda:
				lenBytes = 2
			case 0xc6, 0xdb:
				lenBytes = 4
			case 0xc7, 0xc8, 0xc9: // ext: length, then a type byte
				lenBytes, ext = 1<<(c-0xc7), 1
			case 0xdc, 0xde:
				lenBytes = 2
			case 0xdd, 0xdf:
				lenBytes = 4
			default: // 0xc1 is never used
				return bad(fmt.Sprintf("code %#x", c), i-1)
			}
			skip = fixed
			if lenBytes > 0 {
				n, ok := uintAt(i, lenBytes)
				if !ok {
					return bad("truncated length", i)
				}
				i += lenBytes
				switch c {
				case 0xdc, 0xdd:
					items = n
				case 0xde, 0xdf:
					items = 2 * n
				default:
					skip = n + ext
				}
			}
		}
		// Every nested value takes at least one byte.
		if skip > len(b)-i || items > len(b)-i {
			return bad("length beyond the input", i)
		}
		i += skip
		pending += items
	}
	if i != len(b) {
		return bad("trailing bytes", i)
	}
	return nil
}

// clone copies m so callers and the member table share no slices.
func (m Meta) clone() Meta {
	m.PublicKey = slices.Clone(m.PublicKey)
	m.Agents = slices.Clone(m.Agents)
	return m
}
