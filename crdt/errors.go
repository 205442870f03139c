package crdt

import "errors"

var (
	// ErrCorrupt is the category of every decoding failure: bytes from disk or a
	// peer that are not a valid encoding. Test with errors.Is.
	ErrCorrupt = errors.New("crdt: corrupt encoding")
	// ErrTooLarge reports an input over a configured limit. Decoders return it
	// wrapped together with ErrCorrupt.
	ErrTooLarge = errors.New("crdt: over size limit")
	// ErrClockSkew reports a remote timestamp further ahead of the local wall
	// clock than the clock's maximum skew allows. Nothing is adopted.
	ErrClockSkew = errors.New("crdt: remote timestamp beyond maximum clock skew")
	// ErrRetracted reports a mutation of a retracted id. Retract is final.
	ErrRetracted = errors.New("crdt: record is retracted")
	// ErrStaleTimestamp reports a field write whose timestamp does not order
	// after the value it would overwrite (the caller's clock did not observe it).
	ErrStaleTimestamp = errors.New("crdt: timestamp not newer than the current value")
	// ErrInvalid reports a malformed argument: empty id, bad field name, zero replica.
	ErrInvalid = errors.New("crdt: invalid argument")
)
