package projection

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is wrapped by every error about a malformed spec, filter,
	// glob or predicate. Test with errors.Is.
	ErrInvalid = errors.New("projection: invalid spec")
	// ErrCorrupt is the category of every DecodeSpec failure: bytes from disk
	// or a peer that are not the canonical encoding of a valid spec.
	ErrCorrupt = errors.New("projection: corrupt spec encoding")
)

// PredicateError reports a predicate that does not compile. Pos is the
// 1-based byte offset in the predicate text of the offending token (one past
// the end for "unexpected end"). It wraps ErrInvalid.
type PredicateError struct {
	Pos int
	Msg string
}

func (e *PredicateError) Error() string {
	return fmt.Sprintf("projection: predicate: %s at %d", e.Msg, e.Pos)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *PredicateError) Unwrap() error { return ErrInvalid }

// invalidf builds an ErrInvalid error: "projection: invalid spec: <msg>".
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
