package namespace

import (
	"errors"
	"strings"
	"testing"
)

func TestResolver(t *testing.T) {
	rules := []Rule{
		{Mode: ModeMap, Match: "agent:alice:main", Principal: "alice"},
		{Mode: ModePrefix, Match: "agent:alice:", Principal: "agent://alice-sub"},
		{Mode: ModePrefix, Match: "agent:", Principal: "Generic"},
		{Mode: ModeRegex, Match: `^mcp-(\w+)@`, Principal: "agent://$1"},
		{Mode: ModeRegex, Match: `^user=(?P<user>[^;]*);`, Principal: "u-${user}"},
		{Mode: ModeRegex, Match: `^host/`, Principal: "hosts"},
		{Mode: ModeRegex, Match: `^cap=(.*)$`, Principal: "$1"},
		{Mode: ModeMap, Match: "late", Principal: "late"},
	}
	r, err := NewResolver(rules, MustParse("agent://default"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ key, want string }{
		{"", "default"},
		{"agent:alice:main", "alice"},       // map before the prefix rules
		{"agent:alice:task-7", "alice-sub"}, // first prefix wins over the broader one
		{"agent:bob:main", "generic"},       // static principal normalised
		{"mcp-Carol@host", "carol"},         // $1 expansion, sanitised
		{"user=Dave Smith;x", "u-dave-smith"},
		{"user=;x", "u"},
		{"host/anything", "hosts"},
		{"cap=team://evil/../x", "team-evil-..-x"}, // the capture cannot choose the scheme
		{"cap=@@@", "default"},                     // nothing usable: falls through to later rules, then fallback
		{"late", "late"},
		{"unknown", "default"},
		{"agent:alice:main ", "alice-sub"}, // map is exact; the prefix rule catches it
		{strings.Repeat("x", MaxSessionKeyLen+1), "default"},
		{"agent:" + strings.Repeat("x", MaxSessionKeyLen), "default"}, // over the cap even though a prefix matches
		{"agent:" + strings.Repeat("x", MaxSessionKeyLen-6), "generic"},
	}
	for _, tc := range cases {
		got := r.Resolve(tc.key)
		if want := (Address{Kind: KindAgent, Name: tc.want}); got != want {
			t.Errorf("Resolve(%.40q) = %v, want %v", tc.key, got, want)
		}
	}
	if got := r.Fallback(); got != MustParse("agent://default") {
		t.Errorf("Fallback = %v", got)
	}
}

func TestResolverOrder(t *testing.T) {
	specific := Rule{Mode: ModePrefix, Match: "agent:alice:", Principal: "alice"}
	broad := Rule{Mode: ModePrefix, Match: "agent:", Principal: "everyone"}
	fb := MustParse("agent://fb")
	a, _ := NewResolver([]Rule{specific, broad}, fb)
	b, _ := NewResolver([]Rule{broad, specific}, fb)
	if got := a.Resolve("agent:alice:1").Name; got != "alice" {
		t.Errorf("specific first: %q", got)
	}
	if got := b.Resolve("agent:alice:1").Name; got != "everyone" {
		t.Errorf("broad first: %q", got)
	}
	empty, err := NewResolver(nil, fb)
	if err != nil || empty.Resolve("anything") != fb {
		t.Errorf("no rules: %v, %v", empty, err)
	}
}

func TestNewResolverInvalid(t *testing.T) {
	ok := Rule{Mode: ModeMap, Match: "k", Principal: "p"}
	cases := []struct {
		rule Rule
		msg  string
	}{
		{Rule{Mode: "glob", Match: "k", Principal: "p"}, `unknown mode "glob"`},
		{Rule{Match: "k", Principal: "p"}, "missing mode"},
		{Rule{Mode: "MAP", Match: "k", Principal: "p"}, `unknown mode "MAP"`},
		{Rule{Mode: ModeMap, Principal: "p"}, "empty match"},
		{Rule{Mode: ModeRegex, Principal: "p"}, "empty match"},
		{Rule{Mode: ModePrefix, Match: strings.Repeat("k", MaxSessionKeyLen+1), Principal: "p"}, "longer than the 512-byte session key limit"},
		{Rule{Mode: ModeRegex, Match: "(", Principal: "p"}, "bad pattern"},
		{Rule{Mode: ModeMap, Match: "k"}, "missing name"},
		{Rule{Mode: ModeMap, Match: "k", Principal: "Alice Smith"}, "invalid character ' '"},
		{Rule{Mode: ModeMap, Match: "k", Principal: "team://core"}, "must be an agent"},
		{Rule{Mode: ModeMap, Match: "k", Principal: "agent://bob/x"}, "has no path"},
		{Rule{Mode: ModeMap, Match: "k", Principal: "$1"}, "invalid character '$'"},
		{Rule{Mode: ModeRegex, Match: "(a)", Principal: "team://$1"}, "must be an agent"},
		{Rule{Mode: ModeRegex, Match: "(a)", Principal: "$2"}, "only 1 groups"},
		{Rule{Mode: ModeRegex, Match: "(a)", Principal: "$1x"}, "no group of that name"},
		{Rule{Mode: ModeRegex, Match: "(?P<u>a)", Principal: "${v}"}, "no group of that name"},
		{Rule{Mode: ModeRegex, Match: "(a)", Principal: "${1"}, "malformed"},
		{Rule{Mode: ModeRegex, Match: "(a)", Principal: "x$"}, "malformed"},
		{Rule{Mode: ModeRegex, Match: "(a)", Principal: "x-$-"}, "malformed"},
		{Rule{Mode: ModeRegex, Match: "a", Principal: "no good"}, "invalid character ' '"},
	}
	for _, tc := range cases {
		_, err := NewResolver([]Rule{ok, ok, tc.rule}, MustParse("agent://fb"))
		if err == nil {
			t.Errorf("NewResolver accepted %+v", tc.rule)
			continue
		}
		if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), "rule 2 ") || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("NewResolver(%+v) error %q: want ErrInvalidRule naming rule 2 and mentioning %q", tc.rule, err, tc.msg)
		}
	}
	// Principal errors also carry ErrInvalid.
	if _, err := NewResolver([]Rule{{Mode: ModeMap, Match: "k", Principal: "a b"}}, MustParse("agent://fb")); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad principal error %v does not wrap ErrInvalid", err)
	}
	for _, fb := range []Address{{}, MustParse("agent://fb/x"), MustParse("team://fb"), {Kind: KindAgent, Name: "A B"}} {
		if _, err := NewResolver(nil, fb); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fallback") {
			t.Errorf("NewResolver with fallback %#v: %v", fb, err)
		}
	}
}

func TestResolverTemplateForms(t *testing.T) {
	cases := []struct {
		pattern, principal, key, want string
	}{
		{`^(a+)(b+)$`, "${1}x$2", "aabb", "aaxbb"},
		{`^(a+)$`, "AGENT://p-$1", "aa", "p-aa"},
		{`^(a+)$`, "p$$-$1", "aa", "p-aa"}, // $$ is a literal '$', sanitised away
		{`k=(.*)`, "$0", "xk=v", "k-v"},    // $0 is the whole match
		{`(?P<first>\w+)\.(?P<last>\w+)`, "${last}_${first}", "Ada.Lovelace", "lovelace_ada"},
	}
	for _, tc := range cases {
		r, err := NewResolver([]Rule{{Mode: ModeRegex, Match: tc.pattern, Principal: tc.principal}}, MustParse("agent://fb"))
		if err != nil {
			t.Errorf("NewResolver(%q, %q): %v", tc.pattern, tc.principal, err)
			continue
		}
		if got := r.Resolve(tc.key).Name; got != tc.want {
			t.Errorf("%q/%q on %q = %q, want %q", tc.pattern, tc.principal, tc.key, got, tc.want)
		}
	}
}
