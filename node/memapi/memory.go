package memapi

import (
	"errors"
	"fmt"
	"time"

	"github.com/mnemohq/mnemo/namespace"
)

// Errors returned by the memory operations, in this process (memory.Service)
// or over HTTP (node/client). Each is wrapped with a message that says what
// was wrong; test with errors.Is. Permission failures wrap acl.ErrDenied
// instead. The texts keep the "memory:" prefix the API has always answered
// with.
var (
	ErrInvalid  = errors.New("memory: invalid request")   // HTTP 400
	ErrNotFound = errors.New("memory: not found")         // HTTP 404
	ErrConflict = errors.New("memory: conflict")          // HTTP 409
	ErrTooLarge = errors.New("memory: request too large") // HTTP 413
)

// Memory is one memory as callers see it (JSON, snake_case).
type Memory struct {
	ID          string     `json:"id"`
	Namespace   string     `json:"namespace"`
	Type        string     `json:"type"`
	Title       string     `json:"title"`
	Content     string     `json:"content"`
	Summary     string     `json:"summary,omitempty"`
	Tags        []string   `json:"tags"`
	TopicKey    string     `json:"topic_key,omitempty"`
	Importance  float64    `json:"importance"`
	Confidence  float64    `json:"confidence"`
	LinkedFiles []string   `json:"linked_files,omitempty"`
	Scope       string     `json:"scope"`
	SubjectType string     `json:"subject_type,omitempty"`
	SubjectID   string     `json:"subject_id,omitempty"`
	Project     string     `json:"project,omitempty"`
	SessionID   string     `json:"session_id,omitempty"`
	Channel     string     `json:"channel,omitempty"`
	Author      string     `json:"author"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DeletedAt   *time.Time `json:"deleted_at,omitempty"`
	Provenance  []string   `json:"provenance,omitempty"`
	Lineage     string     `json:"lineage,omitempty"`
	ContentHash string     `json:"content_hash"`
	// ResolvedFrom is set by Get when the id asked for is a reference left
	// by a promotion (move): the answer is the promoted memory, and this
	// names the reference. See node/memory/sharing.go.
	ResolvedFrom string `json:"resolved_from,omitempty"`
	// ProjectedFrom is set on a memory of a projection's view (in the
	// target's inbox): the source namespace it was projected from. See
	// node/memory/projections.go.
	ProjectedFrom string `json:"projected_from,omitempty"`
	// From is set on a memory read out of an inbox
	// (agent://TARGET/.inbox/WRITER/...): the agent that wrote it, so it
	// reads as that agent's words, never the reader's own. Computed from
	// the namespace, not stored. See node/memory/inbox.go.
	From string `json:"from,omitempty"`
	// CopiedFrom is set on a copy (share, promote, capsule item): the
	// namespace of the memory named by Lineage. Edits of that memory
	// follow the copy (node/memory/copies.go).
	CopiedFrom string `json:"copied_from,omitempty"`
	// Set by the effective view when approved edits apply (node/memory/surgery.go).
	Quarantined     bool     `json:"quarantined,omitempty"`      // hidden from automatic retrieval
	BlockedChannels []string `json:"blocked_channels,omitempty"` // hidden from queries for these channels
	EditsApplied    int      `json:"edits_applied,omitempty"`
	NeedsResummary  []string `json:"needs_resummary,omitempty"` // retracted memories this one was derived from
}

// Caller is who asks: the principal every permission check is made for.
type Caller struct {
	Principal namespace.Address
}

// SaveRequest creates a memory. Type and Content are required; a Title is
// derived from the content when empty. A TopicKey that matches a live memory
// of the same namespace updates that memory in place (upsert).
type SaveRequest struct {
	Namespace   string   `json:"namespace,omitempty"` // full address or relative sub-agent path; "" = the caller's own
	Type        string   `json:"type"`
	Title       string   `json:"title,omitempty"`
	Content     string   `json:"content"`
	Summary     string   `json:"summary,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	TopicKey    string   `json:"topic_key,omitempty"`
	Importance  *float64 `json:"importance,omitempty"` // 0..1, default 0.5
	Confidence  *float64 `json:"confidence,omitempty"` // 0..1, default 0.8
	LinkedFiles []string `json:"linked_files,omitempty"`
	Scope       string   `json:"scope,omitempty"` // session, user, project (default), policy, global
	SubjectType string   `json:"subject_type,omitempty"`
	SubjectID   string   `json:"subject_id,omitempty"`
	Project     string   `json:"project,omitempty"`
	SessionID   string   `json:"session_id,omitempty"`
	Channel     string   `json:"channel,omitempty"` // private, public, team, agent
}

// SaveResult is the saved memory and whether the save updated an existing
// memory with the same topic key.
type SaveResult struct {
	Memory
	Upserted bool `json:"upserted"`
}

