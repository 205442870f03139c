package search

import (
	"bytes"
	"slices"
)

// stem reduces an English word to its stem in place, following the
// Snowball English ("Porter2") algorithm as Martin Porter describes it, and
// returns the stem (w's backing array is reused; step 1b may append one
// byte). w must be lowercase; a word with anything but the letters a–z, or
// shorter than three bytes, is returned as it is, so numbers, identifiers
// with digits and other scripts keep their exact form. The tokenizer splits
// at apostrophes, so the algorithm's step 0 (possessives) has nothing to do.
//
// Stems are index terms, not words: "adopted", "adopting" and "adoption"
// all become "adopt", "ponies" becomes "poni".
func stem(w []byte) []byte {
	if len(w) < 3 {
		return w
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return w
		}
	}
	if len(w) <= maxStemException {
		if s, ok := stemExceptions[string(w)]; ok {
			return append(w[:0], s...)
		}
	}
	// A y that starts the word or follows a vowel is a consonant: mark it
	// Y so isVowel says so. It is turned back at the end.
	for i, c := range w {
		if c == 'y' && (i == 0 || isVowel(w[i-1])) {
			w[i] = 'Y'
		}
	}
	st := stemmer{w: w}
	st.regions()
	st.step1a()
	if _, keep := stemKeepAfter1a[string(st.w)]; !keep {
		st.step1b()
		st.step1c()
		st.step2()
		st.step3()
		st.step4()
		st.step5()
	}
	w = st.w
	for i, c := range w {
		if c == 'Y' {
			w[i] = 'y'
		}
	}
	return w
}

// stemExceptions are words the rules would get wrong, with their stems.
var stemExceptions = map[string]string{
	"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
	"sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes",
}

// maxStemException is the longest key of stemExceptions.
const maxStemException = 6

// stemKeepAfter1a are words left as they are once step 1a has run.
var stemKeepAfter1a = map[string]struct{}{
	"inning": {}, "outing": {}, "canning": {}, "herring": {}, "earring": {},
	"proceed": {}, "exceed": {}, "succeed": {},
}

type stemmer struct {
	w      []byte
	r1, r2 int // start of the regions R1 and R2 (len(w) when empty)
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}

// regions sets R1, the part after the first non-vowel that follows a
// vowel, and R2, the same taken within R1. Three common prefixes fix R1.
func (s *stemmer) regions() {
	after := func(from int) int {
		for i := from + 1; i < len(s.w); i++ {
			if !isVowel(s.w[i]) && isVowel(s.w[i-1]) {
				return i + 1
			}
		}
		return len(s.w)
	}
	s.r1 = -1
	for _, p := range []string{"gener", "commun", "arsen"} {
		if bytes.HasPrefix(s.w, []byte(p)) {
			s.r1 = len(p)
		}
	}
	if s.r1 < 0 {
		s.r1 = after(0)
	}
	s.r2 = after(s.r1)
}

func (s *stemmer) has(suffix string) bool { return bytes.HasSuffix(s.w, []byte(suffix)) }

// longest returns the longest of suffixes that w ends with, or "".
func (s *stemmer) longest(suffixes *suffixSet) string {
	best := ""
	if len(s.w) == 0 {
		return best
	}
	for _, x := range suffixes[s.w[len(s.w)-1]] {
		if len(x) > len(best) && s.has(x) {
			best = x
		}
	}
	return best
}

// suffixSet holds suffixes by their last byte, so longest only compares
// the few that can match.
type suffixSet [256][]string

func newSuffixSet(suffixes ...string) *suffixSet {
	var set suffixSet
	for _, x := range suffixes {
		set[x[len(x)-1]] = append(set[x[len(x)-1]], x)
	}
	return &set
}

// in reports whether suffix (which w ends with) lies in the region from r.
func (s *stemmer) in(suffix string, r int) bool { return len(s.w)-len(suffix) >= r }

func (s *stemmer) replace(suffix, with string) {
	s.w = append(s.w[:len(s.w)-len(suffix)], with...)
}

// shortSyllableAt reports whether the word's part up to end ends in a short
// syllable: a non-vowel, a vowel, then a non-vowel other than w, x or Y; or,
// at the very start, a vowel then a non-vowel.
func (s *stemmer) shortSyllableAt(end int) bool {
	w := s.w[:end]
	n := len(w)
	if n == 2 {
		return isVowel(w[0]) && !isVowel(w[1])
	}
	if n < 3 {
		return false
	}
	c := w[n-1]
	return !isVowel(w[n-3]) && isVowel(w[n-2]) && !isVowel(c) && c != 'w' && c != 'x' && c != 'Y'
}

