package httpapi

import (
	"net/http"
	"strconv"

	"github.com/mnemohq/mnemo/node/memapi"
)

// dedupRoutes are the duplicates routes; a node without the dedup feature
// has none (404).
func (a *api) dedupRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	if a.dedup == nil {
		return nil
	}
	return []struct {
		method, path string
		h            handlerFunc
	}{
		{"GET", "/v1/duplicates", a.duplicates},
		{"POST", "/v1/duplicates/merge", a.mergeDuplicates},
	}
}

func (a *api) duplicates(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "namespace", "threshold", "limit")
	if err != nil {
		return err
	}
	q := memapi.DuplicateQuery{Namespace: p.str("namespace"), Limit: p.count("limit")}
	if s := p.str("threshold"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v > 1 {
			return badRequest("query parameter \"threshold\": want a number in (0, 1], got %q", s)
		}
		q.Threshold = v
	}
	if p.err != nil {
		return p.err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.dedup.Find(r.Context(), c, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (a *api) mergeDuplicates(w http.ResponseWriter, r *http.Request) error {
	return bodyCall(a, a.dedup.Merge, http.StatusOK)(w, r)
}