// UpdateRequest changes the given fields only. Subject type and id are
// immutable once set.
type UpdateRequest struct {
	Type        *string   `json:"type,omitempty"`
	Title       *string   `json:"title,omitempty"`
	Content     *string   `json:"content,omitempty"`
	Summary     *string   `json:"summary,omitempty"`
	Tags        *[]string `json:"tags,omitempty"`
	TopicKey    *string   `json:"topic_key,omitempty"`
	Importance  *float64  `json:"importance,omitempty"`
	Confidence  *float64  `json:"confidence,omitempty"`
	LinkedFiles *[]string `json:"linked_files,omitempty"`
	Scope       *string   `json:"scope,omitempty"`
	SubjectType *string   `json:"subject_type,omitempty"`
	SubjectID   *string   `json:"subject_id,omitempty"`
	Project     *string   `json:"project,omitempty"`
	SessionID   *string   `json:"session_id,omitempty"`
	Channel     *string   `json:"channel,omitempty"`
}

// Filter narrows reads. Namespace "" means every namespace the caller may
// read; a namespace includes its sub-namespaces.
type Filter struct {
	Namespace   string    `json:"namespace,omitempty"`
	Type        string    `json:"type,omitempty"`
	Tags        []string  `json:"tags,omitempty"` // all of
	Project     string    `json:"project,omitempty"`
	Scope       string    `json:"scope,omitempty"`
	SubjectType string    `json:"subject_type,omitempty"`
	SubjectID   string    `json:"subject_id,omitempty"`
	SessionID   string    `json:"session_id,omitempty"`
	Channel     string    `json:"channel,omitempty"`
	Since       time.Time `json:"since,omitzero"`
	Until       time.Time `json:"until,omitzero"`
	// IncludeQuarantined admits memories quarantined by an edit (hidden
	// from automatic retrieval by default). A Channel set also hides the
	// memories blocked for it.
	IncludeQuarantined bool `json:"include_quarantined,omitempty"`
}

// SearchQuery is a ranked full-text query.
type SearchQuery struct {
	Query string `json:"q"`
	Filter
	Limit          int  `json:"limit,omitempty"` // default 10, max 100
	IncludeDeleted bool `json:"include_deleted,omitempty"`
	// Feedback refines the ranking by pseudo-relevance feedback: the best
	// few hits' shared terms reorder the same matches (the first hit stays
	// first). Higher recall, about 4× the search time.
	Feedback bool `json:"feedback,omitempty"`
}

// SearchHit is one ranked result.
type SearchHit struct {
	Memory Memory  `json:"memory"`
	Score  float64 `json:"score"`
}

// SearchResult lists hits, best first, and how many matched in all.
// Total is exact up to SearchTotalExact matches; past that it may be a
// lower bound (search skips documents that cannot rank among the results
// and does not count them).
type SearchResult struct {
	Results []SearchHit `json:"results"`
	Total   int         `json:"total"`
}

// SearchTotalExact is how many matches a search always counts exactly.
const SearchTotalExact = 1000

// TotalText is r.Total as a reader should take it: "1000+" where it may
// be a lower bound.
func (r SearchResult) TotalText() string {
	if r.Total >= SearchTotalExact {
		return fmt.Sprintf("%d+", r.Total)
	}
	return fmt.Sprint(r.Total)
}

// TimelineQuery asks for the memories around one memory, in time order.
type TimelineQuery struct {
	ID     string `json:"id"`
	Before int    `json:"before,omitempty"` // default 5, max 50
	After  int    `json:"after,omitempty"`  // default 5, max 50
	Filter
}

// Timeline is the center memory and its neighbours, oldest first.
type Timeline struct {
	Center Memory   `json:"center"`
	Before []Memory `json:"before"`
	After  []Memory `json:"after"`
}

// ContextQuery asks for recent memories formatted for a prompt.
type ContextQuery struct {
	Filter
	MaxTokens int `json:"max_tokens,omitempty"` // default 2000, max 100000
}

// ContextResult is prompt-ready text and what went into it.
type ContextResult struct {
	Text       string    `json:"text"`
	Memories   []Memory  `json:"memories"`
	Sessions   []Session `json:"sessions"`
	TokensUsed int       `json:"tokens_used"` // estimated: ceil(bytes / 4)
	MaxTokens  int       `json:"max_tokens"`
	Truncated  bool      `json:"truncated"` // some eligible memories did not fit
}

// CompactRequest runs compaction. Without CompactIDs it identifies stale
// memories; with them it soft-deletes those ids and optionally writes one
// summary memory of type compaction_summary, all or nothing.
type CompactRequest struct {
	Namespace      string   `json:"namespace,omitempty"`
	Project        string   `json:"project,omitempty"`
	Scope          string   `json:"scope,omitempty"`
	OlderThanDays  int      `json:"older_than_days,omitempty"` // identify: required, > 0
	Limit          int      `json:"limit,omitempty"`           // identify: default 50, max 200
	CompactIDs     []string `json:"compact_ids,omitempty"`
	SummaryTitle   string   `json:"summary_title,omitempty"`
	SummaryContent string   `json:"summary_content,omitempty"`
	SessionID      string   `json:"session_id,omitempty"`
}

