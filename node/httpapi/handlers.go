package httpapi

import (
	"net/http"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
)

// pathID returns the {id} path value, which the router guarantees non-empty.
func pathID(r *http.Request) (string, error) {
	id := strings.TrimSpace(r.PathValue("id"))
	if id == "" {
		return "", badRequest("empty id in path")
	}
	return id, nil
}

// savedStatus is 201 for a new memory, 200 when a topic key upserted one.
func savedStatus(res memapi.SaveResult) int {
	if res.Upserted {
		return http.StatusOK
	}
	return http.StatusCreated
}

func (a *api) save(w http.ResponseWriter, r *http.Request) error {
	return bodyCallStatus(a, a.svc.Save, savedStatus)(w, r)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "include_deleted", "include_quarantined", "channel")
	if err != nil {
		return err
	}
	opts := memapi.GetOptions{IncludeDeleted: p.boolean("include_deleted"),
		IncludeQuarantined: p.boolean("include_quarantined"), Channel: p.str("channel")}
	if p.err != nil {
		return p.err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	m, err := a.svc.GetFor(r.Context(), c, id, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (a *api) update(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req memapi.UpdateRequest
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	m, err := a.svc.Update(r.Context(), c, id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (a *api) delete(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "hard")
	if err != nil {
		return err
	}
	hard := p.boolean("hard")
	if p.err != nil {
		return p.err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	if err := a.svc.Delete(r.Context(), c, id, hard); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) search(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, with(filterParams, "q", "limit", "include_deleted", "feedback")...)
	if err != nil {
		return err
	}
	q := memapi.SearchQuery{
		Query:          p.str("q"),
		Filter:         p.filter(),
		Limit:          p.count("limit"),
		IncludeDeleted: p.boolean("include_deleted"),
		Feedback:       p.boolean("feedback"),
	}
	if p.err != nil {
		return p.err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.svc.Search(r.Context(), c, q)
	if err != nil {
		return err
	}
	if res.Results == nil {
		res.Results = []memapi.SearchHit{}
	}
	writeBuffered(w, a.searchBufs, http.StatusOK, res)
	return nil
}

func (a *api) timeline(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, with(filterParams, "id", "before", "after")...)
	if err != nil {
		return err
	}
	q := memapi.TimelineQuery{
		ID:     strings.TrimSpace(p.str("id")),
		Before: p.count("before"),
		After:  p.count("after"),
		Filter: p.filter(),
	}
	if p.err != nil {
		return p.err
	}
	if q.ID == "" {
		return badRequest("query parameter \"id\" is required")
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	tl, err := a.svc.Timeline(r.Context(), c, q)
	if err != nil {
		return err
	}
	if tl.Before == nil {
		tl.Before = []memapi.Memory{}
	}
	if tl.After == nil {
		tl.After = []memapi.Memory{}
	}
	writeJSON(w, http.StatusOK, tl)
	return nil
}

func (a *api) context(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, with(filterParams, "max_tokens")...)
	if err != nil {
		return err
	}
	q := memapi.ContextQuery{Filter: p.filter(), MaxTokens: p.count("max_tokens")}
	if p.err != nil {
		return p.err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.svc.Context(r.Context(), c, q)
	if err != nil {
		return err
	}
	if res.Memories == nil {
		res.Memories = []memapi.Memory{}
	}
	if res.Sessions == nil {
		res.Sessions = []memapi.Session{}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (a *api) compact(w http.ResponseWriter, r *http.Request) error {
	return bodyCall(a, a.svc.Compact, http.StatusOK)(w, r)
}

func (a *api) stats(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "namespace")
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	st, err := a.svc.Stats(r.Context(), c, p.str("namespace"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *api) startSession(w http.ResponseWriter, r *http.Request) error {
	return bodyCall(a, a.svc.StartSession, http.StatusCreated)(w, r)
}

// sessionEndBody is the optional body of POST /v1/sessions/{id}/end; the id
// comes from the path only.
type sessionEndBody struct {
	Summary string `json:"summary,omitempty"`
}

func (a *api) endSession(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var body sessionEndBody
	if err := decodeJSON(w, r, a.maxBody, &body, true); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	s, err := a.svc.EndSession(r.Context(), c, memapi.SessionEnd{ID: id, Summary: body.Summary})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

func (a *api) sessionSummary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req memapi.SessionSummaryRequest
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	if req.SessionID != "" && req.SessionID != id {
		return badRequest("field \"session_id\" (%q) differs from the session id in the path (%q)", req.SessionID, id)
	}
	req.SessionID = id
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.svc.SessionSummary(r.Context(), c, req)
	if err != nil {
		return err
	}
	writeJSON(w, savedStatus(res), res)
	return nil
}

func (a *api) prompt(w http.ResponseWriter, r *http.Request) error {
	return bodyCallStatus(a, a.svc.SavePrompt, savedStatus)(w, r)
}

func (a *api) progress(w http.ResponseWriter, r *http.Request) error {
	return bodyCallStatus(a, a.svc.Progress, savedStatus)(w, r)
}
