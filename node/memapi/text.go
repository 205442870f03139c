package memapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// CheckType accepts a memory type: 1..32 characters of a-z, 0-9, _ and -.
// The error is ErrInvalid.
func CheckType(t string) error {
	if len(t) == 0 || len(t) > 32 {
		return invalid("type must be 1..32 characters of a-z, 0-9, _ or -")
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return invalid("type %q: only a-z, 0-9, _ and - are allowed", t)
		}
	}
	return nil
}

// Scopes are a memory's scopes; Channels the channels it may be read on.
var (
	Scopes   = []string{"session", "user", "project", "policy", "global"}
	Channels = []string{"private", "public", "team", "agent"}
)

// CheckScope accepts one of Scopes; the error is ErrInvalid.
func CheckScope(scope string) error { return OneOf("scope", scope, Scopes) }

// OneOf accepts v when it is one of allowed; the error (ErrInvalid) names
// field and lists them.
func OneOf(field, v string, allowed []string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return invalid("%s %q: must be one of %s", field, v, strings.Join(allowed, ", "))
}

// CheckText checks a text field: valid UTF-8, no NUL byte (C strings, logs
// and terminals downstream cut or mangle at one), at most limit bytes
// (content over its limit is ErrTooLarge, anything else ErrInvalid).
func CheckText(field, v string, limit int) error {
	if !utf8.ValidString(v) {
		return invalid("%s is not valid UTF-8", field)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return invalid("%s contains a NUL byte", field)
	}
	if len(v) > limit {
		if field == "content" {
			return fmt.Errorf("%w: content is %d bytes (max %d)", ErrTooLarge, len(v), limit)
		}
		return invalid("%s is %d bytes (max %d)", field, len(v), limit)
	}
	return nil
}

// DeriveTitle is the title of a memory saved without one: the first line
// of the content, cut to 80 characters.
func DeriveTitle(content string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(content), "\n")
	return TruncateRunes(strings.TrimSpace(line), 80)
}

// TruncateRunes cuts s to n runes, marking the cut with "…".
func TruncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

// SuggestTopicKey proposes a stable topic key "<type>/<slug of title>" so an
// agent can upsert the same topic later; the content is used when there is
// no title.
func SuggestTopicKey(typ, title, content string) string {
	typ = strings.TrimSpace(strings.ToLower(typ))
	if CheckType(typ) != nil {
		typ = DefaultType
	}
	base := strings.TrimSpace(title)
	if base == "" {
		base = DeriveTitle(content)
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if ok {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 60 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "untitled"
	}
	return typ + "/" + slug
}

// CheckJSONText refuses, before anything decodes it, a JSON document whose
// strings an agent could not have meant as text: bytes that are not UTF-8,
// an unpaired UTF-16 surrogate escape ("\ud800"), or a NUL ("\u0000").
// encoding/json would turn the first two into U+FFFD without a word, so
// the check must see the raw bytes; the HTTP API and the MCP tools run it
// on every body, imports on the file. The error is ErrInvalid naming the
// field as a path ("title", "tags[1]", "memories[3].content"). Malformed
// JSON is left to the decoder (nil here).
func CheckJSONText(data []byte) error {
	if utf8.Valid(data) && !hasSuspectEscape(data) {
		return nil // the common case: one pass, no allocation
	}
	type frame struct {
		obj     bool
		key     string
		idx     int
		wantKey bool
	}
	var st []frame
	path := func() string {
		var b strings.Builder
		for _, f := range st {
			switch {
			case f.obj && f.key != "":
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			case !f.obj && f.idx >= 0:
				fmt.Fprintf(&b, "[%d]", f.idx)
			}
		}
		if b.Len() == 0 {
			return "the body"
		}
		return b.String()
	}
	begin := func() { // a value starts in the current container
		if n := len(st); n > 0 && !st[n-1].obj {
			st[n-1].idx++
		}
	}
	end := func() { // a value ended in the current container
		if n := len(st); n > 0 && st[n-1].obj {
			st[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed JSON: the decoder reports that
		}
		cur := dec.InputOffset()
		raw := data[prev:cur]
		prev = cur
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				begin()
				st = append(st, frame{obj: v == '{', idx: -1, wantKey: v == '{'})
			default:
				st = st[:len(st)-1]
				end()
			}
		case string:
			if n := len(st); n > 0 && st[n-1].obj && st[n-1].wantKey {
				st[n-1].key = "" // the path of the object holding the key
				if why := badJSONString(raw); why != "" {
					return invalid("a key in %s %s", path(), why)
				}
				st[n-1].key, st[n-1].wantKey = v, false
				continue
			}
			begin()
			if why := badJSONString(raw); why != "" {
				return invalid("%s %s", path(), why)
			}
			end()
		default:
			begin()
			end()
		}
	}
}

// hasSuspectEscape reports whether data may hold a "\u0000" or a surrogate
// escape ("\uD800"-"\uDFFF"); an escaped backslash before a "u" makes a
// false alarm, which the slow path clears.
func hasSuspectEscape(data []byte) bool {
	for i := 0; i+5 < len(data); i++ {
		if data[i] != '\\' || data[i+1] != 'u' {
			continue
		}
		h := data[i+2 : i+6]
		if string(h) == "0000" || (h[0]|0x20) == 'd' && strings.IndexByte("89abcdefABCDEF", h[1]) >= 0 {
			return true
		}
	}
	return false
}

// badJSONString says what is wrong with the raw JSON string token at the
// end of raw (after any separator), or "" if nothing is.
func badJSONString(raw []byte) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	for i := bytes.IndexByte(raw, '"') + 1; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue // a one-letter escape
		}
		r, ok := hex4(raw[i+1:])
		if !ok {
			return "" // malformed: the decoder reports it
		}
		i += 4
		switch {
		case r == 0:
			return "contains a NUL character (\\u0000)"
		case r >= 0xDC00 && r <= 0xDFFF:
			return "is not valid UTF-8 (an unpaired surrogate escape)"
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return "is not valid UTF-8 (an unpaired surrogate escape)"
			}
			lo, ok := hex4(raw[i+3:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return "is not valid UTF-8 (an unpaired surrogate escape)"
			}
			i += 6
		}
	}
	return ""
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// EstimateTokens is the budget arithmetic of Context and the context
// bundle: one token per four bytes, rounded up — close to what tokenizers
// give for English and code.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// OneLine folds s's whitespace, newlines included, to single spaces.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// OrDash is s, or "-" when s is empty (a blank field in an entry).
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ContextEntryRunes is how much of a memory's content one entry of Context
// or the context bundle shows.
const ContextEntryRunes = 600

// fromMark is the marker of an inbox item's writer in text ("" when m is
// not from an inbox).
func fromMark(m Memory) string {
	if m.From == "" {
		return ""
	}
	return "[from " + m.From + "] "
}

// ContextEntry is one memory as a line of Context and the context bundle.
func ContextEntry(m Memory) string {
	entry := fmt.Sprintf("- %s[%s] %s (%s, id %s", fromMark(m), m.Type, m.Title, m.CreatedAt.Format("2006-01-02"), m.ID)
	if len(m.Tags) > 0 {
		entry += ", tags " + strings.Join(m.Tags, ",")
	}
	return entry + "): " + TruncateRunes(OneLine(m.Content), ContextEntryRunes) + "\n"
}
