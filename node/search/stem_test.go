package search

import (
	"strings"
	"testing"
)

// TestStem pins stems worked out by hand from the Snowball English rules,
// at least one case per step and special rule, so a broken step fails.
func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		// short words, non-letters and other scripts are left alone
		"go": "go", "v2": "v2", "http2": "http2", "naïve": "naïve", "2023": "2023",
		// exceptions and words kept after step 1a
		"skies": "sky", "dying": "die", "news": "news", "early": "earli", "exceed": "exceed", "inning": "inning",
		// step 1a
		"caresses": "caress", "ponies": "poni", "ties": "tie", "cries": "cri", "gas": "gas", "gaps": "gap",
		"kiwis": "kiwi", "kids": "kid", "bus": "bus", "class": "class",
		// step 1b: -ed/-ing with e restored, doubles undone, short words
		"adopted": "adopt", "adopting": "adopt", "hopping": "hop", "hoped": "hope", "luxuriating": "luxuri",
		"agreed": "agre", "feed": "feed", "sing": "sing", "troubled": "troubl", "sized": "size",
		// step 1c: y after a non-vowel that is not the first letter
		"cry": "cri", "by": "by", "say": "say", "screenplays": "screenplay",
		// step 2
		"relational": "relat", "generously": "generous", "conditional": "condit", "digitizer": "digit",
		"hopefulness": "hope", "sensibility": "sensibl", "archaeology": "archaeolog",
		// step 3
		"happiness": "happi", "hopeful": "hope", "electrical": "electr", "formalize": "formal",
		// step 4 (R2) and -ion after s or t
		"adoption": "adopt", "adjustment": "adjust", "decisions": "decis", "decision": "decis", "onion": "onion",
		// step 5
		"travelled": "travel", "traveling": "travel", "generate": "generat", "hope": "hope",
		// y as a consonant
		"youth": "youth", "playing": "play", "enjoying": "enjoy",
	} {
		if got := string(stem([]byte(in))); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStemExceptionsBound(t *testing.T) {
	for w := range stemExceptions {
		if len(w) > maxStemException {
			t.Errorf("exception %q is longer than maxStemException", w)
		}
	}
}

// FuzzStem: the stem of any word is no longer than the word plus one byte,
// keeps a non-empty result for letter words, and never panics.
func FuzzStem(f *testing.F) {
	for _, s := range []string{"generously", "yyyy", "eed", "ied", "aaaaing", "sses"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := []byte(strings.ToLower(s))
		n := len(w)
		got := stem(w)
		if len(got) > n+1 || (n > 0 && len(got) == 0) {
			t.Fatalf("stem(%q) = %q", s, got)
		}
	})
}
