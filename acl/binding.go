package acl

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/vmihailenco/msgpack/v5"
)

// A Binding says which node hosts an agent: it binds a principal to the
// node key that may act for it. A claim is signed by the hosting key itself;
// a hand-over, which moves an agent to another node, is signed by the key
// that hosted it until then (From). Bindings are how every node decides
// "may peer P read or write as agent://alice": from verified records, never
// from what a member advertises.
type Binding struct {
	Principal namespace.Address // an agent root
	Key       ed25519.PublicKey // the hosting node's key
	From      ed25519.PublicKey // hand-over: the previous host, who signs; nil for a claim (Key signs)
	TS        crdt.Timestamp    // the signer's clock: orders hand-overs of one principal
	Sig       []byte
}

// MaxBindingBytes bounds one encoded binding.
const MaxBindingBytes = 1 << 10

const bindingDomain = "mnemo/acl/binding/v1\x00"

// ErrHostedElsewhere reports a claim for a principal another node's key
// already hosts. The claim does not count; the existing binding stays.
var ErrHostedElsewhere = errors.New("acl: principal is hosted by another node")

// NewBinding returns host's claim that it hosts principal.
func NewBinding(host Identity, principal namespace.Address, ts crdt.Timestamp) (Binding, error) {
	b := Binding{Principal: principal, Key: slices.Clone(host.Public), TS: ts}
	return b.sign(host)
}

// NewHandover returns from's hand-over of principal to the node key to.
func NewHandover(from Identity, principal namespace.Address, to ed25519.PublicKey, ts crdt.Timestamp) (Binding, error) {
	b := Binding{Principal: principal, Key: slices.Clone(to), From: slices.Clone(from.Public), TS: ts}
	return b.sign(from)
}

func (b Binding) sign(signer Identity) (Binding, error) {
	if !signer.valid() {
		return Binding{}, fmt.Errorf("%w: signer identity has no valid key pair", ErrInvalid)
	}
	if err := b.check(); err != nil {
		return Binding{}, err
	}
	b.Sig = signer.Sign(b.signedBytes())
	return b, nil
}

// Signer is the key that signs b: From for a hand-over, else Key.
func (b Binding) Signer() ed25519.PublicKey {
	if len(b.From) > 0 {
		return b.From
	}
	return b.Key
}

func (b Binding) check() error {
	if !isPrincipal(b.Principal) {
		return fmt.Errorf("%w: binding of %q, not an agent root", ErrInvalid, b.Principal)
	}
	if len(b.Key) != ed25519.PublicKeySize || len(b.From) != 0 && len(b.From) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: binding keys of the wrong size", ErrInvalid)
	}
	if bytes.Equal(b.Key, b.From) {
		return fmt.Errorf("%w: hand-over of %s to the key that holds it", ErrInvalid, b.Principal)
	}
	return nil
}

type wireBinding struct {
	_msgpack struct{} `msgpack:",as_array"`
	V        uint8
	P        string
	K        []byte
	F        []byte
	TS       uint64
	Sig      []byte
}

func (b Binding) wire(withSig bool) wireBinding {
	w := wireBinding{V: 1, P: b.Principal.String(), K: nonNil(b.Key), F: nonNil(b.From), TS: uint64(b.TS)}
	if withSig {
		w.Sig = nonNil(b.Sig)
	} else {
		w.Sig = []byte{}
	}
	return w
}

func (b Binding) signedBytes() []byte {
	enc, _ := msgpack.Marshal(b.wire(false))
	return append([]byte(bindingDomain), enc...)
}

// Encode returns the canonical encoding: a msgpack array
// [version, principal, key, from, ts, sig].
func (b Binding) Encode() []byte {
	enc, _ := msgpack.Marshal(b.wire(true))
	return enc
}

