package namespace

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	segs := func(n int) string { return strings.Repeat("/s", n) }
	valid := []struct {
		in   string
		want Address
		str  string
	}{
		{"agent://bob", Address{KindAgent, "bob", ""}, "agent://bob"},
		{"team://core", Address{KindTeam, "core", ""}, "team://core"},
		{"project://mnemo/design", Address{KindProject, "mnemo", "design"}, "project://mnemo/design"},
		{"agent://bob/subagent/task-123", Address{KindAgent, "bob", "subagent/task-123"}, "agent://bob/subagent/task-123"},
		{"  AGENT://Bob/SubAgent  ", Address{KindAgent, "bob", "subagent"}, "agent://bob/subagent"},
		{"agent://bob/", Address{KindAgent, "bob", ""}, "agent://bob"},
		{"agent://bob//a///b/", Address{KindAgent, "bob", "a/b"}, "agent://bob/a/b"},
		{"agent://b.o_b-1/x.y", Address{KindAgent, "b.o_b-1", "x.y"}, "agent://b.o_b-1/x.y"},
		{"agent://.hidden/.x", Address{KindAgent, ".hidden", ".x"}, "agent://.hidden/.x"},
		{"agent://" + long(64), Address{KindAgent, long(64), ""}, "agent://" + long(64)},
		{"agent://a" + segs(16), Address{KindAgent, "a", strings.TrimPrefix(segs(16), "/")}, "agent://a" + segs(16)},
		// 256 bytes exactly: "agent://" (8) + "a" + "/" + 246.
		{"agent://a/" + long(246), Address{KindAgent, "a", long(246)}, "agent://a/" + long(246)},
	}
	for _, tc := range valid {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, s, tc.str)
		}
	}

	invalidCases := []struct {
		in, msg string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"bob", "missing scheme"},
		{"agent:/bob", "missing scheme"},
		{"agent:bob", "missing scheme"},
		{"user://bob", `unknown scheme "user"`},
		{"://bob", `unknown scheme ""`},
		{"agent://", "missing name"},
		{"agent:///bob", "empty name"},
		{"agent://bo b", "invalid character ' '"},
		{"agent://bob@host", "invalid character '@'"},
		{"agent://bob/a:b", `path segment "a:b": has invalid character ':'`},
		{"agent://bob/a b", "invalid character ' '"},
		{"agent://zoë", "invalid character 'ë'"},
		{"agent://\u212Aelvin", "invalid character '\u212A'"}, // Kelvin sign, not folded to "k"
		{"agent://bob/\xff", "invalid character '\uFFFD'"},
		{"agent://./x", "name is only dots"},
		{"agent://..", "name is only dots"},
		{"agent://bob/./x", `path segment ".": is only dots`},
		{"agent://bob/a/../b", `path segment "..": is only dots`},
		{"agent://bob/...", "is only dots"},
		{"agent://" + long(65), "longer than 64"},
		{"agent://a" + segs(17), "17 path segments, more than 16"},
		{"agent://a/" + long(247), "longer than 256"},
		{"agent://bob/" + strings.Repeat("x", 300), "longer than 256"},
		{"agent://bob?x=1", "invalid character '?'"},
		{"agent://bob#frag", "invalid character '#'"},
		{"agent://bob\\x", `invalid character '\\'`},
	}
	for _, tc := range invalidCases {
		got, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error", tc.in, got)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error %v does not wrap ErrInvalid", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%q) error %q does not mention %q", tc.in, err, tc.msg)
		}
		if !got.IsZero() {
			t.Errorf("Parse(%q) returned non-zero %#v with error", tc.in, got)
		}
	}
}

func TestParseErrorFormat(t *testing.T) {
	_, err := Parse("agent://")
	if got, want := err.Error(), `namespace: invalid address "agent://": missing name`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	_, err = Parse("agent://" + strings.Repeat("x", 10000))
	if len(err.Error()) > 200 {
		t.Errorf("error for long input is %d bytes; the input should be shortened", len(err.Error()))
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse of an invalid address did not panic")
		}
	}()
	MustParse("agent://")
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindAgent: "agent", KindTeam: "team", KindProject: "project", 0: "Kind(0)", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestContains(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"agent://bob", "agent://bob", true},
		{"agent://bob", "agent://bob/a", true},
		{"agent://bob", "agent://bob/a/b", true},
		{"agent://bob/a", "agent://bob/a", true},
		{"agent://bob/a", "agent://bob/a/b", true},
		{"agent://bob/a", "agent://bob/ab", false},
		{"agent://bob/a/b", "agent://bob/a", false},
		{"agent://bob/a", "agent://bob", false},
		{"agent://bob", "agent://bobby", false},
		{"agent://bob", "team://bob", false},
		{"team://core", "team://core/x", true},
		{"project://p/a", "project://p/b/a", false},
	}
	for _, tc := range cases {
		a, b := MustParse(tc.a), MustParse(tc.b)
		if got := a.Contains(b); got != tc.want {
			t.Errorf("%s.Contains(%s) = %v, want %v", a, b, got, tc.want)
		}
	}
	if (Address{}).Contains(Address{}) {
		t.Error("the zero Address contains itself")
	}
	if MustParse("agent://bob").Contains(Address{}) {
		t.Error("agent://bob contains the zero Address")
	}
}

