package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
)

// listLimit is how many memories a list without search text shows.
const listLimit = 100

// splitList reads "a, b,c" as [a b c].
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// filterOf reads the filter fields of the memories page's query.
func filterOf(q url.Values) memapi.Filter {
	return memapi.Filter{
		Namespace:          strings.TrimSpace(q.Get("namespace")),
		Type:               strings.TrimSpace(q.Get("type")),
		Tags:               splitList(q.Get("tags")),
		Scope:              strings.TrimSpace(q.Get("scope")),
		SubjectType:        strings.TrimSpace(q.Get("subject_type")),
		SubjectID:          strings.TrimSpace(q.Get("subject_id")),
		IncludeQuarantined: q.Get("include_quarantined") == "on",
	}
}

// memoriesPage is GET /ui/memories: ranked search when there is search
// text, otherwise the newest memories under the filter; every result is
// what the memory service answers for this session's principal.
func (c *Console) memoriesPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	q := r.URL.Query()
	f := filterOf(q)
	text := strings.TrimSpace(q.Get("q"))
	data := map[string]any{"Q": text, "F": f, "Tags": strings.Join(f.Tags, ", ")}
	var ms []memapi.Memory
	if text != "" {
		res, err := c.svc.Search(r.Context(), ss.caller(), memapi.SearchQuery{Query: text, Filter: f, Limit: 100})
		if err != nil {
			return err
		}
		for _, h := range res.Results {
			ms = append(ms, h.Memory)
		}
		data["Total"] = res.Total
	} else {
		list, cut, err := c.svc.Memories(r.Context(), ss.caller(), f, listLimit)
		if err != nil {
			return err
		}
		ms = list
		data["Cut"] = cut
	}
	data["Memories"] = ms
	nss, err := c.svc.Namespaces(r.Context(), ss.caller())
	if err != nil {
		return err
	}
	var writable []string
	for _, ns := range nss {
		if c.svc.MayWrite(ss.principal, ns.Namespace) {
			writable = append(writable, ns.Namespace)
		}
	}
	data["Writable"] = writable
	c.render(w, http.StatusOK, "memories", ss, "Memories", data)
	return nil
}

// memoryPage is GET /ui/memories/{id}: the memory with its provenance and
// lineage, the memories around it, its edits, and the forms the
// principal's permissions allow.
func (c *Console) memoryPage(w http.ResponseWriter, r *http.Request, ss *session) error {
	id := r.PathValue("id")
	m, err := c.svc.GetFor(r.Context(), ss.caller(), id, memapi.GetOptions{IncludeDeleted: true, IncludeQuarantined: true})
	if err != nil {
		return err
	}
	data := map[string]any{"M": m, "Writable": c.svc.MayWrite(ss.principal, m.Namespace), "Ops": memapi.EditOps}
	if m.DeletedAt == nil {
		tl, err := c.svc.Timeline(r.Context(), ss.caller(), memapi.TimelineQuery{ID: m.ID, Before: 3, After: 3,
			Filter: memapi.Filter{IncludeQuarantined: true}})
		if err == nil {
			data["Timeline"] = tl
		}
	}
	if c.surgery != nil {
		res, err := c.surgery.Audit(r.Context(), ss.caller(), memapi.AuditQuery{ID: m.ID})
		if err != nil && !errors.Is(err, acl.ErrDenied) {
			return err
		}
		data["Edits"] = c.editRows(ss, res.Edits)
	}
	c.render(w, http.StatusOK, "memory", ss, m.Title, data)
	return nil
}

func parseUnit(name, s string) (*float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, &httpError{http.StatusBadRequest, name + " must be a number from 0 to 1"}
	}
	return &f, nil
}

// saveMemory is POST /ui/memories.
func (c *Console) saveMemory(w http.ResponseWriter, r *http.Request, ss *session) error {
	f := r.PostForm
	imp, err := parseUnit("importance", f.Get("importance"))
	if err != nil {
		return err
	}
	req := memapi.SaveRequest{
		Namespace: strings.TrimSpace(f.Get("namespace")), Type: strings.TrimSpace(f.Get("type")),
		Title: strings.TrimSpace(f.Get("title")), Content: f.Get("content"), Tags: splitList(f.Get("tags")),
		Importance: imp, Scope: strings.TrimSpace(f.Get("scope")),
		SubjectType: strings.TrimSpace(f.Get("subject_type")), SubjectID: strings.TrimSpace(f.Get("subject_id")),
		TopicKey: strings.TrimSpace(f.Get("topic_key")),
	}
	res, err := c.svc.Save(r.Context(), ss.caller(), req)
	if err != nil {
		return err
	}
	return seeOther(w, r, "/ui/memories/"+url.PathEscape(res.ID), nil)
}

// updateMemory is POST /ui/memories/{id}/update: title, content, tags and
// importance, as the form sends them.
func (c *Console) updateMemory(w http.ResponseWriter, r *http.Request, ss *session) error {
	f := r.PostForm
	imp, err := parseUnit("importance", f.Get("importance"))
	if err != nil {
		return err
	}
	title, content := strings.TrimSpace(f.Get("title")), f.Get("content")
	tags := splitList(f.Get("tags"))
	if tags == nil {
		tags = []string{}
	}
	req := memapi.UpdateRequest{Title: &title, Content: &content, Tags: &tags, Importance: imp}
	m, err := c.svc.Update(r.Context(), ss.caller(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	return seeOther(w, r, "/ui/memories/"+url.PathEscape(m.ID), nil)
}

// deleteMemory is POST /ui/memories/{id}/delete: a soft delete, which
// keeps the data (the API's DELETE without hard=true).
func (c *Console) deleteMemory(w http.ResponseWriter, r *http.Request, ss *session) error {
	id := r.PathValue("id")
	if err := c.svc.Delete(r.Context(), ss.caller(), id, false); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/memories/"+url.PathEscape(id), nil)
}

// proposeEdit is POST /ui/memories/{id}/edits: a memory edit (retract,
// block, quarantine, amend, attenuate) that may wait for approval.
func (c *Console) proposeEdit(w http.ResponseWriter, r *http.Request, ss *session) error {
	if c.surgery == nil {
		return notFeature("memory edit")
	}
	f := r.PostForm
	req := memapi.EditRequest{TargetID: r.PathValue("id"), Op: f.Get("op"), Reason: strings.TrimSpace(f.Get("reason"))}
	if t := f.Get("text"); t != "" {
		req.Patch.Text = &t
	}
	imp, err := parseUnit("importance", f.Get("importance"))
	if err != nil {
		return err
	}
	req.Patch.Importance = imp
	req.Patch.Channel = strings.TrimSpace(f.Get("channel"))
	if _, err := c.surgery.Propose(r.Context(), ss.caller(), req); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/memories/"+url.PathEscape(req.TargetID), nil)
}

// editRow is an edit with whether this session may decide it.
type editRow struct {
	memapi.Edit
	MayDecide bool
}

func (c *Console) editRows(ss *session, edits []memapi.Edit) []editRow {
	rows := make([]editRow, len(edits))
	pol := c.svc.Policy()
	for i, e := range edits {
		rows[i] = editRow{Edit: e}
		if e.Status == memapi.StatusPending && e.NeedsApproval {
			if ns, err := namespace.Parse(e.Namespace); err == nil && pol != nil {
				rows[i].MayDecide = pol.Allowed(ss.principal, ns, acl.Admin)
			}
		}
	}
	return rows
}
