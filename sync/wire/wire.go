package wire

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/vmihailenco/msgpack/v5"
)

// ErrCorrupt is the category of every frame decoding failure.
var ErrCorrupt = errors.New("wire: corrupt frame")

// Version is the protocol version carried in every frame header. Version 2
// signs every namespace delta and requires sealed records (crdt.Seal).
const Version = 2

// DefaultMaxFrame bounds a frame, compressed or not.
const DefaultMaxFrame = 16 << 20

// compressMin is the body size from which compression is tried.
const compressMin = 512

const flagZstd = 1

// Kind names a message type.
type Kind uint8

// Message kinds.
const (
	KindDeltas Kind = iota + 1
	KindAck
	KindSyncRequest
	KindSyncReply
	// KindBindings carries signed acl.Binding records (which node hosts
	// which agent). The node's cluster loop handles it, not the engine.
	KindBindings
	// KindTree carries one message of a namespace's epidemic broadcast
	// tree (sync/epidemic; Overlay and Tree): a relayed live delta in
	// Deltas[0] (its Author set), announcements, grafts, prunes or the
	// overlay's membership messages.
	KindTree
)

func (k Kind) String() string {
	switch k {
	case KindDeltas:
		return "deltas"
	case KindAck:
		return "ack"
	case KindSyncRequest:
		return "sync-request"
	case KindSyncReply:
		return "sync-reply"
	case KindBindings:
		return "bindings"
	case KindTree:
		return "tree"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// NamespaceDelta is one namespace's delta, in crdt.Map encoding.
type NamespaceDelta struct {
	Namespace string `msgpack:"n"`
	Delta     []byte `msgpack:"d"`
	// From is the first counter the sender created in this live delta
	// group (its dots from From on are its own new operations); 0 in sync
	// replies. Receivers use it to tell dependencies from new dots.
	From uint64 `msgpack:"f,omitempty"`
	// Sig is the sender's ed25519 signature over SignedBytes: the sender
	// vouches for the delta's causal-context claims (what it removes),
	// and a relay cannot alter them.
	Sig []byte `msgpack:"s,omitempty"`
	// Author is, in a KindTree message, the node id of the delta's author
	// (whose key Sig is by): a relayed delta is not its sender's. The
	// signature does not cover it; a wrong Author fails the signature
	// check. Empty elsewhere.
	Author string `msgpack:"a,omitempty"`
}

const deltaDomain = "mnemo/wire/delta/v2\x00"

// SignedBytes is what a namespace delta's signature covers: the message
// kind it travels in (live or sync), the namespace, From and the delta.
func (d *NamespaceDelta) SignedBytes(kind Kind) []byte {
	b := make([]byte, 0, len(deltaDomain)+1+4+len(d.Namespace)+8+len(d.Delta))
	b = append(b, deltaDomain...)
	b = append(b, byte(kind))
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Namespace)))
	b = append(b, d.Namespace...)
	b = binary.BigEndian.AppendUint64(b, d.From)
	return append(b, d.Delta...)
}

// Sign signs d for a message of kind.
func (d *NamespaceDelta) Sign(kind Kind, s crdt.Signer) { d.Sig = s.Sign(d.SignedBytes(kind)) }

// Verify reports whether d carries key's signature for a message of kind.
func (d *NamespaceDelta) Verify(kind Kind, key ed25519.PublicKey) bool {
	return len(key) == ed25519.PublicKeySize && len(d.Sig) == ed25519.SignatureSize &&
		ed25519.Verify(key, d.SignedBytes(kind), d.Sig)
}

// NamespaceContext is one namespace's causal context (crdt.Context encoding)
// and a digest of its retracted ids, so the peer can tell whether to send them.
type NamespaceContext struct {
	Namespace string `msgpack:"n"`
	Context   []byte `msgpack:"c"`
	Retracted uint64 `msgpack:"r"` // number of retracted ids
	RetSum    []byte `msgpack:"s"` // SHA-256 over the sorted retracted ids
}

