package schema

import (
	"strconv"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
)

// Str reads field name as text ("" when absent).
func Str(r *crdt.Record, name string) string {
	f, ok := r.Field(name)
	if !ok {
		return ""
	}
	return string(f.Value)
}

// Num reads field name as a number (0 when absent or malformed).
func Num(r *crdt.Record, name string) float64 {
	f, ok := r.Field(name)
	if !ok || len(f.Value) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(string(f.Value), 64) // no copy: not kept
	return v
}

// Time reads field name as a time (zero when absent, zero or malformed).
// An absent field is not parsed: the error of parsing "" was an
// allocation per absent time of every memory a search or list shows.
func Time(r *crdt.Record, name string) time.Time {
	f, ok := r.Field(name)
	if !ok || len(f.Value) == 0 {
		return time.Time{}
	}
	n, err := strconv.ParseInt(string(f.Value), 10, 64) // no copy: not kept
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// EncodeTime is how a time is stored: Unix nanoseconds in decimal.
func EncodeTime(t time.Time) []byte { return []byte(strconv.FormatInt(t.UnixNano(), 10)) }

// EncodeNum is how a number is stored: the shortest decimal that reads back
// the same float64.
func EncodeNum(v float64) []byte { return []byte(strconv.FormatFloat(v, 'g', -1, 64)) }

// Touch writes updated_at = now. Every edit of a record calls it, so every
// change adds a dot to its record: digest sync finds records by their dots,
// and an edit that changed only a set element would otherwise be invisible
// to it once a later edit covered that dot.
func Touch(e *crdt.Edit, ts crdt.Timestamp, now time.Time) error {
	return e.Set(ts, FieldUpdatedAt, EncodeTime(now))
}

// IsSession reports whether r is a session record.
func IsSession(r *crdt.Record) bool { return Str(r, FieldKind) == KindSession }

// IsACL reports whether r is a signed acl record.
func IsACL(r *crdt.Record) bool { return Str(r, FieldKind) == KindACL }

// IsEdit reports whether r is a signed surgery edit.
func IsEdit(r *crdt.Record) bool { return Str(r, FieldKind) == KindEdit }

// IsDecision reports whether r is a signed decision on an edit.
func IsDecision(r *crdt.Record) bool { return Str(r, FieldKind) == KindDecision }

// IsProjSpec reports whether r is a projection spec.
func IsProjSpec(r *crdt.Record) bool { return Str(r, FieldKind) == KindProjSpec }

// IsReserved reports whether id belongs to the signed records (edits,
// decisions, acl records), which memory operations never write.
func IsReserved(id string) bool {
	return strings.HasPrefix(id, EditPrefix) || strings.HasPrefix(id, DecisionPrefix) || strings.HasPrefix(id, ACLPrefix)
}

// ToMemory reads a memory out of its record. It leaves Memory.From empty:
// whose word a memory is depends on the namespace it was read from, which
// the reader decides (node/memory's inbox rule), not the record.
func ToMemory(ns, id string, r *crdt.Record) memapi.Memory {
	m := memapi.Memory{
		ID:            id,
		Namespace:     ns,
		Type:          Str(r, FieldType),
		Title:         Str(r, FieldTitle),
		Content:       Str(r, FieldContent),
		Summary:       Str(r, FieldSummary),
		Tags:          r.Elements(SetTags),
		TopicKey:      Str(r, FieldTopicKey),
		Importance:    Num(r, FieldImportance),
		Confidence:    Num(r, FieldConfidence),
		LinkedFiles:   r.Elements(SetLinkedFiles),
		Scope:         Str(r, FieldScope),
		SubjectType:   Str(r, FieldSubjectType),
		SubjectID:     Str(r, FieldSubjectID),
		Project:       Str(r, FieldProject),
		SessionID:     Str(r, FieldSessionID),
		Channel:       Str(r, FieldChannel),
		Author:        Str(r, FieldAuthor),
		CreatedAt:     Time(r, FieldCreatedAt),
		UpdatedAt:     Time(r, FieldUpdatedAt),
		Provenance:    r.Elements(SetProvenance),
		Lineage:       Str(r, FieldLineage),
		ContentHash:   Str(r, FieldHash),
		ProjectedFrom: Str(r, FieldProjFrom),
		CopiedFrom:    Str(r, FieldCopiedFrom),
	}
	if d := Time(r, FieldDeletedAt); !d.IsZero() {
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

// ToSession reads a session out of its record, stored as id (SessionPrefix
// + the session's id; the prefix is cut unchecked, as it always was).
func ToSession(ns, id string, r *crdt.Record) memapi.Session {
	s := memapi.Session{
		ID:        strings.TrimPrefix(id, SessionPrefix), // a peer's record may lack the prefix: never slice blindly
		Namespace: ns,
		Project:   Str(r, FieldProject),
		Directory: Str(r, FieldDirectory),
		StartedAt: Time(r, FieldCreatedAt),
		Summary:   Str(r, FieldSummary),
	}
	if e := Time(r, FieldEndedAt); !e.IsZero() {
		s.EndedAt = &e
	}
	return s
}

// IsCapsuleInbox reports whether ns is a capsule's inbox,
// agent://TARGET/.inbox/WRITER/capsule-ID: its memories are the capsule's
// items. The cheap test comes first (it runs on every bundle entry).
func IsCapsuleInbox(ns string) bool {
	if !strings.Contains(ns, "/"+namespace.InboxSegment+"/") || !strings.Contains(ns, "/"+CapsuleNamePrefix) {
		return false
	}
	a, err := namespace.Parse(ns)
	if err != nil {
		return false
	}
	if _, ok := namespace.ParseInbox(a); !ok {
		return false
	}
	parts := strings.Split(a.Path, "/")
	return len(parts) == 3 && strings.HasPrefix(parts[2], CapsuleNamePrefix)
}
