package mcptools

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestCompactIDsForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want idList
		ok   bool
	}{
		{`["a","b"]`, idList{"a", "b"}, true},
		{`"[\"a\",\"b\"]"`, idList{"a", "b"}, true},
		{`" [\"a\"] "`, idList{"a"}, true},
		{`[]`, idList{}, true},
		{`"[]"`, idList{}, true},
		{`""`, idList{}, true},
		{`"a,b"`, nil, false},
		{`[1,2]`, nil, false},
		{`"[1,2]"`, nil, false},
		{`{}`, nil, false},
	} {
		var got idList
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && (!slices.Equal(got, tc.want) || got == nil) {
			t.Errorf("%s: got %#v, want %#v", tc.in, got, tc.want)
		}
	}
}