// Message is the union of every protocol message; Kind says which fields
// are meaningful.
type Message struct {
	Kind     Kind               `msgpack:"k"`
	Seq      uint64             `msgpack:"q,omitempty"` // Deltas, Ack
	Deltas   []NamespaceDelta   `msgpack:"d,omitempty"` // Deltas, SyncReply
	Contexts []NamespaceContext `msgpack:"c,omitempty"` // SyncRequest, SyncReply (the sender's)
	Reply    bool               `msgpack:"r,omitempty"` // SyncRequest: the requester wants our context back too
	Bindings [][]byte           `msgpack:"b,omitempty"` // Bindings: encoded acl.Binding records
	// BindingsSum is, in a Bindings frame, a digest of every binding the
	// sender holds; a frame may carry it alone (a summary), and a peer
	// whose own digest differs answers with its bindings.
	BindingsSum []byte `msgpack:"bs,omitempty"`
	// BindingIDs is, in a Bindings frame, the sender's index: the short id
	// (BindingIDSize bytes of SHA-256 over the encoding) of every binding
	// it holds, so the peer sends only the bindings the sender lacks.
	BindingIDs [][]byte `msgpack:"bi,omitempty"`
	// BindingsOf is, in a Bindings frame, a pull: the replica ids (of
	// node keys, crdt.ReplicaOfKey) whose bindings the sender lacks to
	// check content the receiver sent it; the receiver answers with the
	// bindings it holds whose key is of one of them.
	BindingsOf []uint64 `msgpack:"bo,omitempty"`
	// Answer is, in a Bindings frame, set when it answers the receiver's
	// probe (a Bindings frame with Reply and no index): the receiver
	// learns its probe arrived.
	Answer bool `msgpack:"a,omitempty"`
	// Overlay is, in a KindTree message, the namespace whose broadcast
	// tree the message belongs to.
	Overlay string `msgpack:"o,omitempty"`
	// Tree is a KindTree message's epidemic fields.
	Tree *Tree `msgpack:"e,omitempty"`
}

// Tree mirrors an epidemic.Message (sync/epidemic says what each kind
// uses); wire keeps plain types so it imports no protocol logic. The
// payload of a gossip message travels as Message.Deltas[0], and its id is
// derived from it by the receiver (RelayID), never read from the wire.
type Tree struct {
	Kind     uint8          `msgpack:"k"`
	Origin   string         `msgpack:"o,omitempty"`
	Round    int            `msgpack:"r,omitempty"`
	IHave    []Announcement `msgpack:"h,omitempty"`
	IDs      [][]byte       `msgpack:"i,omitempty"`
	Peer     string         `msgpack:"p,omitempty"`
	TTL      int            `msgpack:"t,omitempty"`
	Priority bool           `msgpack:"y,omitempty"`
	Accept   bool           `msgpack:"a,omitempty"`
	Peers    []string       `msgpack:"s,omitempty"`
}

// Announcement names a relayed delta (RelayID) and the hops it took.
type Announcement struct {
	_msgpack struct{} `msgpack:",as_array"`
	ID       []byte
	Round    int
}

// TreeIDSize is the size of a relayed delta's id: the first half of a
// SHA-256. Ids travel in every announcement, want and graft (about half of
// an announcement frame's bytes at 32), and 128 bits keep them apart:
// finding two deltas of one id takes ~2^64 hashes, and would only keep
// the second off the trees (a duplicate to whoever holds the first),
// which the dots' digest sync repairs.
const TreeIDSize = 16

// RelayID is the id of the relayed delta whose RelayBytes are b: the
// first TreeIDSize bytes of their SHA-256. A receiver derives it; it
// never travels as the delta's name.
func RelayID(b []byte) [TreeIDSize]byte {
	sum := sha256.Sum256(b)
	return [TreeIDSize]byte(sum[:TreeIDSize])
}

// RelayBytes is the canonical encoding of a relayed live delta: its
// namespace, From, delta, signature and author. A tree names the delta by
// RelayID, the SHA-256 of these bytes, so equal ids mean equal deltas
// whatever encoding a relay chose for the frame.
func (d *NamespaceDelta) RelayBytes() []byte {
	b := make([]byte, 0, 4+len(d.Namespace)+8+4+len(d.Delta)+1+len(d.Sig)+1+len(d.Author))
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Namespace)))
	b = append(b, d.Namespace...)
	b = binary.BigEndian.AppendUint64(b, d.From)
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Delta)))
	b = append(b, d.Delta...)
	b = append(b, byte(len(d.Sig)))
	b = append(b, d.Sig...)
	b = append(b, byte(len(d.Author)))
	return append(b, d.Author...)
}

