package acl

import (
	"crypto/ed25519"
	"crypto/sha256"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
)

// world is a cluster of agents, one node each, with deterministic keys.
type world struct {
	t    testing.TB
	ids  map[string]Identity // agent name -> its node's identity
	book *Book
	ts   crdt.Timestamp
}

func newWorld(t testing.TB, agents ...string) *world {
	w := &world{t: t, ids: map[string]Identity{}}
	for _, a := range agents {
		w.ids[a] = testIdentity(t, a)
	}
	w.book = NewBook(w.keyOf)
	return w
}

func testIdentity(t testing.TB, name string) Identity {
	seed := sha256.Sum256([]byte("test identity " + name))
	id, err := IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (w *world) keyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	id, ok := w.ids[p.Name]
	if !ok || p.Kind != namespace.KindAgent || p.Path != "" {
		return nil, false
	}
	return id.Public, true
}

func agent(name string) namespace.Address { return namespace.MustParse("agent://" + name) }

func (w *world) next() crdt.Timestamp { w.ts++; return w.ts }

func (w *world) must(r SignedRecord, err error) SignedRecord {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) add(r SignedRecord) SignedRecord {
	w.t.Helper()
	if _, err := w.book.Add(r.Encode()); err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) create(by, ns string) SignedRecord {
	w.t.Helper()
	return w.add(w.must(NewCreate(w.ids[by], agent(by), namespace.MustParse(ns), w.next())))
}

func (w *world) grant(by, ns, to string, perms []Permission, after ...string) SignedRecord {
	w.t.Helper()
	return w.add(w.must(NewGrant(w.ids[by], agent(by), namespace.MustParse(ns), agent(to), perms, after, w.next())))
}

func (w *world) revoke(by, ns, to string, perms []Permission) SignedRecord {
	w.t.Helper()
	return w.add(w.must(NewRevoke(w.ids[by], agent(by), namespace.MustParse(ns), agent(to), perms, w.next())))
}
