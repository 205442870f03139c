package schema

// Field names inside a crdt.Record: LWW registers. Short names keep deltas
// small.
const (
	FieldKind        = "k"  // the record kind: "" for a memory, else one of the Kind constants
	FieldType        = "ty" // memory type: observation, decision, preference, …
	FieldTitle       = "ti" // memory title
	FieldContent     = "co" // memory content
	FieldSummary     = "su" // memory or session summary
	FieldTopicKey    = "tk" // topic key that groups revisions of one subject
	FieldImportance  = "im" // importance, 0–1 (EncodeNum)
	FieldConfidence  = "cf" // confidence, 0–1 (EncodeNum)
	FieldScope       = "sc" // scope: session, user, project, policy, global
	FieldSubjectType = "st" // what the memory is about: its type
	FieldSubjectID   = "si" // what the memory is about: its id
	FieldProject     = "pj" // project of a memory or session
	FieldSessionID   = "ss" // session a memory was written in
	FieldChannel     = "ch" // channel: private, public, team, agent
	FieldAuthor      = "au" // the principal who wrote it
	FieldCreatedAt   = "ca" // creation time (EncodeTime); a session's start
	FieldUpdatedAt   = "ua" // time of the last edit (EncodeTime); written by every edit (Touch)
	FieldDeletedAt   = "da" // soft-delete time (EncodeTime); absent or empty when live
	FieldLineage     = "li" // the id a copy or merge came from
	FieldHash        = "ha" // content hash
	FieldCopiedFrom  = "cn" // copies: the namespace of the memory copied (with FieldLineage)
	FieldProjFrom    = "pf" // projection view records: the source namespace
	FieldDirectory   = "dr" // sessions: the working directory
	FieldEndedAt     = "ea" // sessions: end time (EncodeTime)
	FieldACL         = "ar" // acl records: the acl.SignedRecord encoding
	FieldProjSpec    = "ps" // projection spec records: the projection.EncodeSpec bytes
	FieldEdit        = "ed" // edit records: the sealed surgery edit
	FieldDecision    = "dc" // decision records: the sealed approval or rejection
	FieldCapsule     = "cb" // capsule meta records: the capsule's JSON body, set once
	FieldRevokedAt   = "rv" // capsule meta records: revocation time (EncodeTime)
)

// Set names inside a crdt.Record: add-wins sets of strings.
const (
	SetTags        = "tg" // memory tags
	SetLinkedFiles = "lf" // files a memory refers to
	SetProvenance  = "pv" // contributing authors and source ids
)

// Record kinds: the value of FieldKind. A memory has none; the others are
// never offered to memory operations.
const (
	KindSession  = "session"         // a session (SessionPrefix ids)
	KindACL      = "acl"             // a signed grant or revocation (ACLPrefix ids)
	KindEdit     = "edit"            // a signed surgery edit (EditPrefix ids)
	KindDecision = "appr"            // a signed approval or rejection of an edit (DecisionPrefix ids)
	KindCapsule  = "capsule"         // a capsule's meta record (CapsuleMetaID)
	KindProjSpec = "projection-spec" // a projection spec (ProjSpecID)
)

// Record ids and id prefixes of the special records.
const (
	SessionPrefix  = "s:"      // + session id
	ACLPrefix      = "acl:"    // + acl.SignedRecord.ID()
	EditPrefix     = "edit:"   // + edit id
	DecisionPrefix = "appr:"   // + decision id
	CapsuleMetaID  = "capsule" // the meta record's id in each capsule inbox
	ProjSpecID     = "spec"    // the spec record's id in its view namespace
)

// Names of inbox namespaces and tags that mark delivered records.
const (
	CapsuleNamePrefix = "capsule-" // capsule inbox name: capsule-<capsule id>
	ProjNamePrefix    = "proj-"    // projection inbox name: proj-<spec id>
	TagCapsule        = "capsule"  // tag on every capsule item
)