// ParseRelayBytes is RelayBytes' inverse; errors match ErrCorrupt.
func ParseRelayBytes(b []byte) (NamespaceDelta, error) {
	var d NamespaceDelta
	bad := func(what string) (NamespaceDelta, error) {
		return NamespaceDelta{}, fmt.Errorf("%w: relayed delta: %s", ErrCorrupt, what)
	}
	take := func(n int) ([]byte, bool) {
		if n < 0 || len(b) < n {
			return nil, false
		}
		v := b[:n:n]
		b = b[n:]
		return v, true
	}
	h, ok := take(4)
	if !ok {
		return bad("short")
	}
	ns, ok := take(int(binary.BigEndian.Uint32(h)))
	if !ok {
		return bad("namespace")
	}
	f, ok := take(8)
	if !ok {
		return bad("from")
	}
	if h, ok = take(4); !ok {
		return bad("short")
	}
	delta, ok := take(int(binary.BigEndian.Uint32(h)))
	if !ok {
		return bad("delta")
	}
	if h, ok = take(1); !ok {
		return bad("short")
	}
	sig, ok := take(int(h[0]))
	if !ok {
		return bad("signature")
	}
	if h, ok = take(1); !ok {
		return bad("short")
	}
	author, ok := take(int(h[0]))
	if !ok || len(b) != 0 {
		return bad("author")
	}
	d = NamespaceDelta{Namespace: string(ns), From: binary.BigEndian.Uint64(f), Delta: delta, Sig: sig, Author: string(author)}
	if len(sig) == 0 {
		d.Sig = nil
	}
	if len(delta) == 0 {
		d.Delta = nil
	}
	return d, nil
}

// BindingIDSize is the length of a binding's short id in BindingIDs.
const BindingIDSize = 16

// Size estimates the encoded size of a message (before compression).
func (m *Message) Size() int {
	n := 16
	for _, d := range m.Deltas {
		n += len(d.Namespace) + len(d.Delta) + len(d.Sig) + 8
	}
	for _, c := range m.Contexts {
		n += len(c.Namespace) + len(c.Context) + len(c.RetSum) + 16
	}
	for _, b := range m.Bindings {
		n += len(b) + 4
	}
	if t := m.Tree; t != nil {
		n += len(m.Overlay) + len(t.Origin) + len(t.Peer) + 8 + len(t.IHave)*(TreeIDSize+4) + len(t.IDs)*(TreeIDSize+2)
		for _, p := range t.Peers {
			n += len(p) + 2
		}
	}
	n += len(m.BindingsSum) + len(m.BindingIDs)*(BindingIDSize+2) + len(m.BindingsOf)*9
	return n
}

// Codec encodes and decodes frames. It is safe for concurrent use.
type Codec struct {
	maxFrame int
	// encMu guards enc, the zstd encoder the Codec keeps for its life
	// (made at the first frame it compresses; ~300 KB). Not a sync.Pool:
	// a GC empties a pool, and making an encoder (~110 µs) costs ten
	// times compressing a frame of a few KB with a warm one, so a node
	// whose pool a GC had emptied paid that on most frames it sent.
	// Concurrent Encodes take turns.
	encMu sync.Mutex
	enc   *zstd.Encoder
	dec   *zstd.Decoder
	// last is the last body compressed (up to lastMax bytes) and what it
	// compressed to, under encMu: a node relaying a delta down its
	// broadcast tree encodes the very same message for each eager peer,
	// and compression is a pure function of the body, so the same body
	// is compressed once (the frames stay byte for byte the same).
	last, lastPacked []byte
	// peekBufs holds the buffers Peek decompresses into: the namespaces
	// it returns are copies, so a buffer is free again when Peek returns.
	peekBufs sync.Pool
}

