package projection

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
)

func ptr(v float64) *float64 { return &v }

func validSpec() Spec {
	return Spec{
		ID:     "p-1",
		Source: namespace.MustParse("agent://dev-1"),
		Target: namespace.MustParse("agent://security-reviewer"),
		Filter: Filter{
			Types:         []string{"decision"},
			Tags:          []string{"auth", "security"},
			MinConfidence: ptr(0.5),
			MinImportance: ptr(0.25),
			LinkedFiles:   []string{"src/payments/**"},
			Predicate:     `not "wip" in tags`,
		},
		Level:     L2,
		Live:      true,
		Creator:   namespace.MustParse("agent://dev-1"),
		CreatedAt: time.Date(2025, 3, 1, 10, 0, 0, 123456789, time.UTC),
	}
}

func TestValidate(t *testing.T) {
	if err := validSpec().Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	cases := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"no id", func(s *Spec) { s.ID = "" }, "id missing"},
		{"long id", func(s *Spec) { s.ID = strings.Repeat("a", MaxIDLen+1) }, "id is 129 bytes"},
		{"bad id", func(s *Spec) { s.ID = "a b" }, `byte 1 (' ')`},
		{"no source", func(s *Spec) { s.Source = namespace.Address{} }, "source missing"},
		{"hand-built source", func(s *Spec) { s.Source = namespace.Address{Kind: namespace.KindTeam, Name: "Bad Name"} }, "source: namespace: invalid address"},
		{"no target", func(s *Spec) { s.Target = namespace.Address{} }, "target missing"},
		{"team target", func(s *Spec) { s.Target = namespace.MustParse("team://backend") }, "target team://backend is not an agent principal"},
		{"target with path", func(s *Spec) { s.Target = namespace.MustParse("agent://bob/sub") }, "target agent://bob/sub is not an agent principal"},
		{"target owns source", func(s *Spec) { s.Source = namespace.MustParse("agent://security-reviewer/x") }, "target agent://security-reviewer already owns source"},
		{"no level", func(s *Spec) { s.Level = 0 }, "level missing"},
		{"bad level", func(s *Spec) { s.Level = 4 }, "level 4: want L1, L2 or L3"},
		{"min confidence", func(s *Spec) { s.Filter.MinConfidence = ptr(-0.1) }, "min_confidence must be between 0 and 1"},
		{"min importance NaN", func(s *Spec) { nan := 0.0; nan /= nan; s.Filter.MinImportance = &nan }, "min_importance must be between 0 and 1"},
		{"empty tag", func(s *Spec) { s.Filter.Tags = []string{"a", " "} }, "tags[1] is empty"},
		{"long type", func(s *Spec) { s.Filter.Types = []string{strings.Repeat("t", MaxValueLen+1)} }, "types[0] is 129 bytes"},
		{"too many tags", func(s *Spec) { s.Filter.Tags = make([]string, MaxFilterValues+1) }, "tags has 65 entries"},
		{"empty glob", func(s *Spec) { s.Filter.LinkedFiles = []string{""} }, "linked_files[0]: empty glob"},
		{"long glob", func(s *Spec) { s.Filter.LinkedFiles = []string{strings.Repeat("a", MaxGlobLen+1)} }, "glob is 257 bytes"},
		{"bad predicate", func(s *Spec) { s.Filter.Predicate = `type = "a" xyz` }, `projection: predicate: unexpected token "xyz" at 12`},
		{"no creator", func(s *Spec) { s.Creator = namespace.Address{} }, "creator missing"},
		{"project creator", func(s *Spec) { s.Creator = namespace.MustParse("project://shop") }, "creator project://shop is not an agent principal"},
		{"no created_at", func(s *Spec) { s.CreatedAt = time.Time{} }, "created_at missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSpec()
			c.edit(&s)
			err := s.Validate()
			if err == nil {
				t.Fatalf("Validate passed, want %q", c.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
			if _, err := NewProjector(s); err == nil {
				t.Error("NewProjector accepted an invalid spec")
			}
			if _, err := EncodeSpec(s); !errors.Is(err, ErrInvalid) {
				t.Errorf("EncodeSpec: %v, want ErrInvalid", err)
			}
		})
	}
}

func TestPredicateErrorPosition(t *testing.T) {
	_, err := CompilePredicate(`importance > 0.5 and xyz`)
	var pe *PredicateError
	if !errors.As(err, &pe) || pe.Pos != 22 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v (%#v), want a PredicateError at 22", err, pe)
	}
}

