package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on what a caller may write. Over-long content is ErrTooLarge (413);
// everything else malformed is ErrInvalid (400).
const (
	MaxContentBytes = 64 << 10
	MaxTitleBytes   = 512
	MaxSummaryBytes = 4 << 10
	MaxTags         = 32
	MaxTagBytes     = 64
	MaxLinkedFiles  = 64
	MaxPathBytes    = 512
	MaxKeyBytes     = 256 // topic key, project, subject, session id
	DefaultType     = "observation"
	DefaultScope    = "project"
	defaultImport   = 0.5
	defaultConfid   = 0.8
)

var (
	scopes   = []string{"session", "user", "project", "policy", "global"}
	channels = []string{"private", "public", "team", "agent"}
)

// saveParams carries what only internal callers (import, compaction) set.
type saveParams struct {
	id         string
	author     string
	lineage    string
	createdAt  time.Time
	updatedAt  time.Time
	deletedAt  *time.Time
	provenance []string
	noUpsert   bool
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

func validType(t string) error {
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

func oneOf(field, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return invalid("%s %q: must be one of %s", field, v, strings.Join(allowed, ", "))
}

func unit(field string, v *float64) error {
	if v != nil && (*v < 0 || *v > 1 || *v != *v) {
		return invalid("%s must be between 0 and 1, got %v", field, *v)
	}
	return nil
}

// text checks a text field: valid UTF-8, no NUL byte (C strings, logs and
// terminals downstream cut or mangle at one), at most limit bytes.
func text(field, v string, limit int) error {
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

// checkMemoryID accepts a memory id as newID and derivedID make them: 26
// characters of the Crockford base32 alphabet. Every other kind of record
// (sessions "s:", grants "acl:", edits "edit:", approvals "appr:") has a
// prefix outside that alphabet, so no accepted id can name one, nor
// contain a path separator.
func checkMemoryID(id string) error {
	if len(id) != 26 {
		return invalid("id %q is not a mnemo id (26 characters of 0-9 and A-Z without I, L, O, U)", id)
	}
	for i := 0; i < len(id); i++ {
		if !strings.ContainsRune(crockford, rune(id[i])) {
			return invalid("id %q is not a mnemo id: %q is outside the id alphabet (0-9 and A-Z without I, L, O, U)", id, id[i])
		}
	}
	return nil
}

// cleanList trims, drops empties and duplicates, and checks limits.
func cleanList(field string, in []string, maxN, maxLen int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" || seen[v] {
			continue
		}
		if err := text(field, v, maxLen); err != nil {
			return nil, err
		}
		seen[v] = true
		out = append(out, v)
	}
	if len(out) > maxN {
		return nil, invalid("at most %d %s, got %d", maxN, field, len(out))
	}
	return out, nil
}

// deriveTitle takes the first line of the content, cut to 80 characters.
func deriveTitle(content string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(content), "\n")
	return truncateRunes(strings.TrimSpace(line), 80)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

// normaliseSave validates a save and fills its defaults.
func normaliseSave(req *SaveRequest) (saveParams, error) {
	req.Type = strings.TrimSpace(req.Type)
	if req.Type == "" {
		req.Type = DefaultType
	}
	if err := validType(req.Type); err != nil {
		return saveParams{}, err
	}
	if strings.TrimSpace(req.Content) == "" {
		return saveParams{}, invalid("content is required")
	}
	req.Title = strings.TrimSpace(req.Title)
	if req.Title == "" {
		req.Title = deriveTitle(req.Content)
	}
	for _, f := range []struct {
		name, v string
		limit   int
	}{{"content", req.Content, MaxContentBytes}, {"title", req.Title, MaxTitleBytes},
		{"summary", req.Summary, MaxSummaryBytes}, {"topic_key", req.TopicKey, MaxKeyBytes},
		{"project", req.Project, MaxKeyBytes}, {"subject_type", req.SubjectType, MaxKeyBytes},
		{"subject_id", req.SubjectID, MaxKeyBytes}, {"session_id", req.SessionID, MaxKeyBytes}} {
		if err := text(f.name, f.v, f.limit); err != nil {
			return saveParams{}, err
		}
	}
	req.TopicKey = strings.TrimSpace(req.TopicKey)
	if req.Scope == "" {
		req.Scope = DefaultScope
	}
	if err := oneOf("scope", req.Scope, scopes); err != nil {
		return saveParams{}, err
	}
	if req.Channel != "" {
		if err := oneOf("channel", req.Channel, channels); err != nil {
			return saveParams{}, err
		}
	}
	if err := unit("importance", req.Importance); err != nil {
		return saveParams{}, err
	}
	if err := unit("confidence", req.Confidence); err != nil {
		return saveParams{}, err
	}
	if req.Importance == nil {
		v := defaultImport
		req.Importance = &v
	}
	if req.Confidence == nil {
		v := defaultConfid
		req.Confidence = &v
	}
	var err error
	if req.Tags, err = cleanList("tags", req.Tags, MaxTags, MaxTagBytes); err != nil {
		return saveParams{}, err
	}
	if req.LinkedFiles, err = cleanList("linked_files", req.LinkedFiles, MaxLinkedFiles, MaxPathBytes); err != nil {
		return saveParams{}, err
	}
	return saveParams{}, nil
}

// normaliseUpdate validates a partial update.
func normaliseUpdate(req *UpdateRequest) error {
	if req.Type != nil {
		if err := validType(*req.Type); err != nil {
			return err
		}
	}
	if req.Content != nil && strings.TrimSpace(*req.Content) == "" {
		return invalid("content cannot be empty")
	}
	if req.Title != nil {
		t := strings.TrimSpace(*req.Title)
		if t == "" {
			return invalid("title cannot be empty")
		}
		req.Title = &t
	}
	for _, f := range []struct {
		name  string
		v     *string
		limit int
	}{{"content", req.Content, MaxContentBytes}, {"title", req.Title, MaxTitleBytes},
		{"summary", req.Summary, MaxSummaryBytes}, {"topic_key", req.TopicKey, MaxKeyBytes},
		{"project", req.Project, MaxKeyBytes}, {"subject_type", req.SubjectType, MaxKeyBytes},
		{"subject_id", req.SubjectID, MaxKeyBytes}, {"session_id", req.SessionID, MaxKeyBytes}} {
		if f.v != nil {
			if err := text(f.name, *f.v, f.limit); err != nil {
				return err
			}
		}
	}
	if req.Scope != nil {
		if err := oneOf("scope", *req.Scope, scopes); err != nil {
			return err
		}
	}
	if req.Channel != nil && *req.Channel != "" {
		if err := oneOf("channel", *req.Channel, channels); err != nil {
			return err
		}
	}
	if err := unit("importance", req.Importance); err != nil {
		return err
	}
	if err := unit("confidence", req.Confidence); err != nil {
		return err
	}
	for _, l := range []struct {
		name      string
		v         *[]string
		maxN, len int
	}{{"tags", req.Tags, MaxTags, MaxTagBytes}, {"linked_files", req.LinkedFiles, MaxLinkedFiles, MaxPathBytes}} {
		if l.v != nil {
			out, err := cleanList(l.name, *l.v, l.maxN, l.len)
			if err != nil {
				return err
			}
			*l.v = out
		}
	}
	return nil
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
