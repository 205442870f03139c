package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Strings that are not text — bytes that are not UTF-8 (which the JSON
// decoder would silently replace with U+FFFD), unpaired surrogates, NUL —
// are 400 naming the field, and nothing is stored.
func TestBodiesMustBeText(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/memories", "{\"content\":\"ok\",\"title\":\"bad \xff\"}", "title"},
		{"POST", "/v1/memories", "{\"content\":\"caf\xe9\"}", "content"},
		{"POST", "/v1/memories", `{"content":"ok","tags":["fine","a\u0000b"]}`, "tags[1]"},
		{"POST", "/v1/memories", `{"content":"ok","topic_key":"\ud800"}`, "topic_key"},
		{"POST", "/v1/sessions", `{"id":"s1","directory":"/x\u0000"}`, "directory"},
		{"POST", "/v1/import", "{\"format\":\"mnemo-export\",\"memories\":[{\"id\":\"01JN8S7QG06SJ9DE1ZTE58SGJ5\",\"content\":\"\xc3\"}]}", "memories[0].content"},
		{"GET", "/v1/search?q=%FF", "", `"q"`},
		{"GET", "/v1/search?q=a%00b", "", `"q"`},
	} {
		a := f.do(tc.method, tc.path, tc.body)
		wantStatus(t, a, http.StatusBadRequest, "invalid_request")
		if msg := a.errBody(t).Message; !strings.Contains(msg, tc.field) {
			t.Errorf("%s %s: message %q does not name %s", tc.method, tc.path, msg, tc.field)
		}
	}
	var st memapi.Stats
	f.do("GET", "/v1/stats", "").decode(t, &st)
	if st.Memories != 0 || st.Sessions != 0 {
		t.Fatalf("refused requests stored something: %+v", st)
	}
	// Text that merely looks odd is fine: a real U+FFFD, an escaped backslash.
	f.save(`{"content":"replacement \ufffd and a literal \\u0000"}`)
}
