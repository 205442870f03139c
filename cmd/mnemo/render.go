package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/mnemohq/mnemo/node/memapi"
)

func nsQuery(ns string) url.Values {
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	return q
}

func jsonBytes(v any) ([]byte, error) { return json.Marshal(v) }

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// cell makes text fit one table cell: one line, at most n runes.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printMemory(w io.Writer, m memapi.Memory) {
	tw := table(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("id", m.ID)
	row("namespace", m.Namespace)
	row("type", m.Type)
	row("title", m.Title)
	row("tags", strings.Join(m.Tags, ", "))
	row("topic_key", m.TopicKey)
	row("importance", fmt.Sprintf("%.2f", m.Importance))
	row("confidence", fmt.Sprintf("%.2f", m.Confidence))
	row("scope", m.Scope)
	row("project", m.Project)
	row("session", m.SessionID)
	row("channel", m.Channel)
	if m.SubjectType != "" || m.SubjectID != "" {
		row("subject", m.SubjectType+"/"+m.SubjectID)
	}
	row("files", strings.Join(m.LinkedFiles, ", "))
	row("author", m.Author)
	row("created", when(m.CreatedAt))
	row("updated", when(m.UpdatedAt))
	if m.DeletedAt != nil {
		row("deleted", when(*m.DeletedAt))
	}
	row("lineage", m.Lineage)
	row("summary", m.Summary)
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", strings.TrimRight(m.Content, "\n"))
}

func printSearch(w io.Writer, res memapi.SearchResult) {
	if len(res.Results) == 0 {
		fmt.Fprintln(w, "no memories found")
		return
	}
	tw := table(w)
	fmt.Fprintln(tw, "ID\tSCORE\tTYPE\tTITLE\tNAMESPACE\tCREATED")
	for _, h := range res.Results {
		m := h.Memory
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%s\t%s\n", m.ID, h.Score, m.Type, cell(m.Title, 60), m.Namespace, when(m.CreatedAt))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %s shown\n", len(res.Results), res.TotalText())
}

func printTimeline(w io.Writer, tl memapi.Timeline) {
	tw := table(w)
	fmt.Fprintln(tw, " \tID\tCREATED\tTYPE\tTITLE")
	line := func(mark string, m memapi.Memory) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, m.ID, when(m.CreatedAt), m.Type, cell(m.Title, 60))
	}
	for _, m := range tl.Before {
		line(" ", m)
	}
	line(">", tl.Center)
	for _, m := range tl.After {
		line(" ", m)
	}
	tw.Flush()
}

func printCompact(w io.Writer, res memapi.CompactResult) {
	if res.Mode == "execute" {
		fmt.Fprintf(w, "compacted %d memories", res.Compacted)
		if res.SummaryID != "" {
			fmt.Fprintf(w, " into summary %s", res.SummaryID)
		}
		fmt.Fprintf(w, "; live memories %d → %d\n", res.Before, res.After)
		return
	}
	if len(res.Candidates) == 0 {
		fmt.Fprintf(w, "no stale memories (%d live)\n", res.Before)
		return
	}
	tw := table(w)
	fmt.Fprintln(tw, "ID\tAGE\tTYPE\tTITLE\tSNIPPET")
	for _, c := range res.Candidates {
		fmt.Fprintf(tw, "%s\t%dd\t%s\t%s\t%s\n", c.ID, c.AgeDays, c.Type, cell(c.Title, 40), cell(c.Snippet, 40))
	}
	tw.Flush()
	var hist []string
	for _, b := range res.Histogram {
		hist = append(hist, fmt.Sprintf("%s: %d", b.Label, b.Count))
	}
	fmt.Fprintf(w, "%d candidates of %d live", len(res.Candidates), res.Before)
	if len(hist) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(hist, ", "))
	}
	fmt.Fprintln(w, "\nto compact: mnemo compact --ids ID,ID,… --summary-title T --summary-content C")
}

func printStats(w io.Writer, st memapi.Stats) {
	tw := table(w)
	fmt.Fprintf(tw, "memories\t%d\n", st.Memories)
	fmt.Fprintf(tw, "deleted\t%d\n", st.Deleted)
	fmt.Fprintf(tw, "sessions\t%d\n", st.Sessions)
	if st.Oldest != nil {
		fmt.Fprintf(tw, "oldest\t%s\n", when(*st.Oldest))
	}
	if st.Newest != nil {
		fmt.Fprintf(tw, "newest\t%s\n", when(*st.Newest))
	}
	fmt.Fprintf(tw, "projects\t%s\n", orDash(strings.Join(st.Projects, ", ")))
	tw.Flush()
	counts := func(title string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "\n%s\n", title)
		tw := table(w)
		for _, k := range keys {
			fmt.Fprintf(tw, "  %s\t%d\n", k, m[k])
		}
		tw.Flush()
	}
	counts("by type", st.ByType)
	counts("by namespace", st.ByNamespace)
}
