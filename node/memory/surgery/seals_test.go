package surgery

import (
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memapi"
)

// TestSharedSealsStillRefuse: with a seal cache (a node's own, or the
// simulator's shared one) an edit that verified decodes again, and one
// whose body or signature was changed since is refused, as without one.
func TestSharedSealsStillRefuse(t *testing.T) {
	seed := sha256.Sum256([]byte("surgery seals test"))
	id, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	body := editBody{Version: sealVersion, Namespace: "agent://alice", Target: "0123456789abcdef0123456789abcdef", Op: memapi.OpQuarantine,
		Reason: "leaked key", Proposer: "agent://alice", Key: id.Public, TS: 1}
	enc, eid, err := seal(id, editDomain, &body, func(sig []byte) any { return &sealedEdit{Body: body, Sig: sig} })
	if err != nil {
		t.Fatal(err)
	}
	var se sealedEdit
	if err := msgpack.Unmarshal(enc, &se); err != nil {
		t.Fatal(err)
	}
	reworded := se
	reworded.Body.Reason = "nothing leaked"
	flipped := se
	flipped.Sig = append([]byte(nil), se.Sig...)
	flipped.Sig[0] ^= 1
	for _, seals := range []*crdt.SealCache{nil, crdt.NewSealCache(0)} {
		for range 2 {
			if _, got, err := decodeEdit(seals, enc); err != nil || got != eid {
				t.Fatalf("cache %v: the edit: id %s err %v", seals != nil, got, err)
			}
		}
		for name, bad := range map[string]sealedEdit{"reworded": reworded, "flipped": flipped} {
			b, err := msgpack.Marshal(&bad)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := decodeEdit(seals, b); !errors.Is(err, acl.ErrBadSignature) {
				t.Errorf("cache %v: %s edit: %v, want ErrBadSignature", seals != nil, name, err)
			}
		}
	}
}
