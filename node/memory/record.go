package memory

import (
	"cmp"
	"strconv"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/search"
)

// Field and set names inside a crdt.Record. Short names keep deltas small;
// they are part of the stored and replicated format, so never rename one.
const (
	fKind        = "k" // "" memory, "session", "acl", "edit", "appr"
	fType        = "ty"
	fTitle       = "ti"
	fContent     = "co"
	fSummary     = "su"
	fTopicKey    = "tk"
	fImportance  = "im"
	fConfidence  = "cf"
	fScope       = "sc"
	fSubjectType = "st"
	fSubjectID   = "si"
	fProject     = "pj"
	fSessionID   = "ss"
	fChannel     = "ch"
	fAuthor      = "au"
	fCreatedAt   = "ca"
	fUpdatedAt   = "ua"
	fDeletedAt   = "da"
	fLineage     = "li"
	fHash        = "ha"
	fDirectory   = "dr" // sessions
	fEndedAt     = "ea" // sessions
	sTags        = "tg"
	sLinkedFiles = "lf"
	sProvenance  = "pv"
	fACL         = "ar" // acl records: the acl.SignedRecord encoding
	fProjSpec    = "ps" // projection spec records: the projection.EncodeSpec bytes
	fProjFrom    = "pf" // projection view records: the source namespace
	fCopiedFrom  = "cn" // copies: the namespace of the memory copied (lineage)

	kindSession   = "session"
	sessionPrefix = "s:"
	kindACL       = "acl"
	aclPrefix     = "acl:" // + acl.SignedRecord.ID(); see access.go
)

func str(r *crdt.Record, name string) string {
	f, ok := r.Field(name)
	if !ok {
		return ""
	}
	return string(f.Value)
}

func num(r *crdt.Record, name string) float64 {
	v, _ := strconv.ParseFloat(str(r, name), 64)
	return v
}

func tm(r *crdt.Record, name string) time.Time {
	n, err := strconv.ParseInt(str(r, name), 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func encTime(t time.Time) []byte { return []byte(strconv.FormatInt(t.UnixNano(), 10)) }
func encNum(v float64) []byte    { return []byte(strconv.FormatFloat(v, 'g', -1, 64)) }

// toMemory reads a memory out of its record.
func toMemory(ns, id string, r *crdt.Record) Memory {
	m := Memory{
		ID:            id,
		Namespace:     ns,
		Type:          str(r, fType),
		Title:         str(r, fTitle),
		Content:       str(r, fContent),
		Summary:       str(r, fSummary),
		Tags:          r.Elements(sTags),
		TopicKey:      str(r, fTopicKey),
		Importance:    num(r, fImportance),
		Confidence:    num(r, fConfidence),
		LinkedFiles:   r.Elements(sLinkedFiles),
		Scope:         str(r, fScope),
		SubjectType:   str(r, fSubjectType),
		SubjectID:     str(r, fSubjectID),
		Project:       str(r, fProject),
		SessionID:     str(r, fSessionID),
		Channel:       str(r, fChannel),
		Author:        str(r, fAuthor),
		CreatedAt:     tm(r, fCreatedAt),
		UpdatedAt:     tm(r, fUpdatedAt),
		Provenance:    r.Elements(sProvenance),
		Lineage:       str(r, fLineage),
		ContentHash:   str(r, fHash),
		ProjectedFrom: str(r, fProjFrom),
		From:          inboxWriter(ns),
		CopiedFrom:    str(r, fCopiedFrom),
	}
	if d := tm(r, fDeletedAt); !d.IsZero() {
		m.DeletedAt = &d
	}
	if len(m.LinkedFiles) == 0 {
		m.LinkedFiles = nil
	}
	if len(m.Provenance) == 0 {
		m.Provenance = nil
	}
	return m
}

func isSession(r *crdt.Record) bool { return str(r, fKind) == kindSession }

func isACL(r *crdt.Record) bool { return str(r, fKind) == kindACL }

// toSession reads a session out of its record.
func toSession(ns, id string, r *crdt.Record) Session {
	s := Session{
		ID:        id[len(sessionPrefix):],
		Namespace: ns,
		Project:   str(r, fProject),
		Directory: str(r, fDirectory),
		StartedAt: tm(r, fCreatedAt),
		Summary:   str(r, fSummary),
	}
	if e := tm(r, fEndedAt); !e.IsZero() {
		s.EndedAt = &e
	}
	return s
}

// toDoc is what the query index holds for a memory.
func toDoc(m Memory) search.Doc {
	return search.Doc{
		ID:          m.ID,
		Namespace:   m.Namespace,
		Type:        m.Type,
		Project:     m.Project,
		Scope:       m.Scope,
		SubjectType: m.SubjectType,
		SubjectID:   m.SubjectID,
		SessionID:   m.SessionID,
		Channel:     m.Channel,
		TopicKey:    m.TopicKey,
		Title:       m.Title,
		Content:     cmp.Or(m.Content, m.Summary), // a projection's view below L3 has only the summary
		Tags:        m.Tags,
		CreatedAt:   m.CreatedAt.UnixNano(),
		UpdatedAt:   m.UpdatedAt.UnixNano(),
		Deleted:     m.DeletedAt != nil,
		Hidden:      m.Quarantined,
		Blocked:     m.BlockedChannels,
	}
}
