package memory

import (
	"context"
	"fmt"
	"github.com/mnemohq/mnemo/node/memapi"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// readableSessions lists sessions in the namespaces of f, newest first.
func (s *Service) readableSessions(f search.Filter) []Session {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	var out []Session
	for _, ss := range s.sessions {
		if !inScope(f, ss.Namespace) {
			continue
		}
		if f.Project != "" && ss.Project != f.Project {
			continue
		}
		if f.SessionID != "" && ss.ID != f.SessionID {
			continue
		}
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b Session) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func inScope(f search.Filter, ns string) bool {
	if len(f.Namespaces) == 0 {
		return true
	}
	for _, n := range f.Namespaces {
		if n == ns || (f.Subtree && strings.HasPrefix(ns, n+"/")) {
			return true
		}
	}
	return false
}

func checkSessionID(id string) error {
	if strings.TrimSpace(id) == "" {
		return invalid("session id is required")
	}
	return text("session id", id, MaxKeyBytes)
}

// StartSession opens a session; starting an existing one returns it unchanged.
func (s *Service) StartSession(ctx context.Context, c Caller, req SessionStart) (Session, error) {
	if err := checkSessionID(req.ID); err != nil {
		return Session{}, err
	}
	for _, f := range []struct{ name, v string }{{"project", req.Project}, {"directory", req.Directory}} {
		if err := text(f.name, f.v, MaxPathBytes); err != nil {
			return Session{}, err
		}
	}
	ns, err := s.resolveWrite(c, req.Namespace)
	if err != nil {
		return Session{}, err
	}
	id := schema.SessionPrefix + req.ID
	var out Session
	err = s.write(func(tx *store.Tx) error {
		cur, err := tx.Record(ns.String(), id)
		if err != nil {
			return err
		}
		if !cur.Empty() {
			out = schema.ToSession(ns.String(), id, cur)
			return nil
		}
		out, err = s.createSessionTx(tx, c, ns, req, time.Time{}, nil, "")
		return err
	})
	return out, err
}

// createSessionTx writes a new session record. A zero started means now;
// ended and summary are set only by an import restoring a closed session.
func (s *Service) createSessionTx(tx *store.Tx, c Caller, ns namespace.Address, req SessionStart, started time.Time, ended *time.Time, summary string) (Session, error) {
	id := schema.SessionPrefix + req.ID
	now, ts := s.now()
	if started.IsZero() {
		started = now
	}
	e, err := tx.Edit(ns.String(), id)
	if err != nil {
		return Session{}, err
	}
	fields := []struct {
		name string
		v    []byte
	}{{schema.FieldKind, []byte(schema.KindSession)}, {schema.FieldCreatedAt, schema.EncodeTime(started)}, {schema.FieldProject, []byte(req.Project)},
		{schema.FieldDirectory, []byte(req.Directory)}, {schema.FieldAuthor, []byte(c.Principal.String())}, {schema.FieldSummary, []byte(summary)}}
	if ended != nil {
		fields = append(fields, struct {
			name string
			v    []byte
		}{schema.FieldEndedAt, schema.EncodeTime(*ended)})
	}
	for _, f := range fields {
		if len(f.v) == 0 {
			continue
		}
		if err := e.Set(ts, f.name, f.v); err != nil {
			return Session{}, err
		}
	}
	tx.Commit(ns.String(), id, e)
	rec, _ := tx.Record(ns.String(), id)
	return schema.ToSession(ns.String(), id, rec), nil
}

// findSession locates a session the caller may write, by id.
func (s *Service) findSession(c Caller, id string) (namespace.Address, bool) {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	var found []string
	for _, ss := range s.sessions {
		if ss.ID == id {
			found = append(found, ss.Namespace)
		}
	}
	slices.Sort(found)
	// Prefer the caller's own namespace, then any it may write.
	for _, n := range found {
		if n == c.Principal.String() {
			return c.Principal, true
		}
	}
	for _, n := range found {
		ns, err := namespace.Parse(n)
		if err == nil && s.auth.CheckWrite(c.Principal, ns) == nil {
			return ns, true
		}
	}
	return namespace.Address{}, false
}

// EndSession closes a session, recording its summary if given.
func (s *Service) EndSession(ctx context.Context, c Caller, req SessionEnd) (Session, error) {
	if err := checkSessionID(req.ID); err != nil {
		return Session{}, err
	}
	if err := text("summary", req.Summary, MaxContentBytes); err != nil {
		return Session{}, err
	}
	ns, ok := s.findSession(c, req.ID)
	if !ok {
		return Session{}, fmt.Errorf("%w: session %q", ErrNotFound, req.ID)
	}
	id := schema.SessionPrefix + req.ID
	var out Session
	err := s.write(func(tx *store.Tx) error {
		now, ts := s.now()
		e, err := tx.Edit(ns.String(), id)
		if err != nil {
			return err
		}
		if err := e.Set(ts, schema.FieldEndedAt, schema.EncodeTime(now)); err != nil {
			return err
		}
		if req.Summary != "" {
			if err := e.Set(ts, schema.FieldSummary, []byte(req.Summary)); err != nil {
				return err
			}
		}
		tx.Commit(ns.String(), id, e)
		rec, _ := tx.Record(ns.String(), id)
		out = schema.ToSession(ns.String(), id, rec)
		return nil
	})
	return out, err
}

// SessionSummary saves an end-of-session summary as a memory of type summary
// and records it on the session when the session is known.
func (s *Service) SessionSummary(ctx context.Context, c Caller, req SessionSummaryRequest) (SaveResult, error) {
	if err := checkSessionID(req.SessionID); err != nil {
		return SaveResult{}, err
	}
	title := req.Title
	if title == "" {
		title = "Session summary: " + req.SessionID
	}
	res, err := s.Save(ctx, c, SaveRequest{Namespace: req.Namespace, Type: "summary", Title: title,
		Content: req.Content, Project: req.Project, SessionID: req.SessionID, Scope: "session"})
	if err != nil {
		return res, err
	}
	if _, ok := s.findSession(c, req.SessionID); ok {
		if _, err := s.EndSession(ctx, c, SessionEnd{ID: req.SessionID, Summary: memapi.TruncateRunes(req.Content, 2000)}); err != nil {
			return res, err
		}
	}
	return res, nil
}

// SavePrompt saves a user prompt as a memory of type prompt.
func (s *Service) SavePrompt(ctx context.Context, c Caller, req PromptRequest) (SaveResult, error) {
	return s.Save(ctx, c, SaveRequest{Namespace: req.Namespace, Type: "prompt", Content: req.Content,
		Project: req.Project, SessionID: req.SessionID, Scope: "session"})
}

// ProgressKey is the topic key of a progress note.
func ProgressKey(ns namespace.Address, project string) string {
	return "progress/" + ns.String() + "/" + project
}

// Progress upserts the progress note of a (namespace, project).
func (s *Service) Progress(ctx context.Context, c Caller, req ProgressRequest) (SaveResult, error) {
	if strings.TrimSpace(req.Project) == "" {
		return SaveResult{}, invalid("project is required for progress")
	}
	ns, err := s.resolve(c, req.Namespace)
	if err != nil {
		return SaveResult{}, err
	}
	title := req.Title
	if title == "" {
		title = "Progress: " + req.Project
	}
	return s.Save(ctx, c, SaveRequest{Namespace: ns.String(), Type: "progress", Title: title, Content: req.Content,
		Project: req.Project, SessionID: req.SessionID, TopicKey: ProgressKey(ns, req.Project)})
}
