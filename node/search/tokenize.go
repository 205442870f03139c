package search

import (
	"unicode"
	"unicode/utf8"
)

// maxTokenBytes is the longest token kept; longer runs are usually hashes,
// base64 or minified code, which nobody searches for by full value.
const maxTokenBytes = 64 // < 256: Prepared stores a length in a byte

// stopwords are dropped at index and query time. The list is deliberately
// short: words that appear in most English memories and carry no topic,
// and the question words and auxiliaries agents ask with ("when did",
// "how would") — in a memory they are as empty as in the question.
var stopwords = func() map[string]struct{} {
	m := make(map[string]struct{})
	for _, w := range []string{
		"an", "and", "are", "as", "at", "be", "but", "by", "for", "from",
		"has", "have", "he", "her", "his", "if", "in", "into", "is", "it",
		"its", "no", "not", "of", "on", "or", "our", "she", "so", "such",
		"that", "the", "their", "then", "there", "these", "they", "this",
		"to", "was", "we", "were", "will", "with", "you", "your", "than",
		"been", "do", "does", "did", "am", "can", "which", "who", "what",
		"when", "where", "why", "how", "whom", "whose",
		"would", "could", "should", "had", "being",
	} {
		m[w] = struct{}{}
	}
	return m
}()

// Tokenize splits s into index terms: lowercased maximal runs of Unicode
// letters and digits, without tokens of a single rune, tokens longer than
// 64 bytes and English stopwords; words of the letters a–z are replaced by
// their English stem (stem.go), and dropped if that is a stopword or a
// single letter.
func Tokenize(s string) []string {
	var out []string
	var buf []byte
	tokenize(s, buf, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

// tokenize calls emit for every term of s, in order. tok is only valid
// during the call; buf is scratch space that may be reused across calls.
func tokenize(s string, buf []byte, emit func(tok []byte)) []byte {
	buf = buf[:0]
	runes := 0
	flush := func() {
		if runes > 1 && len(buf) <= maxTokenBytes {
			if _, stop := stopwords[string(buf)]; !stop {
				buf = stem(buf)
				if _, stop := stopwords[string(buf)]; !stop && len(buf) > 1 {
					emit(buf)
				}
			}
		}
		buf = buf[:0]
		runes = 0
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				buf = append(buf, c)
				runes++
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+('a'-'A'))
				runes++
			default:
				flush()
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			runes++
		} else {
			flush()
		}
	}
	flush()
	return buf
}
