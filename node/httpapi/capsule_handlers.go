package httpapi

import (
	"context"
	"net/http"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/bundle"
)

// capsuleRoutes are the capsule and context bundle routes.
func (a *api) capsuleRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	type route = struct {
		method, path string
		h            handlerFunc
	}
	routes := []route{
		{"POST", "/v1/context/bundle", a.contextBundle},
	}
	if a.capsules != nil { // a node without the capsule feature has no capsule routes (404)
		routes = append(routes, []route{
			{"POST", "/v1/capsules", a.createCapsule},
			{"GET", "/v1/capsules", a.listCapsules},
			{"GET", "/v1/capsules/{id}", a.getCapsule},
			{"DELETE", "/v1/capsules/{id}", a.revokeCapsule},
		}...)
	}
	return routes
}

func (a *api) createCapsule(w http.ResponseWriter, r *http.Request) error {
	return bodyCall(a, a.capsules.Create, http.StatusCreated)(w, r)
}

func (a *api) listCapsules(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "subject_type", "subject_id")
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.capsules.List(r.Context(), c, memapi.CapsuleQuery{SubjectType: p.str("subject_type"), SubjectID: p.str("subject_id")})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (a *api) getCapsule(w http.ResponseWriter, r *http.Request) error {
	return a.capsuleByID(w, r, a.capsules.Get)
}

func (a *api) revokeCapsule(w http.ResponseWriter, r *http.Request) error {
	return a.capsuleByID(w, r, a.capsules.Revoke)
}

func (a *api) capsuleByID(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, c memapi.Caller, id string) (memapi.Capsule, error)) error {
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
	res, err := do(r.Context(), c, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (a *api) contextBundle(w http.ResponseWriter, r *http.Request) error {
	var req memapi.BundleRequest
	if err := decodeJSON(w, r, a.maxBody, &req, true); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	var caps bundle.Capsules
	if a.capsules != nil {
		caps = a.capsules
	}
	res, err := bundle.Build(r.Context(), a.svc, caps, c, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