func TestRootParentOwner(t *testing.T) {
	a := MustParse("agent://bob/x/y")
	if got := a.Root(); got != MustParse("agent://bob") {
		t.Errorf("Root = %v", got)
	}
	p, ok := a.Parent()
	if !ok || p != MustParse("agent://bob/x") {
		t.Errorf("Parent = %v, %v", p, ok)
	}
	p, ok = p.Parent()
	if !ok || p != MustParse("agent://bob") {
		t.Errorf("Parent of agent://bob/x = %v, %v", p, ok)
	}
	if p, ok = p.Parent(); ok {
		t.Errorf("Parent of a root = %v, true", p)
	}

	if o, ok := a.Owner(); !ok || o != MustParse("agent://bob") {
		t.Errorf("Owner(%v) = %v, %v", a, o, ok)
	}
	for _, s := range []string{"team://core/x", "project://p"} {
		if o, ok := MustParse(s).Owner(); ok || !o.IsZero() {
			t.Errorf("Owner(%s) = %v, %v; want none", s, o, ok)
		}
	}
	if _, ok := (Address{}).Owner(); ok {
		t.Error("the zero Address has an owner")
	}
}

func TestChild(t *testing.T) {
	base := MustParse("agent://bob/sub")
	cases := []struct {
		rel, want, msg string
	}{
		{"task-1", "agent://bob/sub/task-1", ""},
		{"A/B", "agent://bob/sub/a/b", ""},
		{"/x//y/", "agent://bob/sub/x/y", ""},
		{" x ", "agent://bob/sub/x", ""},
		{"", "", "empty child path"},
		{"/", "", "empty child path"},
		{"..", "", "is only dots"},
		{"a b", "", "invalid character ' '"},
		{"team://x", "", "full address"},
		{strings.Repeat("s/", 16), "", "17 path segments"},
	}
	for _, tc := range cases {
		got, err := base.Child(tc.rel)
		if tc.msg != "" {
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Child(%q) = %v, %v; want error mentioning %q", tc.rel, got, err, tc.msg)
			}
			continue
		}
		if err != nil || got != MustParse(tc.want) {
			t.Errorf("Child(%q) = %v, %v; want %s", tc.rel, got, err, tc.want)
		}
	}
	if _, err := (Address{}).Child("x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Child of the zero Address: %v", err)
	}
}

