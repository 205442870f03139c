// Package projection decides what goes into a projection: a filtered,
// compressed, read-only view of one source namespace pushed to a target
// principal's node. The node keeps the view as a CRDT namespace that only the
// publisher writes; this package is the pure part (no I/O, goroutines or
// clock reads): specs, filters, the predicate language, compression levels
// and the decision a source change implies.
//
// Use it like this: validate the requested Spec (the node fills ID, Creator
// and CreatedAt, and checks that Creator holds share permission on Source —
// Validate checks form, not authority), build a Projector once, fill the
// view with Projector.View over the source's memories, and, for a live
// projection, call Projector.DecideView on every change of a source memory
// (with what the view holds of it) and apply the Action to the view. A
// snapshot projection (Live false) is filled at creation only; the node
// never decides for it again. Specs are stored and
// replicated with EncodeSpec/DecodeSpec and travel the HTTP API as JSON:
//
//	{"source":"agent://dev-1","target":"agent://reviewer",
//	 "filter":{"types":["decision"],"tags":["auth"],"min_confidence":0.5,
//	           "min_importance":0.3,"linked_files":["src/payments/**"],
//	           "predicate":"not \"wip\" in tags"},
//	 "level":"L2","live":true}
//
// # Filters
//
// Every criterion that is set must hold. Types: any of them, case-insensitive.
// Tags: the memory has at least one of them, case-insensitive (tags are
// free-form labels agents write as "Auth" or "auth"). MinConfidence and
// MinImportance: the value is at least the threshold (0..1). LinkedFiles: at
// least one linked file matches at least one glob (see MatchGlob: "**" is any
// number of whole path segments, "*" stays within a segment, "?" is one
// character, no escapes). Predicate: see below. An empty filter selects the
// whole namespace. A soft-deleted memory never matches, so archiving a
// memory removes it from every view. An invalid filter matches nothing.
//
// # Predicate language
//
// A predicate is parsed into a syntax tree when compiled (CompilePredicate,
// Filter.Validate, NewProjector); evaluation walks the tree. Grammar:
//
//	expr      = and { "or" and }
//	and       = unary { "and" unary }
//	unary     = "not" unary | "(" expr ")" | condition
//	condition = FIELD op literal                 op: = != < <= > >=
//	          | FIELD "contains" STRING          substring, case-insensitive
//	          | FIELD "in" "[" literal { "," literal } "]"
//	          | STRING "in" SETFIELD             membership: "auth" in tags
//	          | "linked_files" "matches" STRING  any linked file matches the glob
//	literal   = STRING | NUMBER
//	STRING    = '"' { any character but '"' and '\', or \" or \\ } '"'
//	NUMBER    = [ "-" ] DIGITS [ "." DIGITS ]
//
// Precedence: not binds tightest, then and, then or, so `a or b and c` is
// `a or (b and c)`. Keywords and field names are case-insensitive; white
// space is spaces, tabs and newlines. Fields:
//
//	strings (= != < <= > >= contains in):  id type title scope project
//	    subject_type subject_id session_id channel author topic_key lineage
//	text (contains only):                  content summary
//	numbers (= != < <= > >= in):           importance confidence
//	sets ("x" in FIELD):                   tags linked_files (and matches)
//
// String comparisons are exact and byte-wise, except that type and tags
// compare case-insensitively as in Filter; contains is always
// case-insensitive. Numbers compare as float64. A literal of the wrong type
// for its field is an error. Limits: MaxPredicateLen (1024) bytes of source,
// MaxPredicateDepth (32) levels of syntax tree (and/or chains are one n-ary
// level, so `a and b and c` has depth 2) and of "(" / "not" nesting, and
// MaxListItems (64) literals per list. Errors are *PredicateError values
// with the 1-based byte position: `projection: predicate: unexpected token
// "xyz" at 14`. Predicate.String prints the canonical form, which compiles
// back to the same tree.
//
// # Levels
//
// L1 is the headline: id, type, title, tags, importance, confidence. L2 adds
// the linked files and a summary: the memory's own, or else an excerpt of
// the content (ExcerptRunes, 280 characters, cut at a word boundary, ending
// in "…"). L3 is the full memory. Every level also keeps scope, subject
// type and id, project, created_at, updated_at and deleted_at: they are
// small and the subscriber needs them to filter and order its view. L3 fills
// a missing summary like L2, so a field present at a lower level has the
// same value at every higher level; Project is idempotent.
//
// # Decisions
//
// DecideView maps (what the view holds, the source memory now) to an
// Action: upsert when the memory matches now, remove when it no longer does
// (a soft delete or a quarantine included) and the view shows it, retract
// when the source retracted it and the view holds any record of it, shown
// or removed (final, as in the source), and none otherwise — so memories
// outside the filter cause no traffic, and a subscriber never learns their
// ids. Remove is not final: a memory that matches again is upserted again.
// Reading "before" off the view makes the decision idempotent, which is how
// the node repairs a view after a crash. Decide is the same table for a
// caller that remembers the previous source memory instead: it also answers
// none to an upsert that leaves the projected item unchanged, and cannot
// know of removed records. An invalid filter matches nothing.
//
// Other decisions: a spec whose target owns its source (agent://bob
// projecting agent://bob/x to itself) is rejected as pointless; spec ids
// are 1..128 bytes of [A-Za-z0-9._:-]; the encoding is canonical and
// DecodeSpec accepts nothing else, so a spec's bytes can be hashed or signed.
package projection
