package httpapi

import (
	"net/http"

	"github.com/mnemohq/mnemo/node/memapi"
)

// projectionRoutes are the projection routes, served when the node has the
// projection-view feature (node/memory/projview; without it they are 404):
//
//	POST   /v1/projections       {"source","target","filter":{…},"level":"L2","live":true} → 201 with the projection
//	GET    /v1/projections       those the caller created or receives → {"projections":[…]}
//	DELETE /v1/projections/{id}  the creator ends it; its view empties → 204
func (a *api) projectionRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	if a.projViews == nil {
		return nil
	}
	return []struct {
		method, path string
		h            handlerFunc
	}{
		{"POST", "/v1/projections", a.createProjection},
		{"GET", "/v1/projections", a.listProjections},
		{"DELETE", "/v1/projections/{id}", a.deleteProjection},
	}
}

// ProjectionsAnswer is the answer to GET /v1/projections.
type ProjectionsAnswer struct {
	Projections []memapi.ProjectionInfo `json:"projections"`
}

func (a *api) createProjection(w http.ResponseWriter, r *http.Request) error {
	return bodyCall(a, a.projViews.Create, http.StatusCreated)(w, r)
}

func (a *api) listProjections(w http.ResponseWriter, r *http.Request) error {
	if _, err := newParams(r); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	ps, err := a.projViews.List(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ProjectionsAnswer{Projections: ps})
	return nil
}

func (a *api) deleteProjection(w http.ResponseWriter, r *http.Request) error {
	if _, err := newParams(r); err != nil {
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
	if err := a.projViews.Delete(r.Context(), c, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