// short: the word ends in a short syllable and R1 is empty.
func (s *stemmer) short() bool { return s.r1 >= len(s.w) && s.shortSyllableAt(len(s.w)) }

var step1aSuffixes = newSuffixSet("sses", "ied", "ies", "us", "ss", "s")

func (s *stemmer) step1a() {
	switch x := s.longest(step1aSuffixes); x {
	case "sses":
		s.replace(x, "ss")
	case "ied", "ies":
		if len(s.w) > 4 {
			s.replace(x, "i")
		} else {
			s.replace(x, "ie")
		}
	case "s":
		// Delete if the part before holds a vowel not just before the s.
		for i := 0; i < len(s.w)-2; i++ {
			if isVowel(s.w[i]) {
				s.replace(x, "")
				return
			}
		}
	}
}

var step1bSuffixes = newSuffixSet("eed", "eedly", "ed", "edly", "ing", "ingly")

func (s *stemmer) step1b() {
	x := s.longest(step1bSuffixes)
	switch x {
	case "":
		return
	case "eed", "eedly":
		if s.in(x, s.r1) {
			s.replace(x, "ee")
		}
		return
	}
	if !slices.ContainsFunc(s.w[:len(s.w)-len(x)], isVowel) {
		return
	}
	s.replace(x, "")
	switch {
	case s.has("at"), s.has("bl"), s.has("iz"):
		s.w = append(s.w, 'e')
	case s.endsDouble():
		s.w = s.w[:len(s.w)-1]
	case s.short():
		s.w = append(s.w, 'e')
	}
}

func (s *stemmer) endsDouble() bool {
	n := len(s.w)
	if n < 2 || s.w[n-1] != s.w[n-2] {
		return false
	}
	switch s.w[n-1] {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

func (s *stemmer) step1c() {
	n := len(s.w)
	if n > 2 && (s.w[n-1] == 'y' || s.w[n-1] == 'Y') && !isVowel(s.w[n-2]) {
		s.w[n-1] = 'i'
	}
}

var step2Rules = map[string]string{
	"tional": "tion", "enci": "ence", "anci": "ance", "abli": "able", "entli": "ent",
	"izer": "ize", "ization": "ize", "ational": "ate", "ation": "ate", "ator": "ate",
	"alism": "al", "aliti": "al", "alli": "al", "fulness": "ful", "ousli": "ous", "ousness": "ous",
	"iveness": "ive", "iviti": "ive", "biliti": "ble", "bli": "ble", "fulli": "ful", "lessli": "less",
	"ogi": "og", "li": "",
}

var step2Suffixes = newSuffixSet(keysOf(step2Rules)...)

func (s *stemmer) step2() {
	x := s.longest(step2Suffixes)
	if x == "" || !s.in(x, s.r1) {
		return
	}
	before := len(s.w) - len(x)
	switch x {
	case "ogi":
		if before == 0 || s.w[before-1] != 'l' {
			return
		}
	case "li":
		if before == 0 {
			return
		}
		switch s.w[before-1] {
		case 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'n', 'r', 't':
		default:
			return
		}
	}
	s.replace(x, step2Rules[x])
}

var step3Rules = map[string]string{
	"tional": "tion", "ational": "ate", "alize": "al", "icate": "ic", "iciti": "ic", "ical": "ic",
	"ful": "", "ness": "", "ative": "",
}

var step3Suffixes = newSuffixSet(keysOf(step3Rules)...)

func (s *stemmer) step3() {
	x := s.longest(step3Suffixes)
	if x == "" || !s.in(x, s.r1) || (x == "ative" && !s.in(x, s.r2)) {
		return
	}
	s.replace(x, step3Rules[x])
}

var step4Suffixes = newSuffixSet(
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
	"ism", "ate", "iti", "ous", "ive", "ize", "ion",
)

func (s *stemmer) step4() {
	x := s.longest(step4Suffixes)
	if x == "" || !s.in(x, s.r2) {
		return
	}
	if x == "ion" {
		before := len(s.w) - len(x)
		if before == 0 || (s.w[before-1] != 's' && s.w[before-1] != 't') {
			return
		}
	}
	s.replace(x, "")
}

func (s *stemmer) step5() {
	switch {
	case s.has("e"):
		if s.in("e", s.r2) || (s.in("e", s.r1) && !s.shortSyllableAt(len(s.w)-1)) {
			s.replace("e", "")
		}
	case s.has("l"):
		if s.in("l", s.r2) && len(s.w) > 1 && s.w[len(s.w)-2] == 'l' {
			s.replace("l", "")
		}
	}
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
