package transfer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
)

// reader turns an export into checked items for ns; nothing is written
// until every item of the file passed.
type reader struct {
	t        *Transfer
	ns       namespace.Address
	future   timeBound
	items    []importItem
	sessions []importedSession
}

// importItem is one memory of an import, validated.
type importItem struct {
	req  memapi.SaveRequest
	opts memory.SaveOptions
}

// mnemo reads a mnemo export; preserve keeps the file's authors,
// provenance and lineage (ImportOptions.PreserveProvenance).
func (r *reader) mnemo(ex memapi.Export, preserve bool) error {
	for i, m := range ex.Memories {
		imp, conf := m.Importance, m.Confidence
		req := memapi.SaveRequest{Type: m.Type, Title: m.Title, Content: m.Content, Summary: m.Summary, Tags: m.Tags,
			TopicKey: m.TopicKey, Importance: &imp, Confidence: &conf, LinkedFiles: m.LinkedFiles, Scope: m.Scope,
			SubjectType: m.SubjectType, SubjectID: m.SubjectID, Project: m.Project, SessionID: m.SessionID, Channel: m.Channel}
		if err := memory.CheckMemoryID(m.ID); err != nil {
			return fmt.Errorf("memory %d: %w", i, err)
		}
		if err := memory.CheckSave(&req); err != nil {
			return fmt.Errorf("memory %d (%s): %w", i, m.ID, err)
		}
		if err := r.t.checkIDFree(m.ID, r.ns); err != nil {
			return fmt.Errorf("memory %d: %w", i, err)
		}
		if err := r.future.check(m.CreatedAt, m.UpdatedAt, m.DeletedAt); err != nil {
			return fmt.Errorf("memory %d (%s): %w", i, m.ID, err)
		}
		o := memory.SaveOptions{ID: m.ID, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, DeletedAt: m.DeletedAt}
		if preserve {
			if err := checkProvenance(m); err != nil {
				return fmt.Errorf("memory %d (%s): %w", i, m.ID, err)
			}
			o.Author, o.Lineage, o.Provenance = m.Author, m.Lineage, m.Provenance
			if a, err := namespace.ParsePrincipal(m.Author); err == nil && memory.Replicated(r.ns.String()) && !r.t.core.IsLocal(a) {
				// Peers refuse a record whose author another node
				// hosts (or nobody does): keep the author as provenance.
				o.Author = ""
				o.Provenance = append(slices.Clone(m.Provenance), "author:"+m.Author)
			}
		}
		r.items = append(r.items, importItem{req, o})
	}
	for i, ss := range ex.Sessions {
		is := importedSession{start: memapi.SessionStart{ID: ss.ID, Project: ss.Project, Directory: ss.Directory},
			started: ss.StartedAt, ended: ss.EndedAt, summary: ss.Summary}
		if err := is.check(r.future); err != nil {
			return fmt.Errorf("session %d (%s): %w", i, ss.ID, err)
		}
		r.sessions = append(r.sessions, is)
	}
	return nil
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

// engram reads an engram export: observations and prompts become memories
// with ids derived from their keys, so a repeated import skips them.
func (r *reader) engram(ex engramExport) error {
	for i, o := range ex.Observations {
		created, err := parseLooseTime(o.CreatedAt)
		if err != nil {
			return fmt.Errorf("observation %d: %w", i, err)
		}
		scope := o.Scope
		if scope == "personal" {
			scope = "user"
		}
		typ := strings.ToLower(strings.TrimSpace(o.Type))
		if typ == "" || memapi.CheckType(typ) != nil {
			typ = memapi.DefaultType
		}
		req := memapi.SaveRequest{Type: typ, Title: o.Title, Content: o.Content, Scope: scope,
			Project: optString(o.Project), SessionID: o.SessionID, TopicKey: optString(o.TopicKey)}
		if t := optString(o.ToolName); t != "" {
			req.Tags = []string{"tool:" + t}
		}
		if err := memory.CheckSave(&req); err != nil {
			return fmt.Errorf("observation %d: %w", i, err)
		}
		key := o.SyncID
		if key == "" {
			key = o.ID.String()
		}
		opts := memory.SaveOptions{ID: memory.DerivedID(created, "engram-observation", key, o.CreatedAt), CreatedAt: created}
		if u, err := parseLooseTime(o.UpdatedAt); err == nil {
			opts.UpdatedAt = u
		}
		if d := optString(o.DeletedAt); d != "" {
			if t, err := parseLooseTime(d); err == nil {
				opts.DeletedAt = &t
			}
		}
		if err := r.future.check(opts.CreatedAt, opts.UpdatedAt, opts.DeletedAt); err != nil {
			return fmt.Errorf("observation %d (%s): %w", i, key, err)
		}
		if err := r.t.checkIDFree(opts.ID, r.ns); err != nil {
			return fmt.Errorf("observation %d (%s): %w", i, key, err)
		}
		opts.Provenance = []string{"source:engram:" + key}
		r.items = append(r.items, importItem{req, opts})
	}
	for i, pr := range ex.Prompts {
		created, err := parseLooseTime(pr.CreatedAt)
		if err != nil {
			return fmt.Errorf("prompt %d: %w", i, err)
		}
		req := memapi.SaveRequest{Type: "prompt", Content: pr.Content, Project: pr.Project, SessionID: pr.SessionID, Scope: "session"}
		if err := memory.CheckSave(&req); err != nil {
			return fmt.Errorf("prompt %d: %w", i, err)
		}
		opts := memory.SaveOptions{ID: memory.DerivedID(created, "engram-prompt", pr.ID.String(), pr.CreatedAt), CreatedAt: created}
		if err := r.future.check(created, time.Time{}, nil); err != nil {
			return fmt.Errorf("prompt %d (%s): %w", i, pr.ID, err)
		}
		if err := r.t.checkIDFree(opts.ID, r.ns); err != nil {
			return fmt.Errorf("prompt %d (%s): %w", i, pr.ID, err)
		}
		r.items = append(r.items, importItem{req, opts})
	}
	for i, ss := range ex.Sessions {
		is := importedSession{start: memapi.SessionStart{ID: ss.ID, Project: ss.Project, Directory: ss.Directory},
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
		if err := is.check(r.future); err != nil {
			return fmt.Errorf("session %d (%s): %w", i, ss.ID, err)
		}
		r.sessions = append(r.sessions, is)
	}
	return nil
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
