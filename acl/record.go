package acl

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/vmihailenco/msgpack/v5"
)

// Limits on records. See the package documentation.
const (
	MaxRecordBytes = 128 << 10 // one encoded record
	MaxAfter       = 1024      // revocation ids listed by one grant
)

const (
	recordVersion = 1
	// signDomain separates record signatures from anything else a node key signs.
	signDomain = "mnemo/acl/record/v1\x00"
	idLen      = 2 * sha256.Size // hex
)

// RecordKind says what a record does.
type RecordKind uint8

// The record kinds.
const (
	KindCreate RecordKind = iota + 1 // creates a team or project namespace; its signer becomes the root authority
	KindGrant                        // grants Perms on Namespace to Principal
	KindRevoke                       // revokes Perms on Namespace from Principal
)

// String returns "create", "grant" or "revoke".
func (k RecordKind) String() string {
	switch k {
	case KindCreate:
		return "create"
	case KindGrant:
		return "grant"
	case KindRevoke:
		return "revoke"
	}
	return fmt.Sprintf("RecordKind(%d)", uint8(k))
}

// SignedRecord is a creation, grant or revocation, signed by SignerKey. Its
// canonical encoding (Encode) is the element stored in the namespace's
// crdt.GSet; its ID is a hash of everything but the signature. Build records
// with NewCreate, NewGrant and NewRevoke, or DecodeRecord; a hand-built
// record is checked only when it is verified or added to a Book.
type SignedRecord struct {
	Kind      RecordKind
	Namespace namespace.Address // a root address: no path
	Signer    namespace.Address // the principal that signed (an agent root)
	SignerKey ed25519.PublicKey // the node key Signer is bound to
	Principal namespace.Address // grantee or revokee; zero for KindCreate
	Perms     []Permission      // sorted, no duplicates; empty for KindCreate
	// After lists, sorted, the ids of the revocations of (Namespace,
	// Principal, p) for p in Perms that the signer had seen; grants only.
	// A grant counts for p only if every counted revocation of p is listed.
	After []string
	TS    crdt.Timestamp // the signer's clock; shown, never used to decide
	Sig   []byte         // ed25519 over the domain-separated body
}

// NewCreate returns a creation record for the team or project namespace ns,
// signed by signer on behalf of creator.
func NewCreate(signer Identity, creator, ns namespace.Address, ts crdt.Timestamp) (SignedRecord, error) {
	r := SignedRecord{Kind: KindCreate, Namespace: ns, Signer: creator, SignerKey: signer.Public, TS: ts}
	return r.sign(signer)
}

// NewGrant returns a grant of perms on ns to principal, signed by signer on
// behalf of signerPrincipal. after lists the ids of the revocations of the
// same namespace, principal and permissions the signer has seen (see
// Book.Revocations); without them the grant does not outweigh those
// revocations. perms and after are sorted and deduplicated.
func NewGrant(signer Identity, signerPrincipal, ns, principal namespace.Address, perms []Permission, after []string, ts crdt.Timestamp) (SignedRecord, error) {
	a := slices.Clone(after)
	slices.Sort(a)
	r := SignedRecord{
		Kind: KindGrant, Namespace: ns, Signer: signerPrincipal, SignerKey: signer.Public,
		Principal: principal, Perms: normPerms(perms), After: slices.Compact(a), TS: ts,
	}
	return r.sign(signer)
}

// NewRevoke returns a revocation of perms on ns from principal, signed by
// signer on behalf of signerPrincipal. perms is sorted and deduplicated.
func NewRevoke(signer Identity, signerPrincipal, ns, principal namespace.Address, perms []Permission, ts crdt.Timestamp) (SignedRecord, error) {
	r := SignedRecord{
		Kind: KindRevoke, Namespace: ns, Signer: signerPrincipal, SignerKey: signer.Public,
		Principal: principal, Perms: normPerms(perms), TS: ts,
	}
	return r.sign(signer)
}

func (r SignedRecord) sign(signer Identity) (SignedRecord, error) {
	if !signer.valid() {
		return SignedRecord{}, fmt.Errorf("%w: signer identity has no valid key pair", ErrInvalid)
	}
	if err := r.check(); err != nil {
		return SignedRecord{}, err
	}
	r.Sig = signer.Sign(r.signedBytes())
	return r, nil
}

// ID is the record's content hash: lowercase hex of sha256 over the signed
// body (everything but the signature), 64 characters.
func (r SignedRecord) ID() string {
	sum := sha256.Sum256(r.signedBytes())
	return hex.EncodeToString(sum[:])
}

// Encode returns the canonical encoding, a msgpack array:
// [version, kind, namespace, signer, signer key, principal, [perms], [after], ts, sig].
// It is the bytes to store as the namespace's GSet element (as a string).
func (r SignedRecord) Encode() []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	_ = enc.EncodeArrayLen(10)
	r.body(enc)
	_ = enc.EncodeBytes(nonNil(r.Sig))
	return buf.Bytes()
}