// lastMax bounds the body the Codec keeps to compress again: a relayed
// delta fits; a large sync answer, made for one peer, is not kept.
const lastMax = 64 << 10

// NewCodec returns a codec with the given frame limit (0 = DefaultMaxFrame).
func NewCodec(maxFrame int) *Codec {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(maxFrame)))
	if err != nil {
		panic(fmt.Sprintf("wire: zstd decoder: %v", err)) // only fails on invalid options
	}
	return &Codec{maxFrame: maxFrame, dec: dec}
}

// compress returns body compressed after the 1-byte header's room.
func (c *Codec) compress(body []byte) []byte {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.enc == nil {
		c.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithLowerEncoderMem(true)) // only fails on invalid options
	}
	if len(body) <= lastMax && bytes.Equal(body, c.last) {
		return append(make([]byte, 0, len(c.lastPacked)), c.lastPacked...)
	}
	packed := c.enc.EncodeAll(body, make([]byte, 1, 1+len(body)/2))
	if len(body) <= lastMax {
		c.last = append(c.last[:0], body...)
		c.lastPacked = append(c.lastPacked[:0], packed...)
	}
	return packed
}

// Encode returns the frame for m.
func (c *Codec) Encode(m *Message) ([]byte, error) {
	// The header's byte goes first, so a frame left uncompressed is the
	// buffer itself, not a copy of it; the buffer is sized from the
	// estimate plus the field names, so the encoder does not grow it by
	// doubling (most of what encoding a frame allocated).
	var buf bytes.Buffer
	buf.Grow(1 + m.Size() + 8*(len(m.Deltas)+len(m.Contexts)+len(m.Bindings)+len(m.BindingIDs)) + 32)
	buf.WriteByte(0)
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("wire: encode %v: %w", m.Kind, err)
	}
	frame := buf.Bytes()
	body := frame[1:]
	header := byte(Version << 4)
	if len(body) >= compressMin {
		packed := c.compress(body)
		if len(packed)-1 < len(body) {
			packed[0] = header | flagZstd
			if len(packed) > c.maxFrame {
				return nil, fmt.Errorf("wire: frame of %d bytes over the %d limit", len(packed), c.maxFrame)
			}
			return packed, nil
		}
	}
	if len(frame) > c.maxFrame {
		return nil, fmt.Errorf("wire: frame of %d bytes over the %d limit", len(frame), c.maxFrame)
	}
	frame[0] = header
	return frame, nil
}

