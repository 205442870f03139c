package memapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckJSONText(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string // "" = accepted; else a substring of the error
	}{
		{`{"title":"plain","tags":["a","b"]}`, ""},
		{`{"title":"é ü 日本 \u00e9 \ud83d\ude00 \ufffd �"}`, ""}, // a real U+FFFD is text
		{`{"title":"a backslash then u: \\ud800 \\u0000"}`, ""},
		{"{\"title\":\"bad \xff byte\"}", "title is not valid UTF-8"},
		{"{\"title\":\"ok\",\"tags\":[\"a\",\"b\xc3\"]}", "tags[1] is not valid UTF-8"},
		{"{\"memories\":[{\"id\":\"x\"},{\"content\":\"\xed\xa0\x80\"}]}", "memories[1].content is not valid UTF-8"},
		{`{"title":"lone \ud800 high"}`, "title is not valid UTF-8 (an unpaired surrogate escape)"},
		{`{"title":"lone \udc00 low"}`, "unpaired surrogate"},
		{`{"title":"\ud800\u0041"}`, "unpaired surrogate"},
		{`{"content":"nul \u0000 inside"}`, "content contains a NUL character"},
		{`{"a":{"b":[1,{"c":"\u0000"}]}}`, "a.b[1].c contains a NUL"},
		{"{\"ti\xfftle\":\"x\"}", "a key in the body is not valid UTF-8"},
		{`{"q":{"k\u0000":"x"}}`, "a key in q contains a NUL"},
		{`"\u0000"`, "the body contains a NUL"},
		{`{"title": "broken`, ""}, // malformed: the decoder's to report
	} {
		err := CheckJSONText([]byte(tc.body))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: refused: %v", tc.body, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want ErrInvalid with %q", tc.body, err, tc.want)
		}
	}
}

// FuzzCheckJSONText: a body the check accepts decodes to text without NUL
// or replaced bytes; a well-formed body with bytes that are not UTF-8 is
// always refused.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `["\ud800"]`, `{"a":["\u0000"]}`, "{\"a\":\"\xff\"}", `"\\u0000"`, `{"x":[1,2,{"y":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckJSONText(data)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error outside ErrInvalid: %v", err)
		}
		if !json.Valid(data) {
			return
		}
		if !utf8.Valid(data) && err == nil {
			t.Fatalf("accepted a well-formed body that is not UTF-8: %q", data)
		}
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if strings.IndexByte(x, 0) >= 0 {
					t.Fatalf("accepted a NUL in %q", data)
				}
				if strings.ContainsRune(x, utf8.RuneError) && !strings.Contains(string(data), "\uFFFD") && !strings.Contains(strings.ToLower(string(data)), `\ufffd`) {
					t.Fatalf("accepted a body that decodes with replaced bytes: %q", data)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}
