package memory

import "github.com/mnemohq/mnemo/node/memapi"

// The API's types, limits and sentinels live in node/memapi, which has no
// storage behind it, so the HTTP client, the MCP tools and the CLI speak
// the API without linking Badger. Those the core and its callers use are
// re-exported here under their old names (the feature packages use
// memapi's directly); the sentinels are the same values (errors.Is works
// across both packages).

// Errors returned by Service methods; see memapi.ErrInvalid.
var (
	ErrInvalid  = memapi.ErrInvalid  // HTTP 400
	ErrNotFound = memapi.ErrNotFound // HTTP 404
	ErrConflict = memapi.ErrConflict // HTTP 409
	ErrTooLarge = memapi.ErrTooLarge // HTTP 413
)

// The memory and the reads.
type (
	Memory        = memapi.Memory
	Caller        = memapi.Caller
	SaveRequest   = memapi.SaveRequest
	SaveResult    = memapi.SaveResult
	UpdateRequest = memapi.UpdateRequest
	Filter        = memapi.Filter
	SearchQuery   = memapi.SearchQuery
	SearchHit     = memapi.SearchHit
	SearchResult  = memapi.SearchResult
	TimelineQuery = memapi.TimelineQuery
	Timeline      = memapi.Timeline
	ContextQuery  = memapi.ContextQuery
	ContextResult = memapi.ContextResult
	GetOptions    = memapi.GetOptions
	Stats         = memapi.Stats
)

// Compaction, sessions, prompts and progress.
type (
	CompactRequest        = memapi.CompactRequest
	CompactCandidate      = memapi.CompactCandidate
	AgeBucket             = memapi.AgeBucket
	CompactResult         = memapi.CompactResult
	Session               = memapi.Session
	SessionStart          = memapi.SessionStart
	SessionEnd            = memapi.SessionEnd
	SessionSummaryRequest = memapi.SessionSummaryRequest
	PromptRequest         = memapi.PromptRequest
	ProgressRequest       = memapi.ProgressRequest
)

// Export and import.
type (
	Export = memapi.Export
)

// Namespaces, grants, share and promote.
type (
	NamespaceInfo  = memapi.NamespaceInfo
	GrantRequest   = memapi.GrantRequest
	ACLRecord      = memapi.ACLRecord
	GrantResult    = memapi.GrantResult
	ACLEntry       = memapi.ACLEntry
	ACLRejection   = memapi.ACLRejection
	ACLView        = memapi.ACLView
	ShareRequest   = memapi.ShareRequest
	PromoteRequest = memapi.PromoteRequest
	ShareResult    = memapi.ShareResult
)

// Surgery and audit.
type (
	EditPatch   = memapi.EditPatch
	EditRequest = memapi.EditRequest
	Edit        = memapi.Edit
	AuditQuery  = memapi.AuditQuery
)

// Capsules and context bundles (still named by callers of the Service).
type (
	CapsuleRequest = memapi.CapsuleRequest
	BundleRequest  = memapi.BundleRequest
)

// Limits on what a caller may write (memapi.MaxContentBytes).
const (
	MaxContentBytes = memapi.MaxContentBytes
	MaxTitleBytes   = memapi.MaxTitleBytes
	MaxSummaryBytes = memapi.MaxSummaryBytes
	MaxTags         = memapi.MaxTags
	MaxTagBytes     = memapi.MaxTagBytes
	MaxLinkedFiles  = memapi.MaxLinkedFiles
	MaxPathBytes    = memapi.MaxPathBytes
	MaxKeyBytes     = memapi.MaxKeyBytes
	DefaultType     = memapi.DefaultType
	DefaultScope    = memapi.DefaultScope
)

// Defaults and bounds of the read operations.
const (
	DefaultSearchLimit  = memapi.DefaultSearchLimit
	MaxSearchLimit      = memapi.MaxSearchLimit
	DefaultAround       = memapi.DefaultAround
	MaxAround           = memapi.MaxAround
	DefaultMaxTokens    = memapi.DefaultMaxTokens
	MaxMaxTokens        = memapi.MaxMaxTokens
	DefaultCompactLimit = memapi.DefaultCompactLimit
	MaxCompactLimit     = memapi.MaxCompactLimit
)

// Promotion modes.
const (
	PromoteCopy = memapi.PromoteCopy
	PromoteMove = memapi.PromoteMove
)

// Edit operations and statuses.
const (
	OpBlock        = memapi.OpBlock
	OpQuarantine   = memapi.OpQuarantine
	OpAmend        = memapi.OpAmend
	OpAttenuate    = memapi.OpAttenuate
	StatusApproved = memapi.StatusApproved
)

// EditOps lists the edit operations in precedence order.
var EditOps = memapi.EditOps

// CheckJSONText is memapi.CheckJSONText.
func CheckJSONText(data []byte) error { return memapi.CheckJSONText(data) }

// SuggestTopicKey is memapi.SuggestTopicKey.
func SuggestTopicKey(typ, title, content string) string {
	return memapi.SuggestTopicKey(typ, title, content)
}
