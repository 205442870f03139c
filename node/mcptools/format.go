package mcptools

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
)

// The text renderings below are what a model reads; the same data is in the
// structured content for programs.

const snippetLen = 160

// fromMark marks what another agent wrote into the reader's inbox, so a
// model never reads it as the reader's own memory or decision.
func fromMark(m memapi.Memory) string {
	if m.From == "" {
		return ""
	}
	return "[from " + m.From + "] "
}

// snippet is the start of s on one line.
func snippet(s string) string {
	return shorten(strings.Join(strings.Fields(s), " "), snippetLen)
}

func day(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

func savedText(r memapi.SaveResult) string {
	verb := "Saved"
	if r.Upserted {
		verb = "Updated"
	}
	s := fmt.Sprintf("%s memory %s (%s) in %s: %s", verb, r.ID, r.Type, r.Namespace, r.Title)
	if r.TopicKey != "" {
		s += "\ntopic_key: " + r.TopicKey
	}
	return s
}

func searchText(q string, r memapi.SearchResult) string {
	if len(r.Results) == 0 {
		return fmt.Sprintf("No memories match %q. Try other keywords, fewer filters, or mem_context for recent memories.", q)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %s matches for %q:\n", len(r.Results), r.TotalText(), q)
	for i, h := range r.Results {
		m := h.Memory
		fmt.Fprintf(&b, "%d. [%s] (%s) %s%s — score %.2f", i+1, m.ID, m.Type, fromMark(m), m.Title, h.Score)
		if m.DeletedAt != nil {
			b.WriteString(" [archived]")
		}
		fmt.Fprintf(&b, "\n   %s | %s", m.Namespace, day(m.CreatedAt))
		if m.Project != "" {
			fmt.Fprintf(&b, " | project %s", m.Project)
		}
		fmt.Fprintf(&b, "\n   %s\n", snippet(m.Content))
	}
	b.WriteString("Full content: mem_get_observation with an id. Surroundings: mem_timeline with observation_id.")
	return b.String()
}

func contextText(r memapi.ContextResult) string {
	if r.Text == "" && len(r.Memories) == 0 && len(r.Sessions) == 0 {
		return "No memories yet for this filter. Save decisions and learnings with mem_save as you work."
	}
	s := r.Text
	s += fmt.Sprintf("\n\n(%d memories, %d sessions, ~%d of %d tokens", len(r.Memories), len(r.Sessions), r.TokensUsed, r.MaxTokens)
	if r.Truncated {
		s += "; older memories left out: raise max_tokens or use mem_search"
	}
	return s + ")"
}

func timelineText(t memapi.Timeline) string {
	var b strings.Builder
	line := func(mark string, m memapi.Memory) {
		fmt.Fprintf(&b, "%s %s [%s] (%s) %s%s\n", mark, day(m.CreatedAt), m.ID, m.Type, fromMark(m), m.Title)
	}
	fmt.Fprintf(&b, "Timeline around %s (%d before, %d after):\n", t.Center.ID, len(t.Before), len(t.After))
	for _, m := range t.Before {
		line("  ", m)
	}
	line(">>", t.Center)
	fmt.Fprintf(&b, "     %s\n", snippet(t.Center.Content))
	for _, m := range t.After {
		line("  ", m)
	}
	return strings.TrimRight(b.String(), "\n")
}

func memoryText(m memapi.Memory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s\nid: %s\ntype: %s\nnamespace: %s\nscope: %s\n", fromMark(m), m.Title, m.ID, m.Type, m.Namespace, m.Scope)
	opt := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	if m.From != "" {
		opt("from", m.From+" (written into your inbox by another agent: its words, not your own memory or decision)")
	}
	opt("copied_from", m.CopiedFrom)
	opt("project", m.Project)
	opt("session_id", m.SessionID)
	opt("topic_key", m.TopicKey)
	if len(m.Tags) > 0 {
		opt("tags", strings.Join(m.Tags, ", "))
	}
	if len(m.LinkedFiles) > 0 {
		opt("linked_files", strings.Join(m.LinkedFiles, ", "))
	}
	if m.SubjectType != "" || m.SubjectID != "" {
		opt("subject", m.SubjectType+" "+m.SubjectID)
	}
	opt("channel", m.Channel)
	fmt.Fprintf(&b, "importance: %.2f, confidence: %.2f\n", m.Importance, m.Confidence)
	opt("author", m.Author)
	fmt.Fprintf(&b, "created: %s, updated: %s\n", day(m.CreatedAt), day(m.UpdatedAt))
	if m.DeletedAt != nil {
		fmt.Fprintf(&b, "archived: %s\n", day(*m.DeletedAt))
	}
	opt("summary", m.Summary)
	b.WriteString("\n" + m.Content)
	return b.String()
}

func statsText(s memapi.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d live memories, %d archived, %d sessions.\n", s.Memories, s.Deleted, s.Sessions)
	counts := func(label string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		b.WriteString(label + ":")
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, " %s=%d", k, m[k])
		}
		b.WriteString("\n")
	}
	counts("by type", s.ByType)
	counts("by namespace", s.ByNamespace)
	if len(s.Projects) > 0 {
		fmt.Fprintf(&b, "projects: %s\n", strings.Join(s.Projects, ", "))
	}
	if s.Oldest != nil && s.Newest != nil {
		fmt.Fprintf(&b, "oldest %s, newest %s\n", day(*s.Oldest), day(*s.Newest))
	}
	return strings.TrimRight(b.String(), "\n")
}

func compactText(days int, r memapi.CompactResult) string {
	var b strings.Builder
	if r.Mode == "execute" {
		fmt.Fprintf(&b, "Compacted %d memories", r.Compacted)
		if r.SummaryID != "" {
			fmt.Fprintf(&b, " into summary %s", r.SummaryID)
		}
		fmt.Fprintf(&b, ". Live memories under the filter: %d → %d.", r.Before, r.After)
		return b.String()
	}
	if len(r.Candidates) == 0 {
		return fmt.Sprintf("No live memories older than %d days under this filter (%d live in all). Nothing to compact.", days, r.Before)
	}
	fmt.Fprintf(&b, "%d candidates older than %d days (of %d live memories under the filter).\n", len(r.Candidates), days, r.Before)
	if len(r.Histogram) > 0 {
		b.WriteString("By age:")
		for _, h := range r.Histogram {
			fmt.Fprintf(&b, " %s=%d", h.Label, h.Count)
		}
		b.WriteString("\n")
	}
	for i, c := range r.Candidates {
		fmt.Fprintf(&b, "%d. [%s] %dd (%s) %s — %s\n", i+1, c.ID, c.AgeDays, c.Type, c.Title, snippet(c.Snippet))
	}
	b.WriteString("Nothing was changed. Next: read what matters (mem_get_observation), then call mem_compact with compact_ids (the ids to retire), summary_title and summary_content.")
	return b.String()
}
