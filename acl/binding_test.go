package acl

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
)

func bindingIdentity(t *testing.T, seed byte) Identity {
	t.Helper()
	id, err := IdentityFromSeed(bytes.Repeat([]byte{seed}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Finding 1 of the trust issue: a second node claiming a bound principal is
// refused and nothing changes; only the current host's hand-over moves it.
func TestDirectoryFirstClaimStands(t *testing.T) {
	alice := namespace.MustParse("agent://alice")
	a, b, c := bindingIdentity(t, 1), bindingIdentity(t, 2), bindingIdentity(t, 3)
	d := NewDirectory()
	claimA, _ := NewBinding(a, alice, 10)
	if changed, err := d.Admit(claimA); err != nil || !changed {
		t.Fatalf("first claim: changed=%v err=%v", changed, err)
	}
	if changed, err := d.Admit(claimA); err != nil || changed {
		t.Fatalf("repeated claim: changed=%v err=%v", changed, err)
	}
	tampered := claimA
	tampered.Sig = slices.Clone(claimA.Sig)
	tampered.Sig[0] ^= 1
	if _, err := d.Admit(tampered); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("the held claim with a bad signature: %v, want ErrBadSignature", err)
	}
	claimB, _ := NewBinding(b, alice, 1) // back-dated, too
	if _, err := d.Admit(claimB); !errors.Is(err, ErrHostedElsewhere) {
		t.Fatalf("second node's claim: %v, want ErrHostedElsewhere", err)
	}
	// b forges a hand-over from a to itself: signed by b, not a
	forged := Binding{Principal: alice, Key: b.Public, From: a.Public, TS: 20}
	forged.Sig = b.Sign(forged.signedBytes())
	if _, err := d.Admit(forged); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("forged hand-over: %v", err)
	}
	if k, _ := d.KeyOf(alice); !bytes.Equal(k, a.Public) {
		t.Fatal("binding moved")
	}
	// a hands alice over to c; a stale re-claim by a is then refused
	ho, err := NewHandover(a, alice, c.Public, 30)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := d.Admit(ho); err != nil || !changed {
		t.Fatalf("hand-over: changed=%v err=%v", changed, err)
	}
	if k, _ := d.KeyOf(alice); !bytes.Equal(k, c.Public) {
		t.Fatal("hand-over did not move alice")
	}
	if _, err := d.Admit(claimA); !errors.Is(err, ErrHostedElsewhere) {
		t.Fatalf("old host's claim after its hand-over: %v", err)
	}
	if got := d.PrincipalsOf(c.Public); len(got) != 1 || got[0] != alice {
		t.Fatalf("PrincipalsOf(c) = %v", got)
	}
	if !d.Hosted(alice, a.Public) || !d.Hosted(alice, c.Public) || d.Hosted(alice, b.Public) {
		t.Fatal("Hosted does not follow the hand-over history")
	}
	// the log rebuilds the same directory
	again := NewDirectory()
	for _, x := range d.Bindings() {
		if _, err := again.Admit(x); err != nil {
			t.Fatal(err)
		}
	}
	if k, _ := again.KeyOf(alice); !bytes.Equal(k, c.Public) {
		t.Fatal("replayed log does not end at the hand-over")
	}
}

func TestBindingEncoding(t *testing.T) {
	a, c := bindingIdentity(t, 1), bindingIdentity(t, 3)
	claim, _ := NewBinding(a, namespace.MustParse("agent://alice"), 10)
	ho, _ := NewHandover(a, namespace.MustParse("agent://alice"), c.Public, 11)
	for _, b := range []Binding{claim, ho} {
		back, err := DecodeBinding(b.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if err := back.Verify(); err != nil {
			t.Fatal(err)
		}
		raw := b.Encode()
		raw[len(raw)-1] ^= 1
		if back, err := DecodeBinding(raw); err == nil && back.Verify() == nil {
			t.Fatal("altered signature verifies")
		}
	}
}

func FuzzDecodeBinding(f *testing.F) {
	a, _ := IdentityFromSeed(bytes.Repeat([]byte{1}, 32))
	claim, _ := NewBinding(a, namespace.MustParse("agent://alice"), 10)
	f.Add(claim.Encode())
	f.Add([]byte{0x96, 1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := DecodeBinding(raw)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if !bytes.Equal(b.Encode(), raw) {
			t.Fatal("accepted input does not re-encode to itself")
		}
		_ = b.Verify()
		_, _ = NewDirectory().Admit(b)
	})
}

// TestDirectorySharedSeals: directories sharing a seal cache (as the
// simulator's nodes do) each admit a binding another verified, and still
// refuse a tampered or forged one.
func TestDirectorySharedSeals(t *testing.T) {
	alice := namespace.MustParse("agent://alice")
	a, b := bindingIdentity(t, 1), bindingIdentity(t, 2)
	seals := crdt.NewSealCache(0)
	claimA, _ := NewBinding(a, alice, 10)
	tampered := claimA
	tampered.Sig = slices.Clone(claimA.Sig)
	tampered.Sig[0] ^= 1
	forged := Binding{Principal: alice, Key: b.Public, From: a.Public, TS: 20}
	forged.Sig = b.Sign(forged.signedBytes())
	for i := range 2 {
		d := NewDirectory()
		d.SetSeals(seals)
		if _, err := d.Admit(tampered); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("directory %d, a tampered claim: %v, want ErrBadSignature", i, err)
		}
		if changed, err := d.Admit(claimA); err != nil || !changed {
			t.Fatalf("directory %d, the claim: changed=%v err=%v", i, changed, err)
		}
		if _, err := d.Admit(forged); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("directory %d, a forged hand-over: %v, want ErrBadSignature", i, err)
		}
	}
}

