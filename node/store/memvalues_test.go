package store

import (
	"runtime"
	"testing"
)

// MemKVs sharing a ValueTable hold one copy of an equal entry (key and
// value), keep their own view of it (a caller's later change to its buffer
// reaches no tree), and the table forgets an entry once no tree holds it.
func TestValueTableSharesEqualValues(t *testing.T) {
	values := NewValueTable()
	a, b := NewSharedMemKV(values), NewSharedMemKV(values)
	buf := []byte("the same record bytes")
	memSet(t, a, "k", buf)
	memSet(t, b, "k", buf)
	memSet(t, b, "other key", buf)
	buf[0] = 'X' // the caller reuses its buffer
	va, vb, vo := memGet(t, a, "k"), memGet(t, b, "k"), memGet(t, b, "other key")
	if string(va) != "the same record bytes" || string(vb) != string(va) || string(vo) != string(va) {
		t.Fatalf("values %q, %q and %q", va, vb, vo)
	}
	if &va[0] != &vb[0] {
		t.Fatal("two stores hold two copies of an equal entry")
	}
	if values.Len() != 2 { // ("k", the value) and ("other key", the value)
		t.Fatalf("table holds %d entries, want 2", values.Len())
	}
	memSet(t, a, "k", []byte("changed in a"))
	if string(memGet(t, b, "k")) != "the same record bytes" {
		t.Fatal("a write in one store changed another's value")
	}
	for _, key := range []string{"k", "other key"} {
		if err := b.Update(func(w Writer) error { return w.Delete([]byte(key)) }); err != nil {
			t.Fatal(err)
		}
	}
	va, vb, vo = nil, nil, nil
	for i := 0; values.Len() != 1; i++ { // ("k", "changed in a") is left
		if i == 100 {
			t.Fatalf("the table still holds %d entries after 100 collections", values.Len())
		}
		runtime.GC()
		runtime.Gosched()
	}
	if string(memGet(t, a, "k")) != "changed in a" {
		t.Fatal("a value still held was lost")
	}
}

// MemKVs sharing a ValueTable hold one copy of the key of an equal entry
// too (the simulator's nodes hold the same index keys), and a caller's
// later change to its key buffer reaches no tree.
func TestValueTableSharesEqualKeys(t *testing.T) {
	values := NewValueTable()
	a, b := NewSharedMemKV(values), NewSharedMemKV(values)
	key := []byte("r/team://t0\x00the same id")
	for _, kv := range []*MemKV{a, b} {
		if err := kv.Update(func(w Writer) error { return w.Set(key, []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
	key[0] = 'X' // the caller reuses its buffer
	keyOf := func(kv *MemKV) []byte {
		t.Helper()
		var got []byte
		if err := kv.View(func(r Reader) error {
			return r.Iterate([]byte("r/"), func(k, _ []byte) error { got = k; return nil })
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	ka, kb := keyOf(a), keyOf(b)
	if string(ka) != "r/team://t0\x00the same id" || string(kb) != string(ka) {
		t.Fatalf("keys %q and %q", ka, kb)
	}
	if &ka[0] != &kb[0] {
		t.Fatal("two stores hold two copies of an equal key")
	}
}

// Entries whose hashes collide are each kept whole: every store reads its
// own key and value back, and an equal entry is still shared.
func TestValueTableCollisions(t *testing.T) {
	values := NewValueTable()
	values.hash = func(key, val []byte) uint64 { return 7 } // every entry collides
	a, b := NewSharedMemKV(values), NewSharedMemKV(values)
	memSet(t, a, "k1", []byte("one"))
	memSet(t, b, "k1", []byte("another")) // the same key, another value
	memSet(t, b, "k2", []byte("two"))
	memSet(t, a, "k2", []byte("two"))
	for _, c := range []struct {
		kv       *MemKV
		key, val string
	}{{a, "k1", "one"}, {a, "k2", "two"}, {b, "k1", "another"}, {b, "k2", "two"}} {
		if got := memGet(t, c.kv, c.key); string(got) != c.val {
			t.Fatalf("%s: %q, want %q", c.key, got, c.val)
		}
	}
	memSet(t, b, "k3", []byte("three"))
	memSet(t, a, "k3", []byte("three"))
	if &memGet(t, a, "k3")[0] != &memGet(t, b, "k3")[0] {
		t.Fatal("an equal entry is not shared")
	}
}

// memSet writes key=v in kv, failing t if it cannot.
func memSet(t *testing.T, kv *MemKV, key string, v []byte) {
	t.Helper()
	if err := kv.Update(func(w Writer) error { return w.Set([]byte(key), v) }); err != nil {
		t.Fatal(err)
	}
}

// memGet reads key's value in kv, failing t if it cannot.
func memGet(t *testing.T, kv *MemKV, key string) []byte {
	t.Helper()
	var v []byte
	if err := kv.View(func(r Reader) error { var err error; v, err = r.Get([]byte(key)); return err }); err != nil {
		t.Fatal(err)
	}
	return v
}
