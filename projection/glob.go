package projection

import (
	"strings"
	"unicode/utf8"
)

// MaxGlobLen bounds one linked-file glob, in bytes.
const MaxGlobLen = 256

// CheckGlob reports whether pattern is a usable linked-file glob: 1 to
// MaxGlobLen bytes of valid UTF-8. Every such pattern has a meaning (see
// MatchGlob), so there is nothing else to reject. Errors wrap ErrInvalid.
func CheckGlob(pattern string) error {
	switch {
	case pattern == "":
		return invalidf("empty glob")
	case len(pattern) > MaxGlobLen:
		return invalidf("glob is %d bytes, limit %d", len(pattern), MaxGlobLen)
	case !utf8.ValidString(pattern):
		return invalidf("glob %q is not valid UTF-8", pattern)
	}
	return nil
}

// MatchGlob reports whether the slash-separated path matches pattern:
//
//   - a segment that is exactly "**" matches zero or more whole segments, so
//     "src/payments/**" matches "src/payments/x.go", "src/payments/a/b.go"
//     and "src/payments" itself, but not "src/payment/x.go";
//   - "*" matches any run of characters within one segment (never "/");
//   - "?" matches exactly one character (not "/");
//   - everything else matches itself, byte for byte and case-sensitively.
//     There are no escapes and no character classes: "[" and "\" are literal.
//
// A "**" that is not a whole segment ("a**b") is two "*": it stays within a
// segment. Paths are matched as stored: "./src/a.go" does not match "src/*".
// Matching takes O(len(pattern) × len(path)) time, with no recursion.
func MatchGlob(pattern, path string) bool {
	ps := strings.Split(pattern, "/")
	ss := strings.Split(path, "/")
	// Greedy match with a single backtrack point: "**" is a star over
	// segments and every other pattern segment matches exactly one segment,
	// so the classic wildcard algorithm applies with segments as letters.
	p, s := 0, 0
	star, mark := -1, 0
	for s < len(ss) {
		switch {
		case p < len(ps) && ps[p] == "**":
			star, mark = p, s
			p++
		case p < len(ps) && matchSegment(ps[p], ss[s]):
			p++
			s++
		case star >= 0:
			mark++
			p, s = star+1, mark
		default:
			return false
		}
	}
	for p < len(ps) && ps[p] == "**" {
		p++
	}
	return p == len(ps)
}

// matchSegment matches one segment against a pattern segment with "*" and
// "?", by the same greedy algorithm over characters.
func matchSegment(pat, seg string) bool {
	p, s := 0, 0
	star, mark := -1, 0
	for s < len(seg) {
		if p < len(pat) {
			switch pat[p] {
			case '*':
				star, mark = p, s
				p++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(seg[s:])
				p++
				s += w
				continue
			default:
				if pat[p] == seg[s] {
					p++
					s++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// The star swallows one more character (a whole rune, so "?"
		// after it never starts inside a multi-byte character).
		_, w := utf8.DecodeRuneInString(seg[mark:])
		mark += w
		p, s = star+1, mark
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}
