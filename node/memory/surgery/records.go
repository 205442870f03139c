package surgery

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/vmihailenco/msgpack/v5"
)

// The signed records of surgery: an edit (editBody) and an approval or
// rejection (decisionBody), each sealed by the node key of its signer in a
// canonical msgpack form, decoded and checked before they count. Their
// admission, precedence and the operations are in surgery.go.

// editBody is the signed content of an edit; its msgpack array form is
// canonical (decode re-encodes and compares), so the id is stable.
type editBody struct {
	_msgpack      struct{} `msgpack:",as_array"`
	Version       uint8
	Namespace     string
	Target        string
	Op            string
	Reason        string
	Proposer      string
	Key           []byte // the signing node's ed25519 public key
	Text          *string
	Importance    *float64
	Delta         *float64
	Channel       string
	TS            uint64
	NeedsApproval bool
}

type sealedEdit struct {
	_msgpack struct{} `msgpack:",as_array"`
	Body     editBody
	Sig      []byte
}

// decisionBody is the signed content of an approval or rejection.
type decisionBody struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Version   uint8
	Namespace string
	Edit      string // the edit id
	Approve   bool
	Approver  string
	Key       []byte
	TS        uint64
}

type sealedDecision struct {
	_msgpack struct{} `msgpack:",as_array"`
	Body     decisionBody
	Sig      []byte
}

// seal signs body (domain-separated) and returns the encoding of
// [body, sig] built by wrap, and the id: hex of the first 16 bytes of the
// sha256 of the signed bytes.
func seal(id acl.Identity, domain string, body any, wrap func(sig []byte) any) (enc []byte, sid string, err error) {
	signed, err := signedBytes(domain, body)
	if err != nil {
		return nil, "", err
	}
	enc, err = msgpack.Marshal(wrap(id.Sign(signed)))
	return enc, sealID(signed), err
}

func signedBytes(domain string, body any) ([]byte, error) {
	b, err := msgpack.Marshal(body)
	if err != nil {
		return nil, err
	}
	return append([]byte(domain), b...), nil
}

func sealID(signed []byte) string {
	sum := sha256.Sum256(signed)
	return hex.EncodeToString(sum[:16])
}

// unseal decodes b into v (a *sealedEdit or *sealedDecision) and insists
// on the canonical encoding. Errors wrap memapi.ErrInvalid.
func unseal(b []byte, v any) error {
	if len(b) > maxSealedBytes {
		return invalid("sealed record of %d bytes (max %d)", len(b), maxSealedBytes)
	}
	if err := crdt.CheckMsgpack(b, 8); err != nil { // lengths checked before msgpack allocates them
		return invalid("sealed record does not decode: %v", err)
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return invalid("sealed record does not decode: %v", err)
	}
	if re, err := msgpack.Marshal(v); err != nil || !bytes.Equal(re, b) {
		return invalid("sealed record is not canonically encoded")
	}
	return nil
}

// verifySeal checks sig by key over body and returns the record's id.
// Errors wrap memapi.ErrInvalid and acl.ErrBadSignature.
// A seal that verified before is found in seals (nil: verify every time).
func verifySeal(seals *crdt.SealCache, domain string, body any, key, sig []byte) (string, error) {
	signed, err := signedBytes(domain, body)
	if err != nil {
		return "", invalid("sealed record: %v", err)
	}
	if len(key) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize || !seals.Verify(key, signed, sig) {
		return "", fmt.Errorf("%w: %w: sealed record %s does not verify", memapi.ErrInvalid, acl.ErrBadSignature, sealID(signed))
	}
	return sealID(signed), nil
}

func decodeEdit(seals *crdt.SealCache, b []byte) (editBody, string, error) {
	var se sealedEdit
	if err := unseal(b, &se); err != nil {
		return se.Body, "", err
	}
	if err := se.Body.check(); err != nil {
		return se.Body, "", err
	}
	id, err := verifySeal(seals, editDomain, &se.Body, se.Body.Key, se.Sig)
	return se.Body, id, err
}

func decodeDecision(seals *crdt.SealCache, b []byte) (decisionBody, string, error) {
	var sd sealedDecision
	if err := unseal(b, &sd); err != nil {
		return sd.Body, "", err
	}
	if err := sd.Body.check(); err != nil {
		return sd.Body, "", err
	}
	id, err := verifySeal(seals, decisionDomain, &sd.Body, sd.Body.Key, sd.Sig)
	return sd.Body, id, err
}

