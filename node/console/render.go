package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// pageNames are the templates under assets/, each rendered inside
// assets/layout.html.
var pageNames = []string{"signin", "error", "memories", "memory", "governance", "namespaces", "cluster", "projections"}

var funcs = template.FuncMap{
	"join": strings.Join,
	"list": func(s ...string) []string { return s },
	"json": func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return err.Error()
		}
		return string(b)
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"whenp": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"pct": func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"short": func(s string, n int) string {
		if len([]rune(s)) <= n {
			return s
		}
		return string([]rune(s)[:n]) + "…"
	},
	"has": func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	},
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// view is what every page template gets.
type view struct {
	Title     string
	Page      string
	Signed    bool
	Principal string
	Owner     bool
	CSRF      string
	NodeID    string
	ViewAs    []string // an owner session's choice of principals
	Data      any
}

// render executes a page into a buffer first, so a template error becomes
// a 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, status int, page string, ss *session, title string, data any) {
	v := view{Title: title, Page: page, NodeID: c.cfg.NodeID, Data: data}
	if ss != nil {
		v.Signed, v.Principal, v.Owner, v.CSRF = true, ss.principal.String(), ss.owner, ss.csrf
		if ss.owner {
			for _, p := range c.cfg.Principals() {
				v.ViewAs = append(v.ViewAs, p.String())
			}
		}
	}
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.cfg.Logger.Error("console template", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