// signedBytes is what the signature covers: the domain, then the body as a
// 9-element array.
func (r SignedRecord) signedBytes() []byte {
	var buf bytes.Buffer
	buf.WriteString(signDomain)
	enc := msgpack.NewEncoder(&buf)
	_ = enc.EncodeArrayLen(9)
	r.body(enc)
	return buf.Bytes()
}

func (r SignedRecord) body(enc *msgpack.Encoder) {
	_ = enc.EncodeUint(recordVersion)
	_ = enc.EncodeUint(uint64(r.Kind))
	_ = enc.EncodeString(r.Namespace.String())
	_ = enc.EncodeString(r.Signer.String())
	_ = enc.EncodeBytes(nonNil(r.SignerKey))
	_ = enc.EncodeString(r.Principal.String())
	_ = enc.EncodeArrayLen(len(r.Perms))
	for _, p := range r.Perms {
		_ = enc.EncodeUint(uint64(p))
	}
	_ = enc.EncodeArrayLen(len(r.After))
	for _, id := range r.After {
		_ = enc.EncodeString(id)
	}
	_ = enc.EncodeUint(uint64(r.TS))
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// VerifySignature checks that Sig is SignerKey's signature of the record.
// It says nothing about whether SignerKey belongs to Signer, nor whether
// Signer may do what the record does; a Policy decides that. The error wraps
// ErrBadSignature (or ErrInvalid for a malformed record).
func (r SignedRecord) VerifySignature() error {
	if err := r.check(); err != nil {
		return err
	}
	if len(r.Sig) == 0 {
		return fmt.Errorf("%w: %s %s is unsigned", ErrBadSignature, r.Kind, r.ID())
	}
	if len(r.Sig) != ed25519.SignatureSize || !ed25519.Verify(r.SignerKey, r.signedBytes(), r.Sig) {
		return fmt.Errorf("%w: %s %s by %s does not verify", ErrBadSignature, r.Kind, r.ID(), r.Signer)
	}
	return nil
}

// String summarises the record for logs: "grant read,write on team://x to agent://bob by agent://alice".
func (r SignedRecord) String() string {
	switch r.Kind {
	case KindCreate:
		return fmt.Sprintf("create %s by %s", r.Namespace, r.Signer)
	case KindRevoke:
		return fmt.Sprintf("revoke %s on %s from %s by %s", FormatPermissions(r.Perms), r.Namespace, r.Principal, r.Signer)
	}
	return fmt.Sprintf("%s %s on %s to %s by %s", r.Kind, FormatPermissions(r.Perms), r.Namespace, r.Principal, r.Signer)
}

// check validates the record's structure. Errors wrap ErrInvalid.
func (r SignedRecord) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if r.Kind < KindCreate || r.Kind > KindRevoke {
		return bad("unknown kind %d", uint8(r.Kind))
	}
	if !canonical(r.Namespace) || r.Namespace.IsZero() {
		return bad("namespace %q is not a valid address", r.Namespace)
	}
	if r.Namespace.Path != "" {
		return bad("namespace %s has a path; records name a root namespace and sub-paths inherit", r.Namespace)
	}
	if !isPrincipal(r.Signer) {
		return bad("signer %q is not a principal", r.Signer)
	}
	if len(r.SignerKey) != ed25519.PublicKeySize {
		return bad("signer key is %d bytes, want %d", len(r.SignerKey), ed25519.PublicKeySize)
	}
	if len(r.Sig) > ed25519.SignatureSize {
		return bad("signature is %d bytes, more than %d", len(r.Sig), ed25519.SignatureSize)
	}
	if r.Kind == KindCreate {
		if r.Namespace.Kind == namespace.KindAgent {
			return bad("agent namespace %s is owned by its agent and needs no creation record", r.Namespace)
		}
		if !r.Principal.IsZero() || len(r.Perms) > 0 || len(r.After) > 0 {
			return bad("a creation record has no principal, permissions or after list")
		}
		return nil
	}
	if !isPrincipal(r.Principal) {
		return bad("principal %q is not an agent root", r.Principal)
	}
	if len(r.Perms) == 0 {
		return bad("no permissions")
	}
	for i, p := range r.Perms {
		if !p.valid() {
			return bad("unknown permission %d", uint8(p))
		}
		if i > 0 && p <= r.Perms[i-1] {
			return bad("permissions not sorted and distinct")
		}
	}
	if r.Kind == KindRevoke && len(r.After) > 0 {
		return bad("a revocation has no after list")
	}
	if len(r.After) > MaxAfter {
		return bad("after lists %d ids, more than %d", len(r.After), MaxAfter)
	}
	for i, id := range r.After {
		if !validID(id) {
			return bad("after[%d] %q is not a record id", i, shorten(id))
		}
		if i > 0 && id <= r.After[i-1] {
			return bad("after list not sorted and distinct")
		}
	}
	return nil
}

func canonical(a namespace.Address) bool {
	if a.IsZero() {
		return true
	}
	_, err := a.MarshalText()
	return err == nil
}

func isPrincipal(a namespace.Address) bool {
	return a.Kind == namespace.KindAgent && a.Path == "" && !a.IsZero() && canonical(a)
}

