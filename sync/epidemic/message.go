package epidemic

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// PeerID names a peer node. The replica engine's peers are
// replica.PeerID (an acl.NodeID, a string), which converts as is.
type PeerID string

// MsgID names a broadcast. It is opaque here; the integration uses the
// first 16 bytes of the SHA-256 of the author-signed delta
// (wire.RelayID), so equal ids mean equal payloads.
type MsgID [16]byte

func (id MsgID) String() string { return hex.EncodeToString(id[:4]) }

// Kind is the kind of a Message.
type Kind uint8

// Message kinds. The first four are Plumtree's, the rest HyParView's.
const (
	// KindGossip carries a payload (ID, Payload, Round), pushed eagerly
	// or sent in answer to a graft.
	KindGossip Kind = iota + 1
	// KindIHave announces payloads held (IHave), batched per peer.
	KindIHave
	// KindGraft makes the link an eager one in Origin's tree (the
	// receiver pushes Origin's payloads over it) and asks for the
	// payloads IDs, if any.
	KindGraft
	// KindWant asks for the payloads IDs, announced and not received,
	// leaving the link as it is.
	KindWant
	// KindPrune makes the link a lazy one in Origin's tree: the receiver
	// sends only announcements of Origin's payloads over it.
	KindPrune
	// KindJoin: a new node asks the contact to let it into the overlay.
	KindJoin
	// KindForwardJoin walks the joining node (Peer) through the overlay
	// for TTL more hops.
	KindForwardJoin
	// KindNeighbor asks for a place in the receiver's active view;
	// Priority asks for one even when the view is full (the sender's own
	// active view is empty).
	KindNeighbor
	// KindNeighborReply answers KindNeighbor (Accept).
	KindNeighborReply
	// KindDisconnect: the sender has dropped the receiver from its active
	// view (into its passive view).
	KindDisconnect
	// KindShuffle walks a sample of Peer's views (Peers) through the
	// overlay for TTL more hops; where it stops, the node answers Peer.
	KindShuffle
	// KindShuffleReply answers KindShuffle with a sample of the passive
	// view (Peers).
	KindShuffleReply
)

var kindNames = [...]string{"?", "gossip", "ihave", "graft", "want", "prune", "join", "forwardjoin",
	"neighbor", "neighborreply", "disconnect", "shuffle", "shufflereply"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Announcement names a payload an IHave announces and the hops it took to
// reach the announcer.
type Announcement struct {
	ID    MsgID
	Round int
}

// Message is one message between nodes. Which fields a kind uses is said
// at its constant; the others are zero. The wire encoding is the driver's
// (sync/wire at integration).
type Message struct {
	Kind Kind
	// ID: KindGossip.
	ID MsgID
	// Payload: KindGossip. The application's bytes, never read here; the
	// receiver's driver verifies them before Step (doc.go, "The loop").
	Payload []byte
	// Origin: the node that broadcast the payload (KindGossip), whose tree
	// the link changes in (KindGraft, KindPrune).
	Origin PeerID
	// Round: KindGossip, the hops the payload has travelled when it
	// arrives (1 from its origin).
	Round int
	// IHave: KindIHave.
	IHave []Announcement
	// IDs: KindGraft, KindWant.
	IDs []MsgID
	// Peer: the joining node (KindForwardJoin), the shuffle's origin
	// (KindShuffle).
	Peer PeerID
	// TTL: hops left (KindForwardJoin, KindShuffle).
	TTL int
	// Priority: KindNeighbor.
	Priority bool
	// Accept: KindNeighborReply.
	Accept bool
	// Peers: KindShuffle, KindShuffleReply.
	Peers []PeerID
}

// Size estimates the message's encoded size in bytes: a 4-byte frame
// header and kind, 32 bytes per id, 2 per round, TTL or flag, and the
// peer ids and payload as they are. It is for accounting (Stats, the
// simulation's byte counts), not a wire format.
func (m *Message) Size() int {
	n := 4
	switch m.Kind {
	case KindGossip:
		n += 32 + 2 + len(m.Payload) + len(m.Origin) + 1
	case KindIHave:
		n += 34 * len(m.IHave)
	case KindGraft, KindWant, KindPrune:
		n += 32*len(m.IDs) + len(m.Origin) + 1
	case KindForwardJoin, KindShuffle:
		n += 2 + len(m.Peer) + 1
	case KindNeighbor, KindNeighborReply:
		n++
	}
	for _, p := range m.Peers {
		n += len(p) + 1
	}
	return n
}

// Envelope is a message for one peer.
type Envelope struct {
	To  PeerID
	Msg Message
}

// Delivery is a payload received for the first time: the application
// applies it. Origin is the node that broadcast it (as its sender said:
// the application checks the payload, not this), From the peer it came
// from, Round its hops from the origin.
type Delivery struct {
	ID      MsgID
	Payload []byte
	Origin  PeerID
	From    PeerID
	Round   int
}

// Errors returned by Step.
var (
	// ErrMalformed: a message whose fields do not fit its kind or exceed
	// the configured bounds. Nothing of it is taken.
	ErrMalformed = errors.New("epidemic: malformed message")
	// ErrFromSelf: a message that claims to come from this node.
	ErrFromSelf = errors.New("epidemic: message from self")
)
