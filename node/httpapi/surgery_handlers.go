package httpapi

import (
	"net/http"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
)

// surgeryRoutes are the memory-edit and audit routes (node/memory/surgery):
// propose an edit, approve or reject one, read the audit. A node without
// the surgery feature has none (404).
func (a *api) surgeryRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	if a.surgery == nil {
		return nil
	}
	return []struct {
		method, path string
		h            handlerFunc
	}{
		{"POST", "/v1/edits", a.proposeEdit},
		{"POST", "/v1/edits/{id}/approve", a.approveEdit},
		{"POST", "/v1/edits/{id}/reject", a.rejectEdit},
		{"GET", "/v1/audit", a.audit},
	}
}

// proposeEdit is POST /v1/edits: 201 {"edit_id","status"}.
func (a *api) proposeEdit(w http.ResponseWriter, r *http.Request) error {
	return bodyCall(a, a.surgery.Propose, http.StatusCreated)(w, r)
}

func (a *api) approveEdit(w http.ResponseWriter, r *http.Request) error {
	return a.decideEdit(w, r, true)
}
func (a *api) rejectEdit(w http.ResponseWriter, r *http.Request) error {
	return a.decideEdit(w, r, false)
}

// decideEdit answers 200 with the edit as the audit shows it afterwards.
func (a *api) decideEdit(w http.ResponseWriter, r *http.Request, approve bool) error {
	if _, err := newParams(r); err != nil {
		return err
	}
	if err := decodeJSON(w, r, a.maxBody, &struct{}{}, true); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	e, err := a.surgery.Decide(r.Context(), c, id, approve)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}

// audit is GET /v1/audit[?id=MEMORY][&status=pending][&namespace=NS].
func (a *api) audit(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "id", "status", "namespace")
	if err != nil {
		return err
	}
	q := memapi.AuditQuery{ID: strings.TrimSpace(p.str("id")), Status: p.str("status"), Namespace: p.str("namespace")}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.surgery.Audit(r.Context(), c, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
