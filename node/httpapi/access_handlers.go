package httpapi

import (
	"context"
	"net/http"

	"github.com/mnemohq/mnemo/node/memapi"
)

// accessRoutes are the namespace, grant, sharing and token routes.
func (a *api) accessRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	return []struct {
		method, path string
		h            handlerFunc
	}{
		{"GET", "/v1/namespaces", a.listNamespaces},
		{"POST", "/v1/namespaces", a.createNamespace},
		{"GET", "/v1/grants", a.listGrants},
		{"POST", "/v1/grants", a.grant},
		{"DELETE", "/v1/grants", a.revoke},
		{"POST", "/v1/share", a.share},
		{"POST", "/v1/promote", a.promote},
		{"POST", "/v1/retract", a.retract},
		{"POST", "/v1/tokens", a.issueToken},
	}
}

// NamespacesAnswer is the answer to GET /v1/namespaces.
type NamespacesAnswer struct {
	Namespaces []memapi.NamespaceInfo `json:"namespaces"`
}

func (a *api) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	if _, err := newParams(r); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	ns, err := a.svc.Namespaces(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, NamespacesAnswer{Namespaces: ns})
	return nil
}

func (a *api) createNamespace(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Namespace string `json:"namespace"`
	}
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	info, err := a.svc.CreateNamespace(r.Context(), c, req.Namespace)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, info)
	return nil
}

func (a *api) listGrants(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "namespace")
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	v, err := a.svc.ACL(r.Context(), c, p.str("namespace"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (a *api) grant(w http.ResponseWriter, r *http.Request) error {
	return a.grantOrRevoke(w, r, a.svc.Grant, http.StatusCreated)
}

func (a *api) revoke(w http.ResponseWriter, r *http.Request) error {
	return a.grantOrRevoke(w, r, a.svc.Revoke, http.StatusOK)
}

func (a *api) grantOrRevoke(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, c memapi.Caller, req memapi.GrantRequest) (memapi.GrantResult, error), status int) error {
	var req memapi.GrantRequest
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := do(r.Context(), c, req)
	if err != nil {
		return err
	}
	writeJSON(w, status, res)
	return nil
}

func (a *api) share(w http.ResponseWriter, r *http.Request) error {
	return bodyCallStatus(a, a.svc.Share, copiedStatus)(w, r)
}

func (a *api) promote(w http.ResponseWriter, r *http.Request) error {
	return bodyCallStatus(a, a.svc.Promote, copiedStatus)(w, r)
}

// copiedStatus is 201 for a new copy, 200 when the same copy existed.
func copiedStatus(res memapi.ShareResult) int {
	if res.Existing && res.Reference == nil {
		return http.StatusOK
	}
	return http.StatusCreated
}

// RetractAnswer is the answer to POST /v1/retract.
type RetractAnswer struct {
	Retracted string `json:"retracted"`
}

func (a *api) retract(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ID string `json:"id"`
	}
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	if err := a.svc.Retract(r.Context(), c, req.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RetractAnswer{Retracted: req.ID})
	return nil
}