func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// DecodeRecord decodes a canonical encoding written by Encode, at most
// MaxRecordBytes long. It checks the structure but not the signature (see
// VerifySignature, or Book.Add which does both). Errors wrap ErrCorrupt; it
// never panics, and every accepted input re-encodes to the same bytes.
func DecodeRecord(b []byte) (SignedRecord, error) {
	r, err := decodeRecord(b)
	if err != nil {
		return SignedRecord{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return r, nil
}

func decodeRecord(b []byte) (SignedRecord, error) {
	var r SignedRecord
	if len(b) > MaxRecordBytes {
		return r, fmt.Errorf("%d bytes, more than %d", len(b), MaxRecordBytes)
	}
	d := decoder{b: b}
	if n := d.arrayLen(); n != 10 && d.err == nil {
		return r, fmt.Errorf("array of %d elements, want 10", n)
	}
	if v := d.uint(); v != recordVersion && d.err == nil {
		return r, fmt.Errorf("unknown version %d", v)
	}
	kind := d.uint()
	if kind > 255 {
		kind = 0 // rejected by check
	}
	r.Kind = RecordKind(kind)
	r.Namespace = d.address("namespace")
	r.Signer = d.address("signer")
	r.SignerKey = d.bin(ed25519.PublicKeySize)
	r.Principal = d.address("principal")
	np := d.arrayLen()
	if np > int(Admin) && d.err == nil {
		return r, fmt.Errorf("%d permissions, more than %d", np, Admin)
	}
	for range np {
		p := d.uint()
		if p > 255 {
			p = 0
		}
		r.Perms = append(r.Perms, Permission(p))
	}
	na := d.arrayLen()
	if na > MaxAfter && d.err == nil {
		return r, fmt.Errorf("after lists %d ids, more than %d", na, MaxAfter)
	}
	for range na {
		r.After = append(r.After, d.str(idLen))
	}
	r.TS = crdt.Timestamp(d.uint())
	r.Sig = d.bin(ed25519.SignatureSize)
	if d.err != nil {
		return SignedRecord{}, d.err
	}
	if d.off != len(b) {
		return SignedRecord{}, fmt.Errorf("%d trailing bytes", len(b)-d.off)
	}
	if err := r.check(); err != nil {
		return SignedRecord{}, err
	}
	if !bytes.Equal(r.Encode(), b) {
		return SignedRecord{}, fmt.Errorf("not in canonical form")
	}
	return r, nil
}

// decoder reads the msgpack subset Encode writes. The first error sticks and
// every later read returns a zero value; lengths are checked against the
// bytes that remain before anything is allocated.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail("truncated")
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) be(n int) uint64 {
	var v uint64
	for _, c := range d.take(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (d *decoder) code() byte {
	p := d.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *decoder) arrayLen() int {
	c := d.code()
	var n uint64
	switch {
	case d.err != nil:
		return 0
	case c >= 0x90 && c <= 0x9f:
		n = uint64(c & 0x0f)
	case c == 0xdc:
		n = d.be(2)
	case c == 0xdd:
		n = d.be(4)
	default:
		d.fail("want an array, got code 0x%02x", c)
		return 0
	}
	if n > uint64(len(d.b)-d.off) { // every element takes at least a byte
		d.fail("array of %d elements exceeds the input", n)
		return 0
	}
	return int(n)
}

func (d *decoder) uint() uint64 {
	c := d.code()
	switch {
	case d.err != nil:
		return 0
	case c <= 0x7f:
		return uint64(c)
	case c == 0xcc:
		return d.be(1)
	case c == 0xcd:
		return d.be(2)
	case c == 0xce:
		return d.be(4)
	case c == 0xcf:
		return d.be(8)
	}
	d.fail("want an unsigned integer, got code 0x%02x", c)
	return 0
}

// raw reads a str (isStr) or bin header and its payload, at most limit bytes.
func (d *decoder) raw(isStr bool, limit int) []byte {
	c := d.code()
	var n uint64
	switch {
	case d.err != nil:
		return nil
	case isStr && c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case isStr && c == 0xd9, !isStr && c == 0xc4:
		n = d.be(1)
	case isStr && c == 0xda, !isStr && c == 0xc5:
		n = d.be(2)
	case isStr && c == 0xdb, !isStr && c == 0xc6:
		n = d.be(4)
	default:
		d.fail("want a string or bytes, got code 0x%02x", c)
		return nil
	}
	if n > uint64(limit) {
		d.fail("%d bytes, more than %d", n, limit)
		return nil
	}
	return d.take(int(n))
}

func (d *decoder) str(limit int) string { return string(d.raw(true, limit)) }

func (d *decoder) bin(limit int) []byte {
	p := d.raw(false, limit)
	if d.err != nil {
		return nil
	}
	return bytes.Clone(p)
}

func (d *decoder) address(what string) namespace.Address {
	s := d.str(namespace.MaxAddressLen)
	if d.err != nil || s == "" {
		return namespace.Address{}
	}
	a, err := namespace.Parse(s)
	if err != nil {
		d.fail("%s: %v", what, err)
		return namespace.Address{}
	}
	if a.String() != s {
		d.fail("%s %q not in canonical form", what, s)
	}
	return a
}