// DecodeBinding decodes Encode's output, at most MaxBindingBytes. It checks
// the structure, not the signature (Verify). Errors wrap ErrCorrupt; every
// accepted input re-encodes to the same bytes.
func DecodeBinding(raw []byte) (Binding, error) {
	if len(raw) > MaxBindingBytes {
		return Binding{}, fmt.Errorf("%w: binding of %d bytes, more than %d", ErrCorrupt, len(raw), MaxBindingBytes)
	}
	if err := crdt.CheckMsgpack(raw, 2); err != nil {
		return Binding{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	var w wireBinding
	if err := msgpack.Unmarshal(raw, &w); err != nil {
		return Binding{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	p, err := namespace.ParsePrincipal(w.P)
	if err != nil || w.V != 1 {
		return Binding{}, fmt.Errorf("%w: binding principal %q or version %d", ErrCorrupt, shorten(w.P), w.V)
	}
	b := Binding{Principal: p, Key: w.K, TS: crdt.Timestamp(w.TS), Sig: w.Sig}
	if len(w.F) > 0 {
		b.From = w.F
	}
	if err := b.check(); err != nil {
		return Binding{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if !bytes.Equal(b.Encode(), raw) {
		return Binding{}, fmt.Errorf("%w: binding not in canonical form", ErrCorrupt)
	}
	return b, nil
}

// Verify checks the binding's structure and signature; errors wrap
// ErrInvalid or ErrBadSignature.
func (b Binding) Verify() error { return b.verify(nil) }

// verify is Verify with the signatures verified before found in seals
// (nil: verify every time).
func (b Binding) verify(seals *crdt.SealCache) error {
	if err := b.check(); err != nil {
		return err
	}
	if len(b.Sig) != ed25519.SignatureSize || !seals.Verify(b.Signer(), b.signedBytes(), b.Sig) {
		return fmt.Errorf("%w: binding of %s", ErrBadSignature, b.Principal)
	}
	return nil
}

// String describes the binding for logs.
func (b Binding) String() string {
	if len(b.From) > 0 {
		return fmt.Sprintf("hand-over of %s from node %s to node %s", b.Principal, NodeIDOf(b.From), NodeIDOf(b.Key))
	}
	return fmt.Sprintf("%s hosted by node %s", b.Principal, NodeIDOf(b.Key))
}

// Directory is what a node believes about who hosts which agent: one
// binding per principal. The first claim a node admits for a principal
// stands (trust on first use, kept across restarts by the node); a claim by
// another key is refused with ErrHostedElsewhere and changes nothing, so a
// member cannot take over an agent, nor change anybody's existing grants,
// by claiming its name. Only a hand-over signed by the current host, newer
// than the binding it replaces, moves an agent. Not safe for concurrent
// use.
type Directory struct {
	by    map[namespace.Address]int // the current binding of each principal: its index in log
	log   []*Binding                // every binding admitted, in order; never modified
	seals *crdt.SealCache           // SetSeals; nil: verify each binding admitted
	table *BindingTable             // SetTable; nil: a copy of its own of each binding
}

// NewDirectory returns an empty directory.
func NewDirectory() *Directory { return &Directory{by: map[namespace.Address]int{}} }

// SetSeals makes Admit look a binding's signature up in seals, and
// remember it there once verified. A node admits each binding once, so it
// needs none; the simulator shares one between its nodes, as every node
// verifies the same bindings with the same result.
func (d *Directory) SetSeals(seals *crdt.SealCache) { d.seals = seals }

// SetTable makes the directory keep t's copy of each binding it admits
// (the bindings admitted already too) instead of one of its own. A node
// needs none; the simulator shares one between its nodes, each of which
// admits the very same N bindings (a copy each was N² bindings in all).
func (d *Directory) SetTable(t *BindingTable) {
	d.table = t
	for i, b := range d.log {
		d.log[i] = t.intern(b)
	}
}

// current is p's binding, nil if none.
func (d *Directory) current(p namespace.Address) *Binding {
	if i, ok := d.by[p]; ok {
		return d.log[i]
	}
	return nil
}

// Admit verifies b and adds it. changed reports whether a binding was added
// or moved. A second claim by the key already bound, or a hand-over already
// applied, is a no-op. Errors wrap ErrInvalid, ErrBadSignature or
// ErrHostedElsewhere, and then nothing changes.
func (d *Directory) Admit(b Binding) (changed bool, err error) {
	cur := d.current(b.Principal)
	if cur != nil && cur.same(b) {
		return false, nil // verified when it was admitted: every member resends it every interval
	}
	if err := b.verify(d.seals); err != nil {
		return false, err
	}
	switch {
	case cur == nil:
		// A hand-over for a principal this node never saw claimed binds
		// it too: the previous host signed it away.
	case bytes.Equal(cur.Key, b.Key):
		return false, nil
	case len(b.From) > 0 && bytes.Equal(cur.Key, b.From) && b.TS > cur.TS:
	default:
		return false, fmt.Errorf("%w: %s is hosted by node %s; node %s's claim does not count",
			ErrHostedElsewhere, b.Principal, NodeIDOf(cur.Key), NodeIDOf(b.Key))
	}
	d.by[b.Principal] = len(d.log)
	d.log = append(d.log, d.table.intern(&b))
	return true, nil
}

// same reports whether b and o are the same signed binding.
func (b Binding) same(o Binding) bool {
	return b.Principal == o.Principal && b.TS == o.TS && bytes.Equal(b.Key, o.Key) &&
		bytes.Equal(b.From, o.From) && bytes.Equal(b.Sig, o.Sig)
}

// Hosted reports whether key hosts p or hosted it before a hand-over: the
// writes p made through key then are p's.
func (d *Directory) Hosted(p namespace.Address, key ed25519.PublicKey) bool {
	for _, b := range d.log {
		if b.Principal == p && b.Key.Equal(key) {
			return true
		}
	}
	return false
}

// KeyOf returns the key that hosts p; it is an acl.KeyLookup.
func (d *Directory) KeyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	if b := d.current(p); b != nil {
		return b.Key, true
	}
	return nil, false
}

// PrincipalsOf lists, sorted, the principals key hosts.
func (d *Directory) PrincipalsOf(key ed25519.PublicKey) []namespace.Address {
	var out []namespace.Address
	for p, i := range d.by {
		if bytes.Equal(d.log[i].Key, key) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b namespace.Address) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Bindings lists every binding admitted, hand-overs after what they
// replace: admitted in this order, they rebuild the directory. Their
// slices are the directory's: callers must not modify them.
func (d *Directory) Bindings() []Binding { return d.BindingsSince(0) }

// BindingsSince is Bindings from the nth binding admitted on: a caller
// indexing the directory reads only what it added since (it only appends).
func (d *Directory) BindingsSince(n int) []Binding {
	log := d.log[min(n, len(d.log)):]
	out := make([]Binding, len(log))
	for i, b := range log {
		out[i] = *b
	}
	return out
}

// BindingTable holds one immutable copy of each binding for the
// directories that share it (Directory.SetTable), keyed by its encoding:
// the simulator's nodes each admit every node's claim, and each kept its
// own copy of every one (with the index by principal, 38 MB of the live
// heap at 300 nodes). At most its capacity of bindings are shared; a
// directory keeps its own copy of the rest. Safe for concurrent use; a
// nil *BindingTable shares nothing.
type BindingTable struct {
	mu  sync.Mutex
	max int
	by  map[string]*Binding
}

// NewBindingTable returns a table of at most capacity bindings (default
// 65536).
func NewBindingTable(capacity int) *BindingTable {
	if capacity <= 0 {
		capacity = 1 << 16
	}
	return &BindingTable{max: capacity, by: map[string]*Binding{}}
}

// intern returns the table's copy of b (made from b if it has none), or,
// without a table or past its capacity, a copy of b's own.
func (t *BindingTable) intern(b *Binding) *Binding {
	own := func() *Binding {
		c := *b
		c.Key, c.From, c.Sig = slices.Clone(b.Key), slices.Clone(b.From), slices.Clone(b.Sig)
		return &c
	}
	if t == nil {
		return own()
	}
	k := string(b.Encode())
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.by[k]; ok {
		return s
	}
	if len(t.by) >= t.max {
		return own()
	}
	s := own()
	t.by[k] = s
	return s
}
