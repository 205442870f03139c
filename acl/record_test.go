package acl

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
)

func sampleRecords(t testing.TB) []SignedRecord {
	w := newWorld(t, "alice", "bob")
	team := namespace.MustParse("team://backend")
	c := w.must(NewCreate(w.ids["alice"], agent("alice"), team, 1))
	r := w.must(NewRevoke(w.ids["alice"], agent("alice"), team, agent("bob"), []Permission{Write, Read, Write}, 1<<40))
	g := w.must(NewGrant(w.ids["alice"], agent("alice"), team, agent("bob"), Member(), []string{r.ID(), r.ID()}, 1<<63))
	a := w.must(NewGrant(w.ids["bob"], agent("bob"), agent("bob"), agent("alice"), []Permission{Admin}, nil, 0))
	return []SignedRecord{c, r, g, a}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range sampleRecords(t) {
		b := r.Encode()
		got, err := DecodeRecord(b)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if !bytes.Equal(got.Encode(), b) || got.ID() != r.ID() || got.String() != r.String() {
			t.Errorf("%s does not round-trip", r)
		}
		if err := got.VerifySignature(); err != nil {
			t.Errorf("%s: %v", r, err)
		}
		if len(r.ID()) != 64 {
			t.Errorf("id %q", r.ID())
		}
	}
	g := sampleRecords(t)[2]
	if len(g.After) != 1 || len(g.Perms) != 2 {
		t.Errorf("grant not normalised: after %v perms %v", g.After, g.Perms)
	}
}

func TestNewRecordInvalid(t *testing.T) {
	w := newWorld(t, "alice")
	alice := w.ids["alice"]
	team := namespace.MustParse("team://backend")
	cases := map[string]error{}
	_, cases["path"] = NewGrant(alice, agent("alice"), namespace.MustParse("team://backend/x"), agent("bob"), Member(), nil, 1)
	_, cases["no perms"] = NewGrant(alice, agent("alice"), team, agent("bob"), nil, nil, 1)
	_, cases["bad perm"] = NewRevoke(alice, agent("alice"), team, agent("bob"), []Permission{9}, 1)
	_, cases["team principal"] = NewGrant(alice, agent("alice"), team, team, Member(), nil, 1)
	_, cases["agent create"] = NewCreate(alice, agent("alice"), agent("alice"), 1)
	_, cases["bad after"] = NewGrant(alice, agent("alice"), team, agent("bob"), Member(), []string{"xyz"}, 1)
	_, cases["no key"] = NewCreate(Identity{}, agent("alice"), team, 1)
	_, cases["signer not agent"] = NewCreate(alice, team, team, 1)
	for name, err := range cases {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error = %v; want ErrInvalid", name, err)
		}
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	good := sampleRecords(t)[2].Encode()
	bad := map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		"huge":      make([]byte, MaxRecordBytes+1),
		"not array": {0x01},
		// Non-canonical: the version as a uint8 instead of a fixint.
		"non-canonical": append([]byte{0x9a, 0xcc, 0x01}, good[2:]...),
		"uppercase ns":  bytes.Replace(good, []byte("team://backend"), []byte("team://BACKEND"), 1),
	}
	for name, b := range bad {
		if _, err := DecodeRecord(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: error = %v; want ErrCorrupt", name, err)
		}
	}
}

func TestVerifySignature(t *testing.T) {
	r := sampleRecords(t)[2]
	unsigned := r
	unsigned.Sig = nil
	flipped := cloneRecord(r)
	flipped.Sig[10] ^= 1
	edited := cloneRecord(r)
	edited.Perms = []Permission{Read, Write, Share}
	for name, rec := range map[string]SignedRecord{"unsigned": unsigned, "bit flip": flipped, "edited": edited} {
		err := rec.VerifySignature()
		if !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: error = %v; want ErrBadSignature", name, err)
		}
		// A decoded copy is rejected the same way by the book.
		if _, err := NewBook(nil).Add(rec.Encode()); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: Book.Add error = %v; want ErrBadSignature", name, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords(f) {
		f.Add(r.Encode())
	}
	f.Add([]byte{0x9a})
	f.Add([]byte(strings.Repeat("\xdd\xff\xff\xff\xff", 4)))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc := r.Encode()
		if !bytes.Equal(enc, b) {
			t.Fatalf("accepted input does not re-encode to itself:\n in %x\nout %x", b, enc)
		}
		again, err := DecodeRecord(enc)
		if err != nil || again.ID() != r.ID() {
			t.Fatalf("re-decode: %v", err)
		}
		_ = r.VerifySignature() // must not panic
		_, _ = NewBook(nil).Add(b)
	})
}
