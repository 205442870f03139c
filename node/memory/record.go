package memory

import (
	"cmp"

	"github.com/mnemohq/mnemo/crdt"
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
