package memory

import (
	"fmt"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Defaults of a save. The limits on what a caller may write are memapi's
// (api.go): over-long content is ErrTooLarge (413), everything else
// malformed ErrInvalid (400).
const (
	defaultImport = 0.5
	defaultConfid = 0.8
)

var (
	scopes   = memapi.Scopes
	channels = memapi.Channels
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
	// contentHash is schema.ContentHash(req.Content) when made before the
	// write (Save: not in the build stage, where writes queue one at a
	// time), or "".
	contentHash string
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

func oneOf(field, v string, allowed []string) error { return memapi.OneOf(field, v, allowed) }

func unit(field string, v *float64) error {
	if v != nil && (*v < 0 || *v > 1 || *v != *v) {
		return invalid("%s must be between 0 and 1, got %v", field, *v)
	}
	return nil
}

// text checks a text field (memapi.CheckText).
func text(field, v string, limit int) error { return memapi.CheckText(field, v, limit) }

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

// normaliseSave validates a save and fills its defaults.
func normaliseSave(req *SaveRequest) (saveParams, error) {
	req.Type = strings.TrimSpace(req.Type)
	if req.Type == "" {
		req.Type = DefaultType
	}
	if err := memapi.CheckType(req.Type); err != nil {
		return saveParams{}, err
	}
	if strings.TrimSpace(req.Content) == "" {
		return saveParams{}, invalid("content is required")
	}
	req.Title = strings.TrimSpace(req.Title)
	if req.Title == "" {
		req.Title = memapi.DeriveTitle(req.Content)
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
		if err := memapi.CheckType(*req.Type); err != nil {
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