func checkAddress(field, v string, principal bool) error {
	ns, err := namespace.Parse(v)
	if err != nil || ns.String() != v {
		return invalid("%s %q is not a canonical address", field, v)
	}
	if principal && (ns.Kind != namespace.KindAgent || ns.Path != "") {
		return invalid("%s %q is not a principal (agent://NAME)", field, v)
	}
	return nil
}

func (b *editBody) check() error {
	if b.Version != sealVersion {
		return invalid("edit version %d", b.Version)
	}
	if err := checkAddress("namespace", b.Namespace, false); err != nil {
		return err
	}
	if err := checkAddress("proposer", b.Proposer, true); err != nil {
		return err
	}
	if b.Target == "" || len(b.Target) > memapi.MaxKeyBytes || schema.IsReserved(b.Target) {
		return invalid("edit target %q", b.Target)
	}
	return checkEdit(b.Op, b.Reason, b.patch())
}

func (b *editBody) patch() memapi.EditPatch {
	return memapi.EditPatch{Text: b.Text, Importance: b.Importance, ImportanceDelta: b.Delta, Channel: b.Channel}
}

func (b *decisionBody) check() error {
	if b.Version != sealVersion {
		return invalid("decision version %d", b.Version)
	}
	if err := checkAddress("namespace", b.Namespace, false); err != nil {
		return err
	}
	if err := checkAddress("approver", b.Approver, true); err != nil {
		return err
	}
	if len(b.Edit) != 32 {
		return invalid("decision names edit %q", b.Edit)
	}
	return nil
}

// checkEdit validates an op, its reason and its patch. Errors wrap
// memapi.ErrInvalid (memapi.ErrTooLarge for over-long text).
func checkEdit(op, reason string, p memapi.EditPatch) error {
	if strings.TrimSpace(reason) == "" {
		return invalid("reason is required: say why the memory is edited")
	}
	if len(reason) > memapi.MaxReasonBytes {
		return invalid("reason is %d bytes (max %d)", len(reason), memapi.MaxReasonBytes)
	}
	finite01 := func(name string, v *float64, lo float64) error {
		if v != nil && (math.IsNaN(*v) || *v < lo || *v > 1) {
			return invalid("%s must be %g..1, got %v", name, lo, *v)
		}
		return nil
	}
	if err := finite01("patch.importance", p.Importance, 0); err != nil {
		return err
	}
	if err := finite01("patch.importance_delta", p.ImportanceDelta, -1); err != nil {
		return err
	}
	only := func(allowed ...string) error {
		for _, f := range []struct {
			name string
			set  bool
		}{{"text", p.Text != nil}, {"importance", p.Importance != nil}, {"importance_delta", p.ImportanceDelta != nil}, {"channel", p.Channel != ""}} {
			if f.set && !slices.Contains(allowed, f.name) {
				return invalid("%s takes no patch.%s", op, f.name)
			}
		}
		return nil
	}
	switch op {
	case memapi.OpRetract, memapi.OpQuarantine:
		return only()
	case memapi.OpAmend:
		if p.Text == nil && p.Importance == nil {
			return invalid("amend needs patch.text or patch.importance")
		}
		if p.Text != nil {
			if strings.TrimSpace(*p.Text) == "" {
				return invalid("amend: patch.text is empty")
			}
			if len(*p.Text) > memapi.MaxContentBytes {
				return fmt.Errorf("%w: patch.text is %d bytes (max %d)", memapi.ErrTooLarge, len(*p.Text), memapi.MaxContentBytes)
			}
		}
		return only("text", "importance")
	case memapi.OpAttenuate:
		if (p.Importance == nil) == (p.ImportanceDelta == nil) {
			return invalid("attenuate needs exactly one of patch.importance (absolute) or patch.importance_delta")
		}
		return only("importance", "importance_delta")
	case memapi.OpBlock:
		if p.Channel == "" {
			return invalid("block needs patch.channel (one of %s)", strings.Join(memapi.Channels, ", "))
		}
		if err := memapi.OneOf("patch.channel", p.Channel, memapi.Channels); err != nil {
			return err
		}
		return only("channel")
	case "":
		return invalid("op is required (one of %s)", strings.Join(memapi.EditOps, ", "))
	}
	return invalid("unknown op %q (one of %s)", op, strings.Join(memapi.EditOps, ", "))
}
