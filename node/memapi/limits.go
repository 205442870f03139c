package memapi

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
)

// Defaults and bounds of the read operations.
const (
	DefaultSearchLimit  = 10
	MaxSearchLimit      = 100
	DefaultAround       = 5
	MaxAround           = 50
	DefaultMaxTokens    = 2000
	MaxMaxTokens        = 100000
	DefaultCompactLimit = 50
	MaxCompactLimit     = 200
)

// Capsule limits.
const (
	DefaultCapsuleTTLDays = 7
	MaxCapsuleTTLDays     = 90
	MaxCapsuleItems       = 100
	MaxCapsuleAudience    = 32
	MaxCapsuleRisks       = 20
)

// Bounds of a duplicates query.
const (
	DefaultDuplicateLimit = 50
	MaxDuplicateLimit     = 500
)

// MaxReasonBytes bounds the reason of an edit.
const MaxReasonBytes = 4 << 10
