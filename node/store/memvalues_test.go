package store

import (
	"runtime"
	"testing"
)

// MemKVs sharing a ValueTable hold one copy of an equal value, keep their
// own view of it (a caller's later change to its buffer reaches no tree),
// and the table forgets a value once no tree holds it.
func TestValueTableSharesEqualValues(t *testing.T) {
	values := NewValueTable()
	a, b := NewSharedMemKV(values), NewSharedMemKV(values)
	buf := []byte("the same record bytes")
	set := func(kv *MemKV, key string, v []byte) {
		t.Helper()
		if err := kv.Update(func(w Writer) error { return w.Set([]byte(key), v) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(kv *MemKV, key string) []byte {
		t.Helper()
		var v []byte
		if err := kv.View(func(r Reader) error { var err error; v, err = r.Get([]byte(key)); return err }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	set(a, "k", buf)
	set(b, "other key", buf)
	buf[0] = 'X' // the caller reuses its buffer
	va, vb := get(a, "k"), get(b, "other key")
	if string(va) != "the same record bytes" || string(vb) != string(va) {
		t.Fatalf("values %q and %q", va, vb)
	}
	if &va[0] != &vb[0] {
		t.Fatal("two stores hold two copies of an equal value")
	}
	if values.Len() != 3 { // the value and the two keys
		t.Fatalf("table holds %d values and keys, want 3", values.Len())
	}
	set(a, "k", []byte("changed in a"))
	if string(get(b, "other key")) != "the same record bytes" {
		t.Fatal("a write in one store changed another's value")
	}
	if err := b.Update(func(w Writer) error { return w.Delete([]byte("other key")) }); err != nil {
		t.Fatal(err)
	}
	va, vb = nil, nil
	for i := 0; values.Len() != 2; i++ { // "k" and "changed in a" are left
		if i == 100 {
			t.Fatalf("the table still holds %d values and keys after 100 collections", values.Len())
		}
		runtime.GC()
		runtime.Gosched()
	}
	if string(get(a, "k")) != "changed in a" {
		t.Fatal("a value still held was lost")
	}
}

// MemKVs sharing a ValueTable hold one copy of an equal key too (the
// simulator's nodes hold the same index keys), and a caller's later change
// to its key buffer reaches no tree.
func TestValueTableSharesEqualKeys(t *testing.T) {
	values := NewValueTable()
	a, b := NewSharedMemKV(values), NewSharedMemKV(values)
	key := []byte("r/team://t0\x00the same id")
	for i, kv := range []*MemKV{a, b} {
		if err := kv.Update(func(w Writer) error { return w.Set(key, []byte{byte(i)}) }); err != nil {
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
