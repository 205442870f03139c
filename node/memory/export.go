package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

const exportFormat = "mnemo-export"

// Export returns every memory (soft-deleted ones included, so an import
// reproduces them) and session the caller can read.
func (s *Service) Export(ctx context.Context, c Caller, namespaceArg string) (Export, error) {
	sf, err := s.readScope(c, namespaceArg)
	if err != nil {
		return Export{}, err
	}
	sf.IncludeDeleted, sf.IncludeHidden = true, true
	out := Export{Format: exportFormat, Version: 1, ExportedAt: s.cfg.Now().UTC(), Memories: s.load(metaIDs(s.ix.List(sf, false, 0)))}
	out.Sessions = s.readableSessions(sf)
	if out.Sessions == nil {
		out.Sessions = []Session{}
	}
	return out, nil
}

// engramExport is the shape of `engram export` JSON.
type engramExport struct {
	Version  string `json:"version"`
	Sessions []struct {
		ID        string  `json:"id"`
		Project   string  `json:"project"`
		Directory string  `json:"directory"`
		StartedAt string  `json:"started_at"`
		EndedAt   *string `json:"ended_at"`
		Summary   *string `json:"summary"`
	} `json:"sessions"`
	Observations []struct {
		ID        json.Number `json:"id"`
		SyncID    string      `json:"sync_id"`
		SessionID string      `json:"session_id"`
		Type      string      `json:"type"`
		Title     string      `json:"title"`
		Content   string      `json:"content"`
		ToolName  *string     `json:"tool_name"`
		Project   *string     `json:"project"`
		Scope     string      `json:"scope"`
		TopicKey  *string     `json:"topic_key"`
		CreatedAt string      `json:"created_at"`
		UpdatedAt string      `json:"updated_at"`
		DeletedAt *string     `json:"deleted_at"`
	} `json:"observations"`
	Prompts []struct {
		ID        json.Number `json:"id"`
		SessionID string      `json:"session_id"`
		Content   string      `json:"content"`
		Project   string      `json:"project"`
		CreatedAt string      `json:"created_at"`
	} `json:"prompts"`
}

// parseLooseTime accepts RFC 3339 and SQLite's "2006-01-02 15:04:05" (UTC).
func parseLooseTime(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, invalid("unreadable time %q", v)
}

func optString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Import is ImportWith into namespaceArg, the importer as the author.
func (s *Service) Import(ctx context.Context, c Caller, namespaceArg string, data []byte) (ImportResult, error) {
	return s.ImportWith(ctx, c, data, ImportOptions{Namespace: namespaceArg})
}

