package clustertest

import (
	"context"
	"crypto/ed25519"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mnemohq/mnemo/sync/epidemic"
	"github.com/mnemohq/mnemo/sync/wire"
)

// Transport is node/cluster's Transport, restated so this package need
// not import it.
type Transport interface {
	Send(ctx context.Context, addr string, key ed25519.PublicKey, frame []byte) error
	Addr() string
	Close() error
}

// prover is node/cluster's Prover, restated for the same reason.
type prover interface {
	Prove(ctx context.Context, addr string, key ed25519.PublicKey) error
}

// Tampering says what a HostileRelay does to the tree payloads of other
// authors it forwards.
type Tampering int

const (
	// Alter sends each one altered: in turn a byte of its delta flipped,
	// and another member named as its author.
	Alter Tampering = iota
	// Drop sends none of them, and reports each sent.
	Drop
	// AlterAndDrop drops every third and alters the others as Alter does.
	AlterAndDrop
)

// HostileRelay is a node's transport with a hostile relay's tampering in
// its send path. Only eager tree pushes of one delta by another author
// are touched (what a relay forwards); the node's own deltas, its
// announcements and every other frame go out as the node made them, so
// the relay stays a member in good standing to everyone who does not
// check what it forwards.
type HostileRelay struct {
	Transport
	codec *wire.Codec
	self  string
	how   Tampering

	mu     sync.Mutex
	others []string // members it may name as authors: given, then every author it relayed

	altered atomic.Int64
	dropped atomic.Int64
}

// NewHostileRelay wraps tr, the transport of the node whose id is self.
// others are members it may name as the authors of what it alters; with
// none given it names the authors of other payloads it has relayed.
func NewHostileRelay(tr Transport, self string, others []string, how Tampering) *HostileRelay {
	return &HostileRelay{Transport: tr, codec: wire.NewCodec(0), self: self, others: slices.Clone(others), how: how}
}

// Altered counts the payloads sent altered; Dropped those not sent.
func (h *HostileRelay) Altered() int64 { return h.altered.Load() }

// Dropped counts the payloads the relay reported sent and did not send.
func (h *HostileRelay) Dropped() int64 { return h.dropped.Load() }

// Send tampers with a relayed payload as the relay's Tampering says, and
// sends every other frame unchanged.
func (h *HostileRelay) Send(ctx context.Context, addr string, key ed25519.PublicKey, frame []byte) error {
	m, err := h.codec.Decode(frame)
	if err != nil || m.Kind != wire.KindTree || epidemic.Kind(m.Tree.Kind) != epidemic.KindGossip ||
		len(m.Deltas) != 1 || m.Deltas[0].Author == h.self {
		return h.Transport.Send(ctx, addr, key, frame)
	}
	nd := m.Deltas[0]
	if h.how == Drop || h.how == AlterAndDrop && (h.altered.Load()+h.dropped.Load())%3 == 2 {
		h.dropped.Add(1)
		return nil
	}
	n := h.altered.Add(1)
	if other := h.otherAuthor(nd.Author, n); n%2 == 1 && other != "" {
		nd.Author = other
	} else {
		nd.Delta = slices.Clone(nd.Delta)
		nd.Delta[len(nd.Delta)/2] ^= 0x20
	}
	m.Deltas[0] = nd
	if frame, err = h.codec.Encode(m); err != nil {
		return err
	}
	return h.Transport.Send(ctx, addr, key, frame)
}

// otherAuthor is a member other than author (and the relay) to name as
// the nth altered payload's author, rotating through those known; "" if
// none is known. An author not known yet is learnt.
func (h *HostileRelay) otherAuthor(author string, n int64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.others, author)
	if i < 0 {
		h.others = append(h.others, author)
		i = len(h.others) - 1
	}
	if len(h.others) < 2 {
		return ""
	}
	return h.others[(i+1+int(n/2)%(len(h.others)-1))%len(h.others)]
}

// Prove passes the wrapped transport's proof on (node/cluster's Prover);
// a transport without one proves nothing and returns nil.
func (h *HostileRelay) Prove(ctx context.Context, addr string, key ed25519.PublicKey) error {
	if p, ok := h.Transport.(prover); ok {
		return p.Prove(ctx, addr, key)
	}
	return nil
}

// StayEager keeps a hostile relay on every path of the trees it is in:
// the frames it wraps the delivery of never make it leave an eager link.
// A Plumtree node leaves one when told to (a prune) and when a payload
// comes to it twice (it prunes the second sender); a relay that drops
// both on arrival keeps pushing everything it gets over every link, as a
// member out to touch as many payloads as it can would. Without it, an
// honest overlay of a few nodes may settle with the relay a leaf of
// every tree (no payload of another author passes through it), and a
// test of what honest nodes do with a relay's tampering tests nothing.
type StayEager struct {
	codec *wire.Codec
	mu    sync.Mutex
	seen  map[[wire.TreeIDSize]byte]bool // payloads delivered once; cleared at stayEagerSeen
}

// stayEagerSeen bounds the payload ids a StayEager remembers.
const stayEagerSeen = 1 << 14

// NewStayEager returns a StayEager with nothing seen.
func NewStayEager() *StayEager {
	return &StayEager{codec: wire.NewCodec(0), seen: map[[wire.TreeIDSize]byte]bool{}}
}

// Deliver wraps a node's inbound delivery (node/cluster's
// Inbound.Deliver): prunes and payloads delivered before are dropped,
// every other frame passed on.
func (s *StayEager) Deliver(next func(from ed25519.PublicKey, frame []byte)) func(from ed25519.PublicKey, frame []byte) {
	return func(from ed25519.PublicKey, frame []byte) {
		if m, err := s.codec.Decode(frame); err == nil && m.Kind == wire.KindTree && m.Tree != nil {
			switch epidemic.Kind(m.Tree.Kind) {
			case epidemic.KindPrune:
				return
			case epidemic.KindGossip:
				if len(m.Deltas) == 1 && s.again(wire.RelayID(m.Deltas[0].RelayBytes())) {
					return
				}
			}
		}
		next(from, frame)
	}
}

// again reports whether id was delivered before, and remembers it.
func (s *StayEager) again(id [wire.TreeIDSize]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[id] {
		return true
	}
	if len(s.seen) >= stayEagerSeen {
		clear(s.seen)
	}
	s.seen[id] = true
	return false
}
