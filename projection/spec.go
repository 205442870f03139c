package projection

import (
	"fmt"
	"time"

	"github.com/mnemohq/mnemo/namespace"
)

// MaxIDLen bounds a spec id, in bytes.
const MaxIDLen = 128

// Spec defines a projection: which memories of Source (Filter), how much of
// each (Level), for whom (Target), and whether the view follows the source
// (Live) or is a snapshot taken at creation.
//
// The node fills ID, Creator (the principal that asked) and CreatedAt before
// calling Validate; an HTTP request body carries only the other fields. The
// caller must also check that Creator holds share permission on Source:
// Validate checks form, not authority.
type Spec struct {
	ID        string            `json:"id,omitempty"`
	Source    namespace.Address `json:"source"`
	Target    namespace.Address `json:"target"`
	Filter    Filter            `json:"filter"`
	Level     Level             `json:"level"`
	Live      bool              `json:"live"`
	Creator   namespace.Address `json:"creator,omitzero"`
	CreatedAt time.Time         `json:"created_at,omitzero"`
}

// Validate reports the first problem with s: the id must be 1..MaxIDLen
// bytes of [A-Za-z0-9._:-]; Source a canonical namespace address; Target an
// agent principal (agent://NAME, no path) other than the agent that owns
// Source; Level one of L1, L2, L3; the Filter valid; Creator an agent
// principal; CreatedAt set. Errors wrap ErrInvalid (a bad predicate gives a
// *PredicateError, which does too).
func (s Spec) Validate() error {
	if err := checkID(s.ID); err != nil {
		return err
	}
	if err := checkAddress("source", s.Source); err != nil {
		return err
	}
	if err := checkPrincipal("target", s.Target); err != nil {
		return err
	}
	if owner, ok := s.Source.Owner(); ok && owner == s.Target {
		return invalidf("target %s already owns source %s", s.Target, s.Source)
	}
	if !s.Level.Valid() {
		if s.Level == 0 {
			return invalidf("level missing: want L1, L2 or L3")
		}
		return invalidf("level %d: want L1, L2 or L3", uint8(s.Level))
	}
	if err := s.Filter.Validate(); err != nil {
		return err
	}
	if err := checkPrincipal("creator", s.Creator); err != nil {
		return err
	}
	if s.CreatedAt.IsZero() {
		return invalidf("created_at missing")
	}
	return nil
}

func checkID(id string) error {
	if id == "" {
		return invalidf("id missing")
	}
	if len(id) > MaxIDLen {
		return invalidf("id is %d bytes, limit %d", len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(isLetter(c) || isDigit(c) || c == '.' || c == ':' || c == '-') { // isLetter admits '_'
			return invalidf("id %q: byte %d (%q) is not one of [A-Za-z0-9._:-]", shorten(id), i, c)
		}
	}
	return nil
}

// checkAddress accepts only canonical, parseable addresses: a hand-built
// Address is not checked by package namespace until it is marshalled.
func checkAddress(what string, a namespace.Address) error {
	if a.IsZero() {
		return invalidf("%s missing", what)
	}
	if _, err := a.MarshalText(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, what, err)
	}
	return nil
}

func checkPrincipal(what string, a namespace.Address) error {
	if err := checkAddress(what, a); err != nil {
		return err
	}
	if a.Kind != namespace.KindAgent || a.Path != "" {
		return invalidf("%s %s is not an agent principal (agent://NAME)", what, a)
	}
	return nil
}

// Projector is a validated Spec with its filter compiled: the form to use
// for every change of a live projection. It is immutable and safe for
// concurrent use.
type Projector struct {
	spec Spec
	m    *matcher
}

// NewProjector validates spec (see Spec.Validate) and compiles its filter.
func NewProjector(spec Spec) (*Projector, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	m, err := spec.Filter.compile()
	if err != nil {
		return nil, err
	}
	return &Projector{spec: spec, m: m}, nil
}

// Spec returns the spec the Projector was built from.
func (p *Projector) Spec() Spec { return p.spec }

// Match reports whether it belongs in the view (see Filter.Match).
func (p *Projector) Match(it Item) bool { return p.m.match(&it) }

// Project reduces it to the spec's level (see the package function Project).
func (p *Projector) Project(it Item) Item { return Project(it, p.spec.Level) }

// View returns the projected items of a source snapshot that belong in the
// view, in the order given: what a new projection (live or not) starts with,
// and what a full resync compares against.
func (p *Projector) View(items []Item) []Item {
	var out []Item
	for _, it := range items {
		if p.Match(it) {
			out = append(out, p.Project(it))
		}
	}
	return out
}
