package memory

import (
	"cmp"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
)

// Records are stored in node/schema's shape: field names, kinds, id
// prefixes and the record→memory conversion are defined there once.

// toMemory reads a memory out of its record and marks whose word it is:
// Memory.From is the writer of an inbox namespace (inbox.go), decided here
// at read time and never taken from the record.
func toMemory(ns, id string, r *crdt.Record) Memory {
	m := schema.ToMemory(ns, id, r)
	m.From = inboxWriter(ns)
	return m
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

// savedRecord is what saveRecordTx wrote: an upsert's result, or the new
// memory's record, viewed once the write is done (savedResult) rather than
// in the build stage, where writes queue one at a time (store/doc.go).
// Save answers with the view the index made of it when there is one
// (keptView), so that a save views its memory once.
type savedRecord struct {
	res SaveResult // complete when rec is nil
	id  string
	rec *crdt.Record // as the save left it; never changed afterwards
}

func (s *Service) savedResult(ns namespace.Address, sv savedRecord) SaveResult {
	if sv.rec == nil {
		return sv.res
	}
	m, _ := s.view(ns.String(), sv.id, sv.rec)
	return SaveResult{Memory: m}
}
