package projection

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Level is how much of a memory a view carries. The zero Level is invalid.
type Level uint8

// The levels, from most compressed to complete. See Project.
const (
	L1 Level = iota + 1 // headline: id, type, title, tags, importance, confidence
	L2                  // L1 + summary (or a content excerpt) + linked files
	L3                  // the full memory
)

// ExcerptRunes bounds the content excerpt that stands in for a missing
// summary at L2 and L3, in characters (runes), "…" included.
const ExcerptRunes = 280

// String returns "L1", "L2" or "L3" ("Level(N)" for anything else).
func (l Level) String() string {
	if l.Valid() {
		return fmt.Sprintf("L%d", uint8(l))
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// Valid reports whether l is L1, L2 or L3.
func (l Level) Valid() bool { return l >= L1 && l <= L3 }

// ParseLevel accepts "L1", "L2" or "L3" (any case). Errors wrap ErrInvalid.
func ParseLevel(s string) (Level, error) {
	switch strings.ToUpper(s) {
	case "L1":
		return L1, nil
	case "L2":
		return L2, nil
	case "L3":
		return L3, nil
	}
	return 0, invalidf("level %q: want L1, L2 or L3", shorten(s))
}

// MarshalText encodes l as "L1", "L2" or "L3"; the zero Level as "".
func (l Level) MarshalText() ([]byte, error) {
	if l == 0 {
		return []byte{}, nil
	}
	if !l.Valid() {
		return nil, invalidf("level %d: want L1, L2 or L3", uint8(l))
	}
	return []byte(l.String()), nil
}

// UnmarshalText is ParseLevel; empty text gives the zero (invalid) Level.
func (l *Level) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*l = 0
		return nil
	}
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Project returns it reduced to level; fields outside the level are zero.
//
// Every level keeps the identity and headline (ID, Type, Title, Tags,
// Importance, Confidence) and the cheap metadata a subscriber filters and
// orders by (Scope, SubjectType, SubjectID, Project, CreatedAt, UpdatedAt,
// DeletedAt, Quarantined). L2 adds LinkedFiles and Summary: the memory's own summary if it
// has one, else an excerpt of the content (see Excerpt). L3 adds everything
// else (Content, SessionID, Channel, Author, TopicKey, Lineage, ContentHash)
// and fills a missing Summary the same way, so a field present at a lower
// level has the same value at every higher one. Project is idempotent. An
// invalid level projects as L1: the least data is the safe default.
//
// Slices and DeletedAt are copied; the result shares no memory with it.
func Project(it Item, level Level) Item {
	out := Item{
		ID:          it.ID,
		Type:        it.Type,
		Title:       it.Title,
		Tags:        slices.Clone(it.Tags),
		Importance:  it.Importance,
		Confidence:  it.Confidence,
		Scope:       it.Scope,
		SubjectType: it.SubjectType,
		SubjectID:   it.SubjectID,
		Project:     it.Project,
		CreatedAt:   it.CreatedAt,
		UpdatedAt:   it.UpdatedAt,
		Quarantined: it.Quarantined,
	}
	if it.DeletedAt != nil {
		t := *it.DeletedAt
		out.DeletedAt = &t
	}
	if level == L2 || level == L3 {
		out.Summary = it.Summary
		if strings.TrimSpace(it.Summary) == "" {
			out.Summary = Excerpt(it.Content, ExcerptRunes)
		}
		out.LinkedFiles = slices.Clone(it.LinkedFiles)
	}
	if level == L3 {
		out.Content = it.Content
		out.SessionID = it.SessionID
		out.Channel = it.Channel
		out.Author = it.Author
		out.TopicKey = it.TopicKey
		out.Lineage = it.Lineage
		out.ContentHash = it.ContentHash
	}
	return out
}

// Excerpt returns s with runs of white space collapsed to one space and the
// ends trimmed, cut to at most n runes (n >= 2): when it is longer, it is cut
// at the last word boundary that keeps at least half of it (else mid-word)
// and ends in "…". Invalid UTF-8 becomes U+FFFD. Excerpt(Excerpt(s, n), n)
// == Excerpt(s, n).
func Excerpt(s string, n int) string {
	n = max(n, 2)
	rs := make([]rune, 0, min(len(s), n+1))
	pending := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			pending = len(rs) > 0
			continue
		}
		if pending {
			rs = append(rs, ' ')
			pending = false
		}
		rs = append(rs, r)
		if len(rs) > n {
			break
		}
	}
	if len(rs) <= n {
		return string(rs)
	}
	cut := rs[:n-1]
	if rs[n-1] != ' ' { // the cut falls inside a word: back up to its start
		if i := lastSpace(cut); i >= (n-1)/2 {
			cut = cut[:i]
		}
	}
	if len(cut) > 0 && cut[len(cut)-1] == ' ' {
		cut = cut[:len(cut)-1]
	}
	return string(cut) + "…"
}

func lastSpace(rs []rune) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i] == ' ' {
			return i
		}
	}
	return -1
}