func TestPredicateLimits(t *testing.T) {
	cond := `type = "a"`
	cases := []struct {
		name, src, want string
	}{
		{"length", `title = "` + strings.Repeat("x", MaxPredicateLen) + `"`, "predicate is 1034 bytes, limit 1024 at 1025"},
		{"parens", strings.Repeat("(", MaxPredicateDepth+1) + cond + strings.Repeat(")", MaxPredicateDepth+1), "nested deeper than 32 at 33"},
		{"nots", strings.Repeat("not ", MaxPredicateDepth+1) + cond, "nested deeper than 32 at 129"},
		{"list", "importance in [" + strings.Repeat("1, ", MaxListItems) + "1]", "list longer than 64 items at 208"},
		{"invalid utf-8", "title = \"a\xffb\"", "invalid UTF-8 at 11"},
	}
	for _, c := range cases {
		_, err := CompilePredicate(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// At the limits: accepted.
	ok := []string{
		strings.Repeat("(", MaxPredicateDepth) + cond + strings.Repeat(")", MaxPredicateDepth),
		strings.Repeat("not ", MaxPredicateDepth-1) + cond,
		"importance in [" + strings.Repeat("1, ", MaxListItems-1) + "1]",
		// A long flat chain is one n-ary level, not 60.
		strings.Repeat(cond+" and ", 59) + cond,
	}
	for _, src := range ok {
		if _, err := CompilePredicate(src); err != nil {
			t.Errorf("%.40s...: %v", src, err)
		}
	}
	// The syntax tree's height counts too, apart from the nesting guard:
	// "c and (c or (c and ...))" with P parentheses has height P+1, and 32 parentheses pass the nesting guard.
	tree := func(parens int) string {
		src := cond
		for i := range parens {
			src = cond + []string{" and (", " or ("}[i%2] + src + ")"
		}
		return src
	}
	if _, err := CompilePredicate(tree(MaxPredicateDepth - 1)); err != nil {
		t.Errorf("tree of height 32: %v", err)
	}
	if _, err := CompilePredicate(tree(MaxPredicateDepth)); err == nil || !strings.Contains(err.Error(), "nested deeper than 32") {
		t.Errorf("tree of height 33: %v", err)
	}
}

func TestSpecJSON(t *testing.T) {
	body := `{"source":"agent://dev-1","target":"agent://reviewer",
		"filter":{"types":["decision"],"tags":["auth"],"min_confidence":0.5,"min_importance":0.3,
		"linked_files":["src/payments/**"],"predicate":"importance > 0.5"},"level":"L2","live":true}`
	var s Spec
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Source.String() != "agent://dev-1" || s.Target.String() != "agent://reviewer" || s.Level != L2 || !s.Live ||
		*s.Filter.MinConfidence != 0.5 || *s.Filter.MinImportance != 0.3 || s.Filter.LinkedFiles[0] != "src/payments/**" ||
		s.Filter.Predicate != "importance > 0.5" || s.Filter.Types[0] != "decision" || s.Filter.Tags[0] != "auth" {
		t.Fatalf("decoded %+v", s)
	}
	out, err := json.Marshal(validSpec())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"p-1","source":"agent://dev-1","target":"agent://security-reviewer","filter":{"types":["decision"],"tags":["auth","security"],"min_confidence":0.5,"min_importance":0.25,"linked_files":["src/payments/**"],"predicate":"not \"wip\" in tags"},"level":"L2","live":true,"creator":"agent://dev-1","created_at":"2025-03-01T10:00:00.123456789Z"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	for _, bad := range []string{`{"level":"L4"}`, `{"level":2}`, `{"target":"agent://"}`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	if err := json.Unmarshal([]byte(`{"level":"l3"}`), &s); err != nil || s.Level != L3 {
		t.Errorf("lowercase level: %v %v", s.Level, err)
	}
}

func TestEncodeDecodeSpec(t *testing.T) {
	s := validSpec()
	s.CreatedAt = s.CreatedAt.In(time.FixedZone("X", 3600))
	b, err := EncodeSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(s.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %v, want %v in UTC", got.CreatedAt, s.CreatedAt)
	}
	got.CreatedAt, s.CreatedAt = time.Time{}, time.Time{}
	gj, _ := json.Marshal(got)
	sj, _ := json.Marshal(s)
	if !bytes.Equal(gj, sj) {
		t.Errorf("round trip:\n got %s\nwant %s", gj, sj)
	}

	// Minimal spec: nil thresholds, empty lists.
	m := validSpec()
	m.Filter = Filter{}
	mb, err := EncodeSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeSpec(mb); err != nil || got.Filter.MinConfidence != nil || got.Filter.Tags != nil {
		t.Errorf("minimal: %+v %v", got, err)
	}

	corrupt := map[string][]byte{
		"empty":     {},
		"truncated": b[:len(b)-3],
		"trailing":  append(append([]byte{}, b...), 0xc0),
		"version":   append([]byte{b[0], 0x02}, b[2:]...),
		"huge":      make([]byte, MaxSpecBytes+1),
		// A str32 header claiming 4 GiB must not allocate it.
		"long string": append([]byte{b[0], 0x01, 0xdb, 0xff, 0xff, 0xff, 0xff}, b[3:]...),
	}
	// Non-canonical: the version as a uint8 (0xcc 0x01) instead of a fixint.
	corrupt["non-canonical"] = append([]byte{b[0], 0xcc, 0x01}, b[2:]...)
	// Valid encoding of an invalid spec: level 0.
	bad := encodeSpec(func() Spec { s := validSpec(); s.Level = 0; return s }())
	corrupt["invalid spec"] = bad
	for name, in := range corrupt {
		_, err := DecodeSpec(in)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := DecodeSpec(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid spec: %v, want ErrInvalid too", err)
	}
}

func TestProjector(t *testing.T) {
	p, err := NewProjector(validSpec())
	if err != nil {
		t.Fatal(err)
	}
	in := Item{ID: "m1", Type: "Decision", Tags: []string{"Auth"}, Importance: 0.5, Confidence: 0.9,
		LinkedFiles: []string{"src/payments/a/b.go"}, Content: "secret details", Author: "agent://dev-1"}
	out := Item{ID: "m2", Type: "decision", Tags: []string{"auth", "wip"}, Importance: 0.5, Confidence: 0.9,
		LinkedFiles: []string{"src/payments/x.go"}}
	view := p.View([]Item{in, out})
	if len(view) != 1 || view[0].ID != "m1" || view[0].Content != "" || view[0].Author != "" || view[0].Summary != "secret details" {
		t.Fatalf("view %+v", view)
	}
	if a := p.Decide(nil, &in); a != ActionUpsert {
		t.Errorf("create: %v", a)
	}
	if a := p.Decide(&in, &out); a != ActionRemove {
		t.Errorf("tagged wip: %v", a)
	}
	if a := Decide(validSpec(), &in, &out); a != ActionRemove {
		t.Errorf("package Decide: %v", a)
	}
}
