package node

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// dashboardFile is the Grafana dashboard for the node's metrics.
const dashboardFile = "metrics/grafana/mnemo.json"

type dashboard struct {
	Title      string
	Panels     []dashboardPanel
	Templating struct {
		List []struct {
			Name       string
			Type       string
			Definition string
		}
	}
}

type dashboardPanel struct {
	Title      string
	Type       string
	Datasource struct{ UID string }
	Targets    []struct{ Expr string }
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	inBraces   = regexp.MustCompile(`\{[^}]*\}`)
	inBrackets = regexp.MustCompile(`\[[^\]]*\]`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// promQLWords are the functions and keywords the dashboard's queries may use.
var promQLWords = map[string]bool{
	"sum": true, "rate": true, "increase": true, "histogram_quantile": true, "by": true,
	"label_values": true, "le": true,
}

// checkDashboard parses the dashboard and checks that each query names
// only metrics in fams (a node's scrape, with every family observed),
// labels they carry, and the PromQL words above: a renamed metric breaks
// this test, not a panel in someone's Grafana.
func checkDashboard(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s does not parse: %v", dashboardFile, err)
	}
	labels := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				labels[l.GetName()] = true
			}
		}
	}
	labels["instance"] = true // added by Prometheus to every scraped series
	known := func(name string) bool {
		if f, ok := fams[name]; ok && f.GetType() != dto.MetricType_HISTOGRAM {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, ok := strings.CutSuffix(name, suffix)
			if !ok || fams[base] == nil {
				continue
			}
			switch fams[base].GetType() {
			case dto.MetricType_HISTOGRAM:
				return true
			case dto.MetricType_SUMMARY:
				return suffix != "_bucket"
			}
		}
		return false
	}
	used := map[string]bool{}
	// check checks expr; a panel's query must select with braces (so that
	// it filters by $instance), a variable's may name a metric bare.
	check := func(where, expr string, braces bool) {
		names := 0
		for _, sel := range regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`).FindAllStringSubmatch(expr, -1) {
			if !known(sel[1]) {
				t.Errorf("%s: %s is not a metric the node exports", where, sel[1])
			}
			used[sel[1]] = true
			names++
		}
		if braces && names == 0 {
			t.Errorf("%s: %q selects no metric with braces", where, expr)
		}
		bare := inBrackets.ReplaceAllString(inBraces.ReplaceAllString(quoted.ReplaceAllString(expr, ""), ""), "")
		for _, w := range identifier.FindAllString(bare, -1) {
			if !promQLWords[w] && !labels[w] && !known(w) {
				t.Errorf("%s: %q is neither a metric the node exports, a label, nor a PromQL word this test knows", where, w)
			}
		}
	}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || titles[p.Title] {
			t.Errorf("panel title %q empty or repeated", p.Title)
		}
		titles[p.Title] = true
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q, %d queries", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr, true)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			check("variable "+v.Name, v.Definition, false)
		}
	}
	// what the dashboard is for
	for _, m := range []string{
		"mnemo_memory_operation_duration_seconds_bucket", "mnemo_http_request_duration_seconds_count",
		"mnemo_replication_lag_seconds_bucket", "mnemo_peer_queue_depth", "mnemo_peer_fallbacks_total",
		"go_memstats_heap_inuse_bytes", "process_resident_memory_bytes",
	} {
		if !used[m] {
			t.Errorf("no panel queries %s", m)
		}
	}
}
