package memory

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// aclDelta is a peer's delta carrying rec, stored as id (default its own).
func aclDelta(t *testing.T, rec acl.SignedRecord, at crdt.Timestamp) *crdt.Map {
	t.Helper()
	d := crdt.NewMap()
	e, err := d.Edit(99, schema.ACLPrefix+rec.ID(), crdt.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(at, schema.FieldKind, []byte(schema.KindACL)); err != nil {
		t.Fatal(err)
	}
	if err := e.Set(at, schema.FieldACL, rec.Encode()); err != nil {
		t.Fatal(err)
	}
	d.Join(e.Delta())
	return d
}

// TestRemoteACLVerifiedOnce: an acl record arriving from a peer is met by
// the delta's policy (PolicyWithDelta), the gate (checkRemoteACL), and
// admission (Policy.Verify, Book.AddRecord) — and its signature is
// verified once on the node; sent again, not at all. A tampered copy —
// another signature over the same body, or the same signature over
// another body — is still refused on every one of those paths after the
// genuine record was verified.
func TestRemoteACLVerifiedOnce(t *testing.T) {
	s, _ := openAccess(t, t.TempDir(), 0)
	alice, eve := accAgent("alice"), accAgent("eve")
	ns := alice.Principal
	at := crdt.MakeTimestamp(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).UnixMilli(), 0)
	grant, err := acl.NewGrant(s.Identity(), alice.Principal, ns, eve.Principal, []acl.Permission{acl.Read}, nil, at)
	if err != nil {
		t.Fatal(err)
	}
	verified := s.acl.sigs.Verified

	before := verified()
	d := aclDelta(t, grant, at)
	if p := s.PolicyWithDelta(ns.String(), d); p == nil || !p.Allowed(eve.Principal, ns, acl.Read) {
		t.Fatal("the delta's policy does not count its grant")
	}
	if err := s.ApplyRemote(ns.String(), d); err != nil {
		t.Fatal(err)
	}
	if !s.Policy().Allowed(eve.Principal, ns, acl.Read) {
		t.Fatal("the grant applied does not count")
	}
	if n := verified() - before; n != 1 {
		t.Fatalf("a new acl record was verified %d times, want once", n)
	}
	again := aclDelta(t, grant, at+1) // as a sync answer resends it
	if p := s.PolicyWithDelta(ns.String(), again); p != nil && !p.Allowed(eve.Principal, ns, acl.Read) {
		t.Fatal("the record sent again changed the delta's policy")
	}
	if err := s.ApplyRemote(ns.String(), again); err != nil {
		t.Fatal(err)
	}
	if n := verified() - before; n != 1 {
		t.Fatalf("a record sent again was verified again (%d in all)", n)
	}

	flipped := grant
	flipped.Sig = slices.Clone(grant.Sig)
	flipped.Sig[7] ^= 1
	widened := grant
	widened.Perms = acl.AllPermissions() // the signature no longer covers it
	for name, bad := range map[string]acl.SignedRecord{"another signature": flipped, "another body": widened} {
		d := aclDelta(t, bad, at+2)
		if err := s.Policy().Verify(bad); !errors.Is(err, acl.ErrBadSignature) {
			t.Errorf("%s: Policy.Verify: %v, want ErrBadSignature", name, err)
		}
		if p := s.PolicyWithDelta(ns.String(), d); p != nil && p.Allowed(eve.Principal, ns, acl.Write) {
			t.Errorf("%s: the delta's policy counts it", name)
		}
		if err := s.ApplyRemote(ns.String(), d); !errors.Is(err, acl.ErrBadSignature) {
			t.Errorf("%s: ApplyRemote: %v, want ErrBadSignature", name, err)
		}
		// Into the store past the gate: admission refuses it.
		err := s.write(func(tx *store.Tx) error {
			id := schema.ACLPrefix + bad.ID()
			e, err := tx.Edit(ns.String(), id)
			if err != nil {
				return err
			}
			_, ts := s.now()
			if err := e.Set(ts, schema.FieldACL, bad.Encode()); err != nil {
				return err
			}
			tx.Commit(ns.String(), id, e)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.Policy().Allowed(eve.Principal, ns, acl.Write) {
			t.Fatalf("%s: admitted, it grants eve write", name)
		}
		s.acl.mu.Lock()
		for _, r := range s.acl.book.Records(ns) {
			if r.ID() == bad.ID() && slices.Equal(r.Sig, bad.Sig) {
				t.Errorf("%s: the book holds it", name)
			}
		}
		s.acl.mu.Unlock()
	}
}
