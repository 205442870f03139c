package httpapi

import (
	"net/http"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
)

// transferRoutes are the export and import routes; a node without the
// transfer feature has none (404).
func (a *api) transferRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	if a.transfer == nil {
		return nil
	}
	return []struct {
		method, path string
		h            handlerFunc
	}{
		{"GET", "/v1/export", a.export},
		{"POST", "/v1/import", a.importData},
	}
}

func (a *api) export(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "namespace")
	if err != nil {
		return err
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	ex, err := a.transfer.Export(r.Context(), c, p.str("namespace"))
	if err != nil {
		return err
	}
	if ex.Memories == nil {
		ex.Memories = []memapi.Memory{}
	}
	if ex.Sessions == nil {
		ex.Sessions = []memapi.Session{}
	}
	writeJSON(w, http.StatusOK, ex)
	return nil
}

func (a *api) importData(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "namespace", "preserve_provenance")
	if err != nil {
		return err
	}
	opts := memapi.ImportOptions{Namespace: p.str("namespace"), PreserveProvenance: p.boolean("preserve_provenance")}
	if p.err != nil {
		return p.err
	}
	if opts.PreserveProvenance {
		if err := a.requireOwner(r, "import with the file's authors and provenance (preserve_provenance=true)"); err != nil {
			return err
		}
	}
	data, err := readAll(w, r, a.maxImport)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return badRequest("request body is empty; expected a mnemo or engram export")
	}
	c, err := a.callerFor(r)
	if err != nil {
		return err
	}
	res, err := a.transfer.ImportWith(r.Context(), c, data, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
