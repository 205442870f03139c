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
	if values.Len() != 1 {
		t.Fatalf("table holds %d values, want 1", values.Len())
	}
	set(a, "k", []byte("changed in a"))
	if string(get(b, "other key")) != "the same record bytes" {
		t.Fatal("a write in one store changed another's value")
	}
	if err := b.Update(func(w Writer) error { return w.Delete([]byte("other key")) }); err != nil {
		t.Fatal(err)
	}
	va, vb = nil, nil
	for i := 0; values.Len() != 1; i++ { // "changed in a" is left
		if i == 100 {
			t.Fatalf("the table still holds %d values after 100 collections", values.Len())
		}
		runtime.GC()
		runtime.Gosched()
	}
	if string(get(a, "k")) != "changed in a" {
		t.Fatal("a value still held was lost")
	}
}