// Decode parses a frame. Errors match ErrCorrupt.
func (c *Codec) Decode(frame []byte) (*Message, error) {
	body, err := c.body(frame, nil)
	if err != nil {
		return nil, err
	}
	var m Message
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := checkKind(m.Kind); err != nil {
		return nil, err
	}
	for _, d := range m.Deltas {
		if err := checkDeltaNamespace(d.Namespace); err != nil {
			return nil, err
		}
	}
	for _, x := range m.Contexts {
		if x.Namespace == "" || len(x.Namespace) > 512 || (len(x.RetSum) != 0 && len(x.RetSum) != 32) {
			return nil, fmt.Errorf("%w: bad namespace context", ErrCorrupt)
		}
	}
	for _, id := range m.BindingIDs {
		if len(id) != BindingIDSize {
			return nil, fmt.Errorf("%w: binding id of %d bytes", ErrCorrupt, len(id))
		}
	}
	if err := checkTree(&m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Glance is what Peek reads of a frame: its kind, the namespace of each
// delta it carries, and a KindTree message's epidemic kind (Tree.Kind).
type Glance struct {
	Kind       Kind
	Namespaces []string
	TreeKind   uint8 // a KindTree message's Tree.Kind; 0 for other kinds
}

// Peek returns a frame's kind, the namespace of each delta it carries and
// its tree kind, without copying out the deltas or decoding any other
// field: for a reader of every frame sent that needs no more (the
// simulator's read check and its count of tree frames by kind). Of a frame
// Encode made it returns what Decode would; it checks only what it reads,
// so it takes frames Decode refuses for their other fields. Errors match
// ErrCorrupt.
func (c *Codec) Peek(frame []byte) (Glance, error) {
	buf, _ := c.peekBufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer c.peekBufs.Put(buf)
	body, err := c.body(frame, (*buf)[:0])
	if err != nil {
		return Glance{}, err
	}
	if frame[0]&flagZstd != 0 && cap(body) > cap(*buf) && cap(body) <= 1<<20 {
		*buf = body[:0] // decompressed here: keep the larger buffer, up to 1 MiB
	}
	g, err := peekBody(body)
	if err != nil {
		return Glance{}, err
	}
	if err := checkKind(g.Kind); err != nil {
		return Glance{}, err
	}
	for _, ns := range g.Namespaces {
		if err := checkDeltaNamespace(ns); err != nil {
			return Glance{}, err
		}
	}
	return g, nil
}

// body returns a frame's body, decompressed (appended to dst), once the
// frame passed the checks every frame must: its size, version and flags,
// and every msgpack length against the bytes.
func (c *Codec) body(frame, dst []byte) ([]byte, error) {
	if len(frame) < 2 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(frame))
	}
	if len(frame) > c.maxFrame {
		return nil, fmt.Errorf("%w: %d bytes over the %d limit", ErrCorrupt, len(frame), c.maxFrame)
	}
	if v := frame[0] >> 4; v != Version {
		return nil, fmt.Errorf("%w: protocol version %d, want %d", ErrCorrupt, v, Version)
	}
	body := frame[1:]
	switch frame[0] & 0x0f {
	case 0:
	case flagZstd:
		var err error
		body, err = c.dec.DecodeAll(body, dst)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		if len(body) > c.maxFrame {
			return nil, fmt.Errorf("%w: body of %d bytes over the %d limit", ErrCorrupt, len(body), c.maxFrame)
		}
	default:
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, frame[0]&0x0f)
	}
	// msgpack allocates a container of the declared length before reading
	// it; check every length against the bytes first.
	if err := crdt.CheckMsgpack(body, 8); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return body, nil
}

func checkKind(k Kind) error {
	if k < KindDeltas || k > KindTree {
		return fmt.Errorf("%w: unknown message kind %d", ErrCorrupt, k)
	}
	return nil
}

func checkDeltaNamespace(ns string) error {
	if ns == "" || len(ns) > 512 {
		return fmt.Errorf("%w: bad namespace in delta", ErrCorrupt)
	}
	return nil
}

func newEnc(buf *bytes.Buffer) *msgpack.Encoder {
	e := msgpack.NewEncoder(buf)
	e.UseCompactInts(true)
	return e
}

// checkTree checks a KindTree message's shape: an overlay, its fields, ids
// of TreeIDSize bytes, and a relayed delta of that overlay's namespace
// with its author; other kinds carry no tree fields.
func checkTree(m *Message) error {
	if m.Kind != KindTree {
		if m.Tree != nil || m.Overlay != "" {
			return fmt.Errorf("%w: tree fields in a %v message", ErrCorrupt, m.Kind)
		}
		for _, d := range m.Deltas {
			if d.Author != "" {
				return fmt.Errorf("%w: an author in a %v message", ErrCorrupt, m.Kind)
			}
		}
		return nil
	}
	t := m.Tree
	if t == nil || m.Overlay == "" || len(m.Overlay) > 512 || len(m.Deltas) > 1 {
		return fmt.Errorf("%w: tree message without its overlay and fields", ErrCorrupt)
	}
	for _, d := range m.Deltas {
		if d.Namespace != m.Overlay || d.Author == "" || len(d.Author) > 255 || len(d.Sig) > 255 {
			return fmt.Errorf("%w: relayed delta not of its overlay or without its author", ErrCorrupt)
		}
	}
	for _, a := range t.IHave {
		if len(a.ID) != TreeIDSize {
			return fmt.Errorf("%w: tree id of %d bytes", ErrCorrupt, len(a.ID))
		}
	}
	for _, id := range t.IDs {
		if len(id) != TreeIDSize {
			return fmt.Errorf("%w: tree id of %d bytes", ErrCorrupt, len(id))
		}
	}
	return nil
}
