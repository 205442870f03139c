package projection

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzItems = []Item{
	{},
	{ID: "m1", Type: "Decision", Title: "JWT keys", Content: "rotate daily", Tags: []string{"auth"}, Importance: 0.8, Confidence: 0.9,
		LinkedFiles: []string{"src/auth/jwt.go"}, Scope: "project", Project: "shop", Author: "agent://dev-1"},
	{ID: "m2", Type: "pattern", Title: "retry", Tags: []string{"payments", "CI"}, Importance: 0.3,
		LinkedFiles: []string{"src/payments/a/b.go", "README.md"}, Scope: "session"},
}

// FuzzCompilePredicate: any input compiles or fails with a positioned
// *PredicateError, never panics; a compiled predicate's canonical form
// compiles to the same canonical form and evaluates the same.
func FuzzCompilePredicate(f *testing.F) {
	for _, s := range []string{
		`type = "decision" and importance >= 0.5`,
		`a or b and c`,
		`not ("auth" in tags or linked_files matches "src/**")`,
		`type in ["decision", "pattern"] and title contains "JWT"`,
		`title = "q\"uote\\"`, `importance in [1, -0.5]`, `((((type = "x"))))`,
		`(type = "a"`, `type = "a" xyz`, "title = \"\xff\"", `not not not scope < "u"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := CompilePredicate(src)
		if err != nil {
			var pe *PredicateError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v is not a *PredicateError wrapping ErrInvalid", src, err)
			}
			if pe.Pos < 1 || pe.Pos > len(src)+1 {
				t.Fatalf("%q: position %d outside 1..%d", src, pe.Pos, len(src)+1)
			}
			return
		}
		canon := p.String()
		if len(canon) > MaxPredicateLen {
			return // spacing can lengthen a predicate near the limit
		}
		q, err := CompilePredicate(canon)
		if err != nil {
			t.Fatalf("%q: canonical form %q does not compile: %v", src, canon, err)
		}
		if q.String() != canon {
			t.Fatalf("%q: canonical form %q reprints as %q", src, canon, q.String())
		}
		for _, it := range fuzzItems {
			if p.Eval(it) != q.Eval(it) {
				t.Fatalf("%q and its canonical form %q disagree on %+v", src, canon, it)
			}
		}
	})
}

// FuzzDecodeSpec: any bytes decode or fail with ErrCorrupt, never panic;
// what decodes is valid and re-encodes to exactly the input.
func FuzzDecodeSpec(f *testing.F) {
	s := validSpec()
	b, _ := EncodeSpec(s)
	f.Add(b)
	s.Filter = Filter{}
	s.Live = false
	b, _ = EncodeSpec(s)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x9a, 0x01, 0xdb, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := DecodeSpec(in)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded an invalid spec: %v", err)
		}
		out, err := EncodeSpec(s)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("re-encoding differs (%v):\n in %x\nout %x", err, in, out)
		}
	})
}

// FuzzGlob: MatchGlob never panics and agrees with the reference dynamic
// program on valid UTF-8 (the reference compares runes, MatchGlob bytes).
func FuzzGlob(f *testing.F) {
	for _, c := range [][2]string{
		{"src/payments/**", "src/payments/a/b.go"}, {"src/payments/**", "src/payment/x.go"},
		{"**/*.go", "a/b/c.go"}, {"docs/*.md", "docs/a.md"}, {"?.go", "é.go"}, {"a**b", "axxb"},
		{"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"**/**/**/x", "a/b/c/d/e/f/g"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		got := MatchGlob(pattern, path)
		if CheckGlob(pattern) == nil && !strings.Contains(pattern, "/") && !strings.ContainsAny(pattern, "*?") && got != (pattern == path) {
			t.Fatalf("literal pattern %q vs %q: %v", pattern, path, got)
		}
		if utf8.ValidString(pattern) && utf8.ValidString(path) && len(pattern) <= 256 && len(path) <= 256 {
			if want := refGlob(pattern, path); got != want {
				t.Fatalf("MatchGlob(%q, %q) = %v, reference says %v", pattern, path, got, want)
			}
		}
	})
}