// CompactCandidate is one stale memory found in identify mode.
type CompactCandidate struct {
	ID        string    `json:"id"`
	Namespace string    `json:"namespace"`
	Type      string    `json:"type"`
	Title     string    `json:"title"`
	Project   string    `json:"project,omitempty"`
	Scope     string    `json:"scope"`
	CreatedAt time.Time `json:"created_at"`
	AgeDays   int       `json:"age_days"`
	Snippet   string    `json:"snippet"` // first 100 characters of the content
}

// AgeBucket counts candidates by age.
type AgeBucket struct {
	Label string `json:"label"` // e.g. "7-30d"
	Count int    `json:"count"`
}

// CompactResult answers both modes.
type CompactResult struct {
	Mode       string             `json:"mode"` // "identify" or "execute"
	Candidates []CompactCandidate `json:"candidates,omitempty"`
	Histogram  []AgeBucket        `json:"histogram,omitempty"`
	Compacted  int                `json:"compacted"`
	SummaryID  string             `json:"summary_id,omitempty"`
	Before     int                `json:"before"` // live memories under the filter before
	After      int                `json:"after"`  // and after
}

// Session is one agent work session.
type Session struct {
	ID        string     `json:"id"`
	Namespace string     `json:"namespace"`
	Project   string     `json:"project,omitempty"`
	Directory string     `json:"directory,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Summary   string     `json:"summary,omitempty"`
}

// SessionStart opens a session (idempotent by id).
type SessionStart struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace,omitempty"`
	Project   string `json:"project,omitempty"`
	Directory string `json:"directory,omitempty"`
}

// SessionEnd closes a session, optionally with a summary.
type SessionEnd struct {
	ID      string `json:"id"`
	Summary string `json:"summary,omitempty"`
}

// SessionSummaryRequest saves an end-of-session summary as a memory of type
// summary.
type SessionSummaryRequest struct {
	SessionID string `json:"session_id"`
	Namespace string `json:"namespace,omitempty"`
	Project   string `json:"project,omitempty"`
	Title     string `json:"title,omitempty"`
	Content   string `json:"content"`
}

// PromptRequest saves a user prompt as a memory of type prompt.
type PromptRequest struct {
	SessionID string `json:"session_id,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Project   string `json:"project,omitempty"`
	Content   string `json:"content"`
}

// ProgressRequest upserts the progress note of a (namespace, project) under
// topic key progress/<namespace>/<project>.
type ProgressRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Project   string `json:"project"`
	Title     string `json:"title,omitempty"`
	Content   string `json:"content"`
	SessionID string `json:"session_id,omitempty"`
}

// Stats summarises what the caller can read.
type Stats struct {
	Memories    int            `json:"memories"` // live
	Deleted     int            `json:"deleted"`  // soft-deleted
	Sessions    int            `json:"sessions"`
	ByType      map[string]int `json:"by_type"`
	ByNamespace map[string]int `json:"by_namespace"`
	Projects    []string       `json:"projects"`
	Oldest      *time.Time     `json:"oldest,omitempty"`
	Newest      *time.Time     `json:"newest,omitempty"`
}

// Export is every memory and session the caller can read, as JSON.
type Export struct {
	Format     string    `json:"format"` // "mnemo-export"
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exported_at"`
	Memories   []Memory  `json:"memories"`
	Sessions   []Session `json:"sessions"`
}

// ImportOptions says where an import goes and whose its memories are.
type ImportOptions struct {
	// Namespace receives the import: "" is the caller's own, a relative
	// path is under it, a full address names one the caller may write.
	Namespace string
	// PreserveProvenance keeps each memory's author, provenance and lineage
	// as a mnemo export states them (a restore or a migration). A file can
	// claim any author, so only the node's owner may ask it (acl.ErrDenied
	// otherwise). Default false: the importer is the author of every
	// imported memory and the file's provenance and lineage are dropped.
	PreserveProvenance bool
}

// ImportResult counts what an import did.
type ImportResult struct {
	Format   string `json:"format"` // "mnemo-export" or "engram"
	Memories int    `json:"memories"`
	Sessions int    `json:"sessions"`
	Prompts  int    `json:"prompts"`
	Skipped  int    `json:"skipped"` // already present: same memory or session id in the target namespace, or retracted there
}

// GetOptions are Get's read options beyond include_deleted.
type GetOptions struct {
	IncludeDeleted     bool
	IncludeQuarantined bool   // a quarantined memory is ErrNotFound without it
	Channel            string // a memory blocked for this channel is ErrNotFound
}
