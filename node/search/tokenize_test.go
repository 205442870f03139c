package search

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"the cat of a dog", []string{"cat", "dog"}}, // stopwords, 1-char
		{"x y z ab", []string{"ab"}},                 // single runes dropped
		{"snake_case-and.dots/v2", []string{"snake", "case", "dot", "v2"}},
		{"ÉCOLE Straße naïve", []string{"école", "straße", "naïve"}}, // unicode lowercasing
		{"日本語 テキスト é", []string{"日本語", "テキスト"}},
		{"postgres16 HTTP2", []string{"postgres16", "http2"}},
		{strings.Repeat("a", 64) + " " + strings.Repeat("b", 65), []string{strings.Repeat("a", 64)}},
		{"Decisions decision decided", []string{"decis", "decis", "decid"}}, // English stems
		{"Hers is THIS", nil}, // a stem that is a stopword ("hers" -> "her") is dropped too
		{"adopting 2023 v2s", []string{"adopt", "2023", "v2s"}}, // only letter words are stemmed
	} {
		if got := Tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzTokenize checks the token invariants on arbitrary (also invalid
// UTF-8) input, and that the single-pass tokenizer agrees with a naive
// reference: split, lowercase, drop short, long and stop words, stem.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"Hello, World", "日本語 テキスト", "ÉCOLE\xffx", strings.Repeat("ab", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokenize(s)
		for _, tok := range toks {
			if utf8.RuneCountInString(tok) < 2 || len(tok) > maxTokenBytes {
				t.Fatalf("bad length %q", tok)
			}
			if _, stop := stopwords[tok]; stop {
				t.Fatalf("stopword %q", tok)
			}
			for _, r := range tok {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) || unicode.ToLower(r) != r {
					t.Fatalf("bad rune %q in %q", r, tok)
				}
			}
		}
		var want []string
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			w = strings.Map(unicode.ToLower, w)
			if utf8.RuneCountInString(w) < 2 || len(w) > maxTokenBytes {
				continue
			}
			if _, stop := stopwords[w]; stop {
				continue
			}
			w = string(stem([]byte(w)))
			if _, stop := stopwords[w]; !stop && len(w) > 1 {
				want = append(want, w)
			}
		}
		if !slices.Equal(toks, want) {
			t.Fatalf("Tokenize(%q) = %q, reference %q", s, toks, want)
		}
	})
}
