package crdt

import (
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestCheckMsgpack(t *testing.T) {
	good := []any{nil, true, 1, -5, 300, int64(-1 << 40), 1.5, "text", []byte{1, 2},
		[]any{1, "a", []any{map[string]any{"k": []int{1, 2, 3}}}}, map[string]any{"x": uint64(1 << 63)}}
	for _, v := range good {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckMsgpack(b, 16); err != nil {
			t.Errorf("%#v: %v", v, err)
		}
		if len(b) > 1 {
			if err := CheckMsgpack(b[:len(b)-1], 16); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%#v truncated: %v", v, err)
			}
		}
	}
	bad := map[string][]byte{
		"array32 claiming 1.6e9 elements": {0xdd, 0x5f, 0xa1, 0x64, 0xc4, 0x24},
		"map32 claiming 2^32-1 pairs":     {0xdf, 0xff, 0xff, 0xff, 0xff},
		"str32 longer than the input":     {0xdb, 0x00, 0x01, 0x00, 0x00, 'a'},
		"never-used code":                 {0xc1},
		"trailing byte":                   {0x01, 0x02},
		"too deep":                        {0x91, 0x91, 0x91, 0x91, 0x01},
	}
	for name, b := range bad {
		if err := CheckMsgpack(b, 3); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
