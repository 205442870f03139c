package surgery

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzUnseal: the sealed edit and decision records a peer can send never
// panic or exhaust memory the decoder; what decodes re-encodes to itself.
func FuzzUnseal(f *testing.F) {
	for _, v := range []any{sealedEdit{}, sealedDecision{}} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0x5f, 0xa1, 0x64, 0xc4, 0x24})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e sealedEdit
		if unseal(b, &e) == nil {
			re, err := msgpack.Marshal(&e)
			if err != nil || string(re) != string(b) {
				t.Fatalf("accepted a non-canonical edit")
			}
		}
		var d sealedDecision
		_ = unseal(b, &d)
	})
}
