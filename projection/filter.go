package projection

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of a Filter.
const (
	MaxFilterValues = 64  // entries in each of Types, Tags and LinkedFiles
	MaxValueLen     = 128 // bytes of one type or tag
)

// Filter selects the memories of the source that go into a view. Every
// criterion that is set must hold; an empty Filter selects every live
// memory. Soft-deleted memories never match.
type Filter struct {
	// Types: the memory's type is one of these (case-insensitive).
	Types []string `json:"types,omitempty"`
	// Tags: the memory has at least one of these tags (case-insensitive).
	Tags []string `json:"tags,omitempty"`
	// MinConfidence, MinImportance: the memory's value is at least this (0..1).
	MinConfidence *float64 `json:"min_confidence,omitempty"`
	MinImportance *float64 `json:"min_importance,omitempty"`
	// LinkedFiles: at least one linked file matches at least one glob (see MatchGlob).
	LinkedFiles []string `json:"linked_files,omitempty"`
	// Predicate: an expression of the predicate language (see the package
	// documentation); "" means none.
	Predicate string `json:"predicate,omitempty"`
}

// matcher is a validated, compiled Filter.
type matcher struct {
	types, tags []string // lowercased
	minC, minI  float64  // -1 when unset
	globs       []string
	pred        *Predicate
}

// Validate reports the first problem with f. Errors wrap ErrInvalid; a bad
// predicate gives a *PredicateError.
func (f Filter) Validate() error {
	_, err := f.compile()
	return err
}

// Match reports whether it passes every criterion of f. It compiles f on
// each call (use a Projector to compile once); an invalid filter matches
// nothing, so a bad spec can never leak memories.
func (f Filter) Match(it Item) bool {
	m, err := f.compile()
	return err == nil && m.match(&it)
}

func (f Filter) compile() (*matcher, error) {
	m := &matcher{minC: -1, minI: -1}
	var err error
	if m.types, err = checkValues("types", f.Types); err != nil {
		return nil, err
	}
	if m.tags, err = checkValues("tags", f.Tags); err != nil {
		return nil, err
	}
	if m.minC, err = checkMin("min_confidence", f.MinConfidence); err != nil {
		return nil, err
	}
	if m.minI, err = checkMin("min_importance", f.MinImportance); err != nil {
		return nil, err
	}
	if len(f.LinkedFiles) > MaxFilterValues {
		return nil, invalidf("filter: linked_files has %d globs, limit %d", len(f.LinkedFiles), MaxFilterValues)
	}
	for i, g := range f.LinkedFiles {
		if err := CheckGlob(g); err != nil {
			return nil, invalidf("filter: linked_files[%d]: %s", i, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		}
	}
	m.globs = slices.Clone(f.LinkedFiles)
	if f.Predicate != "" {
		if m.pred, err = CompilePredicate(f.Predicate); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func checkValues(name string, vs []string) ([]string, error) {
	if len(vs) > MaxFilterValues {
		return nil, invalidf("filter: %s has %d entries, limit %d", name, len(vs), MaxFilterValues)
	}
	out := make([]string, 0, len(vs))
	for i, v := range vs {
		switch {
		case strings.TrimSpace(v) == "":
			return nil, invalidf("filter: %s[%d] is empty", name, i)
		case len(v) > MaxValueLen:
			return nil, invalidf("filter: %s[%d] is %d bytes, limit %d", name, i, len(v), MaxValueLen)
		case !utf8.ValidString(v):
			return nil, invalidf("filter: %s[%d] is not valid UTF-8", name, i)
		}
		out = append(out, strings.ToLower(v))
	}
	return out, nil
}

func checkMin(name string, v *float64) (float64, error) {
	if v == nil {
		return -1, nil
	}
	if math.IsNaN(*v) || *v < 0 || *v > 1 {
		return 0, invalidf("filter: %s must be between 0 and 1, got %v", name, *v)
	}
	return *v, nil
}

func (m *matcher) match(it *Item) bool {
	if it.DeletedAt != nil || it.Quarantined {
		return false
	}
	if len(m.types) > 0 && !slices.Contains(m.types, strings.ToLower(it.Type)) {
		return false
	}
	if len(m.tags) > 0 && !slices.ContainsFunc(it.Tags, func(t string) bool {
		return slices.Contains(m.tags, strings.ToLower(t))
	}) {
		return false
	}
	// A NaN importance or confidence fails a threshold (NaN >= x is false).
	if m.minC >= 0 && !(it.Confidence >= m.minC) {
		return false
	}
	if m.minI >= 0 && !(it.Importance >= m.minI) {
		return false
	}
	if len(m.globs) > 0 && !slices.ContainsFunc(it.LinkedFiles, func(f string) bool {
		return slices.ContainsFunc(m.globs, func(g string) bool { return MatchGlob(g, f) })
	}) {
		return false
	}
	return m.pred.Eval(*it)
}