func TestAgentAndParsePrincipal(t *testing.T) {
	if a, err := Agent(" Bob "); err != nil || a != MustParse("agent://bob") {
		t.Errorf("Agent(\" Bob \") = %v, %v", a, err)
	}
	for _, bad := range []string{"", "bob/x", "b b", "..", strings.Repeat("a", 65)} {
		if a, err := Agent(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Agent(%q) = %v, %v; want ErrInvalid", bad, a, err)
		}
	}
	good := map[string]string{"bob": "agent://bob", "agent://Bob": "agent://bob", "  alice ": "agent://alice", "agent://bob/": "agent://bob"}
	for in, want := range good {
		if a, err := ParsePrincipal(in); err != nil || a != MustParse(want) {
			t.Errorf("ParsePrincipal(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
	bad := map[string]string{
		"team://core":    "must be an agent",
		"agent://bob/x":  "has no path",
		"":               "missing name",
		"bob/x":          "invalid character '/'",
		"agent://":       "missing name",
		"Alice@My Host ": "invalid character '@'",
	}
	for in, msg := range bad {
		a, err := ParsePrincipal(in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParsePrincipal(%q) = %v, %v; want error mentioning %q", in, a, err, msg)
		}
	}
}

func TestResolve(t *testing.T) {
	self := MustParse("agent://bob")
	cases := []struct {
		arg, want, msg string
	}{
		{"", "agent://bob", ""},
		{"  ", "agent://bob", ""},
		{"/", "agent://bob", ""},
		{"subagent/task-123", "agent://bob/subagent/task-123", ""},
		{"/subagent/task-123", "agent://bob/subagent/task-123", ""},
		{"SubAgent//X/", "agent://bob/subagent/x", ""},
		{"team://core", "team://core", ""},
		{"agent://alice/x", "agent://alice/x", ""},
		{"../alice", "", "is only dots"},
		{"team:/core", "", "invalid character ':'"},
		{"team://", "", "missing name"},
		{"a b", "", "invalid character ' '"},
	}
	for _, tc := range cases {
		got, err := Resolve(self, tc.arg)
		if tc.msg != "" {
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Resolve(%q) = %v, %v; want error mentioning %q", tc.arg, got, err, tc.msg)
			}
			continue
		}
		if err != nil || got != MustParse(tc.want) {
			t.Errorf("Resolve(%q) = %v, %v; want %s", tc.arg, got, err, tc.want)
		}
	}
	for _, s := range []Address{{}, MustParse("agent://bob/x"), MustParse("team://core")} {
		if _, err := Resolve(s, "x"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not an agent root") {
			t.Errorf("Resolve with self %v: %v; want not-an-agent-root error", s, err)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	cases := map[string]string{
		"Alice@My Host":                 "alice-my-host",
		"bob":                           "bob",
		"  --Bob--  ":                   "bob",
		"a  --  b":                      "a-b",
		"a--b":                          "a-b",
		"zoë":                           "zo",
		"Ünïcode only ☃":                "n-code-only",
		"":                              "",
		"@@@":                           "",
		"---":                           "",
		"...":                           "",
		"-.-":                           "",
		"host.example_1":                "host.example_1",
		"agent://team/x":                "agent-team-x",
		strings.Repeat("x", 100):        strings.Repeat("x", 64),
		strings.Repeat("x", 63) + "@y":  strings.Repeat("x", 63),
		strings.Repeat("x", 62) + "@yz": strings.Repeat("x", 62) + "-y",
	}
	for in, want := range cases {
		got := SanitizeName(in)
		if got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
		checkSanitized(t, in, got)
	}
}

// checkSanitized asserts the promises SanitizeName makes about any output.
func checkSanitized(t *testing.T, in, got string) {
	t.Helper()
	if got == "" {
		return
	}
	if _, err := Agent(got); err != nil {
		t.Errorf("SanitizeName(%q) = %q, not a valid agent name: %v", in, got, err)
	}
	if again := SanitizeName(got); again != got {
		t.Errorf("SanitizeName not idempotent: %q -> %q -> %q", in, got, again)
	}
}

func TestText(t *testing.T) {
	type doc struct {
		NS  Address   `json:"ns"`
		Opt Address   `json:"opt"`
		All []Address `json:"all"`
	}
	in := doc{NS: MustParse("agent://bob/x"), All: []Address{MustParse("team://core")}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ns":"agent://bob/x","opt":"","all":["team://core"]}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.NS != in.NS || !out.Opt.IsZero() || len(out.All) != 1 || out.All[0] != in.All[0] {
		t.Errorf("round trip = %#v, want %#v", out, in)
	}
	if err := json.Unmarshal([]byte(`{"ns":"Agent://Bob//x/"}`), &out); err != nil || out.NS != in.NS {
		t.Errorf("unmarshal normalises: %v, %v", out.NS, err)
	}
	if err := json.Unmarshal([]byte(`{"ns":"agent://"}`), &out); !errors.Is(err, ErrInvalid) {
		t.Errorf("unmarshal of an invalid address: %v, want ErrInvalid", err)
	}
	for _, bad := range []Address{{Kind: KindAgent, Name: "Bob"}, {Kind: 7, Name: "bob"}, {Kind: KindAgent, Name: "bob", Path: "/x"}, {Kind: KindAgent}} {
		if _, err := bad.MarshalText(); !errors.Is(err, ErrInvalid) {
			t.Errorf("MarshalText(%#v) = %v, want ErrInvalid", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"agent://bob", "team://core/x", "project://p/a/b/c", " AGENT://Bob//x/ ", "agent://",
		"agent:///x", "agent://a/../b", "agent://\u212A", "agent://bob/\xff", "bob", "://",
		"agent://a" + strings.Repeat("/s", 16), "agent://a/" + strings.Repeat("a", 246),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
			}
			if !a.IsZero() {
				t.Fatalf("Parse(%q) returned %#v with an error", s, a)
			}
			return
		}
		str := a.String()
		b, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q) = %#v, but Parse(%q): %v", s, a, str, err)
		}
		if b != a {
			t.Fatalf("Parse(%q) = %#v, Parse(String()) = %#v", s, a, b)
		}
		if b.String() != str {
			t.Fatalf("String not idempotent: %q -> %q", str, b.String())
		}
		if len(str) > MaxAddressLen || len(a.Name) > MaxNameLen || strings.Count(a.Path, "/") >= MaxPathSegments {
			t.Fatalf("Parse(%q) = %q exceeds a limit", s, str)
		}
		if !a.Root().Contains(a) || !a.Contains(a) {
			t.Fatalf("%q does not contain itself or sit under its root", str)
		}
		if txt, err := a.MarshalText(); err != nil || string(txt) != str {
			t.Fatalf("MarshalText(%q) = %q, %v", str, txt, err)
		}
	})
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"Alice@My Host", "", "...", "-a-", "zoë", strings.Repeat("x-", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSanitized(t, s, SanitizeName(s))
	})
}