// TestDirectorySharedTable: directories sharing a BindingTable (as the
// simulator's nodes do) keep one copy of a binding both admit, decide as
// a directory without one, and, past the table's capacity, keep copies of
// their own; the caller's slices are never kept.
func TestDirectorySharedTable(t *testing.T) {
	alice, bob := namespace.MustParse("agent://alice"), namespace.MustParse("agent://bob")
	a, b, c := bindingIdentity(t, 1), bindingIdentity(t, 2), bindingIdentity(t, 3)
	claimA, _ := NewBinding(a, alice, 10)
	claimB, _ := NewBinding(b, bob, 10)
	ho, _ := NewHandover(a, alice, c.Public, 30)
	table := NewBindingTable(2)
	d1, d2, own := NewDirectory(), NewDirectory(), NewDirectory()
	d1.SetTable(table)
	for _, d := range []*Directory{d1, own} {
		for _, x := range []Binding{claimA, ho, claimB} {
			if _, err := d.Admit(x); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := d2.Admit(claimA); err != nil {
		t.Fatal(err)
	}
	d2.SetTable(table) // what it admitted before shares too
	for _, x := range []Binding{ho, claimB} {
		if _, err := d2.Admit(x); err != nil {
			t.Fatal(err)
		}
	}
	if d1.log[0] != d2.log[0] || d1.log[1] != d2.log[1] {
		t.Fatal("two directories on one table keep two copies of a binding")
	}
	if d1.log[2] == d2.log[2] {
		t.Fatal("a binding past the table's capacity is shared")
	}
	if &d1.log[0].Sig[0] == &claimA.Sig[0] || &own.log[0].Sig[0] == &claimA.Sig[0] {
		t.Fatal("a directory keeps the caller's slices")
	}
	for _, d := range []*Directory{d1, d2} {
		if !slices.EqualFunc(d.Bindings(), own.Bindings(), Binding.same) {
			t.Fatal("a directory on a table lists other bindings than one without")
		}
		if k, _ := d.KeyOf(alice); !k.Equal(c.Public) || !d.Hosted(alice, a.Public) || len(d.PrincipalsOf(b.Public)) != 1 {
			t.Fatal("a directory on a table decides otherwise than one without")
		}
	}
}
