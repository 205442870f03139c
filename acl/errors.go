package acl

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownPermission is wrapped by ParsePermission's error, which names
	// the text it did not recognise.
	ErrUnknownPermission = errors.New("acl: unknown permission")
	// ErrDenied is wrapped by Policy.Check; the error names the principal, the
	// missing permission and the namespace.
	ErrDenied = errors.New("acl: permission denied")
	// ErrCorrupt is the category of every decoding failure: bytes from disk or
	// a peer that are not a canonical record encoding within the size limits.
	ErrCorrupt = errors.New("acl: corrupt record")
	// ErrInvalid reports a record that is well formed as bytes but not as a
	// record (a grant without permissions, a path in the namespace, a creation
	// record for an agent namespace), or a bad argument to a constructor.
	// Decoders wrap it together with ErrCorrupt.
	ErrInvalid = errors.New("acl: invalid record")
	// ErrBadSignature reports a record whose signature is missing or does not
	// verify under the key the record names.
	ErrBadSignature = errors.New("acl: bad signature")
	// ErrNotAuthorized reports a record whose signer does not hold the
	// authority the record needs. Such a record stays in the book (it may
	// count later, when a grant that authorises its signer arrives) but does
	// not count.
	ErrNotAuthorized = errors.New("acl: signer not authorized")
	// ErrWrongKey reports a record whose signer principal is bound (by the
	// node's key lookup) to another key, or to no key at all. It wraps
	// ErrNotAuthorized.
	ErrWrongKey = fmt.Errorf("%w: key not bound to signer principal", ErrNotAuthorized)
	// ErrBadKey reports private or public key text that does not decode.
	ErrBadKey = errors.New("acl: bad key")
)