// ImportWith reads a mnemo export or an engram export into the caller's
// namespace (or opts.Namespace): all of it, or nothing if any item is
// invalid. Items already present (same id) are skipped, so importing twice
// is harmless.
//
// What a file may claim is bounded, since it comes from outside: the
// importer is the author of every memory unless the owner asks
// opts.PreserveProvenance (and, in a namespace that replicates, even then
// only an author this node hosts stays the author: peers refuse a record
// whose author another node hosts, so a foreign author is kept in
// provenance as "author:NAME"); a memory id must be a mnemo id (26 characters of
// the id alphabet, so never a reserved record prefix nor a path) that no
// memory of another namespace uses; and no time may lie further ahead of
// this node's clock than the skew it tolerates from peers (crdt's clock
// bound). Each refusal is ErrInvalid naming the record; a refusal by the
// policy is acl.ErrDenied.
func (s *Service) ImportWith(ctx context.Context, c Caller, data []byte, opts ImportOptions) (ImportResult, error) {
	if opts.PreserveProvenance && c.Principal != s.Owner() {
		return ImportResult{}, fmt.Errorf("%w: only the node's owner (%s) may import with the file's authors and provenance; %s imports as the author",
			acl.ErrDenied, s.Owner(), c.Principal)
	}
	if err := CheckJSONText(data); err != nil {
		return ImportResult{}, err
	}
	var probe struct {
		Format       string          `json:"format"`
		Observations json.RawMessage `json:"observations"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return ImportResult{}, invalid("import body is not JSON: %v", err)
	}
	ns, err := s.resolveWrite(c, opts.Namespace)
	if err != nil {
		return ImportResult{}, err
	}
	future := timeBound{now: s.cfg.Now(), skew: s.clock.MaxSkew()}
	var items []importItem
	var sessions []importedSession
	res := ImportResult{}
	switch {
	case probe.Format == exportFormat:
		res.Format = exportFormat
		var ex Export
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&ex); err != nil {
			return ImportResult{}, invalid("mnemo export: %v", err)
		}
		for i, m := range ex.Memories {
			imp, conf := m.Importance, m.Confidence
			req := SaveRequest{Type: m.Type, Title: m.Title, Content: m.Content, Summary: m.Summary, Tags: m.Tags,
				TopicKey: m.TopicKey, Importance: &imp, Confidence: &conf, LinkedFiles: m.LinkedFiles, Scope: m.Scope,
				SubjectType: m.SubjectType, SubjectID: m.SubjectID, Project: m.Project, SessionID: m.SessionID, Channel: m.Channel}
			if err := checkMemoryID(m.ID); err != nil {
				return ImportResult{}, fmt.Errorf("memory %d: %w", i, err)
			}
			p, err := normaliseSave(&req)
			if err != nil {
				return ImportResult{}, fmt.Errorf("memory %d (%s): %w", i, m.ID, err)
			}
			if err := s.checkIDFree(m.ID, ns); err != nil {
				return ImportResult{}, fmt.Errorf("memory %d: %w", i, err)
			}
			if err := future.check(m.CreatedAt, m.UpdatedAt, m.DeletedAt); err != nil {
				return ImportResult{}, fmt.Errorf("memory %d (%s): %w", i, m.ID, err)
			}
			p.id = m.ID
			p.createdAt, p.updatedAt, p.deletedAt = m.CreatedAt, m.UpdatedAt, m.DeletedAt
			if opts.PreserveProvenance {
				if err := checkProvenance(m); err != nil {
					return ImportResult{}, fmt.Errorf("memory %d (%s): %w", i, m.ID, err)
				}
				p.author, p.lineage, p.provenance = m.Author, m.Lineage, m.Provenance
				if a, err := namespace.ParsePrincipal(m.Author); err == nil && Replicated(ns.String()) && !s.isLocal(a) {
					// Peers refuse a record whose author another node
					// hosts (or nobody does): keep the author as provenance.
					p.author = ""
					p.provenance = append(slices.Clone(m.Provenance), "author:"+m.Author)
				}
			}
			items = append(items, importItem{req, p})
		}
		for i, ss := range ex.Sessions {
			is := importedSession{start: SessionStart{ID: ss.ID, Project: ss.Project, Directory: ss.Directory},
				started: ss.StartedAt, ended: ss.EndedAt, summary: ss.Summary}
			if err := is.check(future); err != nil {
				return ImportResult{}, fmt.Errorf("session %d (%s): %w", i, ss.ID, err)
			}
			sessions = append(sessions, is)
		}
	case probe.Observations != nil:
		res.Format = "engram"
		var ex engramExport
		if err := json.Unmarshal(data, &ex); err != nil {
			return ImportResult{}, invalid("engram export: %v", err)
		}
		for i, o := range ex.Observations {
			created, err := parseLooseTime(o.CreatedAt)
			if err != nil {
				return ImportResult{}, fmt.Errorf("observation %d: %w", i, err)
			}
			scope := o.Scope
			if scope == "personal" {
				scope = "user"
			}
			typ := strings.ToLower(strings.TrimSpace(o.Type))
			if typ == "" || memapi.CheckType(typ) != nil {
				typ = DefaultType
			}
			req := SaveRequest{Type: typ, Title: o.Title, Content: o.Content, Scope: scope,
				Project: optString(o.Project), SessionID: o.SessionID, TopicKey: optString(o.TopicKey)}
			if t := optString(o.ToolName); t != "" {
				req.Tags = []string{"tool:" + t}
			}
			p, err := normaliseSave(&req)
			if err != nil {
				return ImportResult{}, fmt.Errorf("observation %d: %w", i, err)
			}
			key := o.SyncID
			if key == "" {
				key = o.ID.String()
			}
			p.id = derivedID(created, "engram-observation", key, o.CreatedAt)
			p.createdAt = created
			if u, err := parseLooseTime(o.UpdatedAt); err == nil {
				p.updatedAt = u
			}
			if d := optString(o.DeletedAt); d != "" {
				if t, err := parseLooseTime(d); err == nil {
					p.deletedAt = &t
				}
			}
			if err := future.check(p.createdAt, p.updatedAt, p.deletedAt); err != nil {
				return ImportResult{}, fmt.Errorf("observation %d (%s): %w", i, key, err)
			}
			if err := s.checkIDFree(p.id, ns); err != nil {
				return ImportResult{}, fmt.Errorf("observation %d (%s): %w", i, key, err)
			}
			p.provenance = []string{"source:engram:" + key}
			items = append(items, importItem{req, p})
		}
		for i, pr := range ex.Prompts {
			created, err := parseLooseTime(pr.CreatedAt)
			if err != nil {
				return ImportResult{}, fmt.Errorf("prompt %d: %w", i, err)
			}
			req := SaveRequest{Type: "prompt", Content: pr.Content, Project: pr.Project, SessionID: pr.SessionID, Scope: "session"}
			p, err := normaliseSave(&req)
			if err != nil {
				return ImportResult{}, fmt.Errorf("prompt %d: %w", i, err)
			}
			p.id = derivedID(created, "engram-prompt", pr.ID.String(), pr.CreatedAt)
			p.createdAt = created
			if err := future.check(created, time.Time{}, nil); err != nil {
				return ImportResult{}, fmt.Errorf("prompt %d (%s): %w", i, pr.ID, err)
			}
			if err := s.checkIDFree(p.id, ns); err != nil {
				return ImportResult{}, fmt.Errorf("prompt %d (%s): %w", i, pr.ID, err)
			}
			items = append(items, importItem{req, p})
		}
		for i, ss := range ex.Sessions {
			is := importedSession{start: SessionStart{ID: ss.ID, Project: ss.Project, Directory: ss.Directory},
				summary: optString(ss.Summary)}
			// Times engram wrote are kept; an unreadable one falls back to
			// the import time, as a missing one does.
			if t, err := parseLooseTime(ss.StartedAt); err == nil {
				is.started = t
			}
			if ss.EndedAt != nil {
				if t, err := parseLooseTime(*ss.EndedAt); err == nil {
					is.ended = &t
				}
			}
			if err := is.check(future); err != nil {
				return ImportResult{}, fmt.Errorf("session %d (%s): %w", i, ss.ID, err)
			}
			sessions = append(sessions, is)
		}
	default:
		return ImportResult{}, invalid(`import body is neither a mnemo export ("format":"mnemo-export") nor an engram export (with "observations")`)
	}
	// Everything was validated above; the writes go in transactions of at
	// most importChunk items (Badger bounds a transaction's size). Only an
	// I/O failure can stop an import midway, and running it again completes
	// it: items already present are skipped.
	for start := 0; start == 0 || start < len(items); start += importChunk {
		chunk := items[start:min(start+importChunk, len(items))]
		last := start+importChunk >= len(items)
		if err := s.importChunk(c, ns, chunk, sessionsIf(last, sessions), &res); err != nil {
			return ImportResult{}, err
		}
	}
	return res, nil
}

const importChunk = 250

// importItem is one memory of an import, validated.
type importItem struct {
	req SaveRequest
	p   saveParams
}

func sessionsIf(yes bool, ss []importedSession) []importedSession {
	if yes {
		return ss
	}
	return nil
}

func (s *Service) importChunk(c Caller, ns namespace.Address, items []importItem, sessions []importedSession, res *ImportResult) error {
	return s.write(func(tx *store.Tx) error {
		for _, it := range items {
			cur, err := tx.Record(ns.String(), it.p.id)
			if err != nil {
				return err
			}
			gone, err := tx.Retracted(ns.String(), it.p.id)
			if err != nil {
				return err
			}
			if !cur.Empty() || gone {
				res.Skipped++
				continue
			}
			it.p.noUpsert = true // an import restores items; it never merges them by topic key
			if _, err := s.saveTx(tx, c, ns, it.req, it.p); err != nil {
				return err
			}
			if it.req.Type == "prompt" && res.Format == "engram" {
				res.Prompts++
			} else {
				res.Memories++
			}
		}
		// Sessions go in the same transaction, so a failed import leaves
		// nothing behind and a repeated one skips them like memories.
		for _, is := range sessions {
			id := schema.SessionPrefix + is.start.ID
			cur, err := tx.Record(ns.String(), id)
			if err != nil {
				return err
			}
			gone, err := tx.Retracted(ns.String(), id)
			if err != nil {
				return err
			}
			if !cur.Empty() || gone {
				res.Skipped++
				continue
			}
			if is.ended == nil && is.summary != "" {
				now := s.cfg.Now().UTC()
				is.ended = &now // a summary marks the session as over
			}
			if _, err := s.createSessionTx(tx, c, ns, is.start, is.started, is.ended, is.summary); err != nil {
				return err
			}
			res.Sessions++
		}
		return nil
	})
}

// importedSession is a session read from an export, restored with its times.
type importedSession struct {
	start   SessionStart
	started time.Time  // zero: the import time
	ended   *time.Time // nil: still open
	summary string
}

// check applies the rules StartSession and EndSession apply, and refuses
// times beyond future.
func (is importedSession) check(future timeBound) error {
	if err := checkSessionID(is.start.ID); err != nil {
		return err
	}
	if err := future.checkOne("started_at", is.started); err != nil {
		return err
	}
	if is.ended != nil {
		if err := future.checkOne("ended_at", *is.ended); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"project", is.start.Project}, {"directory", is.start.Directory}} {
		if err := text(f.name, f.v, MaxPathBytes); err != nil {
			return err
		}
	}
	return text("summary", is.summary, MaxContentBytes)
}

// timeBound refuses imported times further ahead of now than skew, the
// forward skew the node's clock tolerates from peers. A record dated years
// ahead would sort first in every timeline and escape every age-based rule
// (compaction candidates, capsule expiry) until then.
type timeBound struct {
	now  time.Time
	skew time.Duration
}

func (b timeBound) checkOne(field string, t time.Time) error {
	// Compared in milliseconds, as crdt.Clock.Check: a Duration overflows
	// for a time some 292 years ahead, which must be refused too.
	if ahead := t.UnixMilli() - b.now.UnixMilli(); ahead > b.skew.Milliseconds() {
		return invalid("%s %s is in the future (this node's clock reads %s; at most %v ahead is accepted)",
			field, t.UTC().Format(time.RFC3339), b.now.UTC().Format(time.RFC3339), b.skew)
	}
	return nil
}

// check applies checkOne to a memory's times; zero times and a nil deleted
// are absent.
func (b timeBound) check(created, updated time.Time, deleted *time.Time) error {
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"created_at", created}, {"updated_at", updated}} {
		if f.t.IsZero() {
			continue
		}
		if err := b.checkOne(f.name, f.t); err != nil {
			return err
		}
	}
	if deleted != nil {
		return b.checkOne("deleted_at", *deleted)
	}
	return nil
}

// checkIDFree refuses an imported id that a memory of another namespace
// already has: ids are global (the index and Get know a memory by its id
// alone), so a second memory under the same id would shadow the first.
func (s *Service) checkIDFree(id string, ns namespace.Address) error {
	if m, ok := s.ix.Meta(id); ok && m.Namespace != ns.String() {
		return invalid("id %q is already used by a memory in another namespace", id)
	}
	return nil
}

// checkProvenance validates what PreserveProvenance keeps of a memory.
func checkProvenance(m Memory) error {
	if m.Author != "" {
		if _, err := namespace.ParsePrincipal(m.Author); err != nil {
			return fmt.Errorf("%w: author %q: %w", ErrInvalid, m.Author, err)
		}
	}
	if m.Lineage != "" {
		if err := checkMemoryID(m.Lineage); err != nil {
			return fmt.Errorf("lineage: %w", err)
		}
	}
	for _, p := range m.Provenance {
		if err := text("provenance", p, MaxKeyBytes); err != nil {
			return err
		}
	}
	return nil
}
