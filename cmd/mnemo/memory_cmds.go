package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
)

// filterFlags are the read filters shared by search, timeline and context;
// values go to the node as given, so the node's validation (and its error
// naming the parameter) is the only one.
type filterFlags struct {
	vals map[string]*string
}

var filterFlagNames = []struct{ flag, param, help string }{
	{"namespace", "namespace", "namespace `NS` (agent://x, team://y, or a sub-path of your own); default everything readable"},
	{"type", "type", "memory `TYPE` (decision, observation, …)"},
	{"tags", "tags", "comma-separated `TAGS`, all required"},
	{"project", "project", "`PROJECT`"},
	{"scope", "scope", "`SCOPE` (session, user, project, policy, global)"},
	{"subject-type", "subject_type", "subject `TYPE`"},
	{"subject-id", "subject_id", "subject `ID`"},
	{"session", "session_id", "session `ID`"},
	{"channel", "channel", "`CHANNEL` (private, public, team, agent)"},
	{"since", "since", "created at or after `TIME` (RFC 3339)"},
	{"until", "until", "created at or before `TIME` (RFC 3339)"},
	{"include-quarantined", "include_quarantined", "`true` also shows memories quarantined by an edit"},
}

func addFilterFlags(fs *flag.FlagSet) *filterFlags {
	ff := &filterFlags{vals: map[string]*string{}}
	for _, f := range filterFlagNames {
		ff.vals[f.param] = fs.String(f.flag, "", f.help)
	}
	return ff
}

func (ff *filterFlags) values() url.Values {
	q := url.Values{}
	for k, v := range ff.vals {
		if *v != "" {
			q.Set(k, *v)
		}
	}
	return q
}

func setCount(q url.Values, k string, v int) {
	if v != 0 {
		q.Set(k, strconv.Itoa(v))
	}
}

func runSave(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("save", "[flags] CONTENT… | -",
		"Saves a memory. The content is the arguments joined by spaces, or standard input for \"-\".\nA --topic-key that matches a live memory updates it in place.", stdout, stderr)
	cf := addClientFlags(fs)
	var req memapi.SaveRequest
	fs.StringVar(&req.Type, "type", "observation", "memory `TYPE`: observation, decision, preference, correction, pattern, summary, progress, …")
	fs.StringVar(&req.Title, "title", "", "`TITLE` (default derived from the content)")
	tags := fs.String("tags", "", "comma-separated `TAGS`")
	files := fs.String("files", "", "comma-separated linked `FILES`")
	fs.StringVar(&req.TopicKey, "topic-key", "", "topic `KEY`; saving the same key again updates that memory")
	fs.StringVar(&req.Summary, "summary", "", "short `SUMMARY`")
	fs.StringVar(&req.Namespace, "namespace", "", "namespace `NS` (default your agent's)")
	fs.StringVar(&req.Scope, "scope", "", "`SCOPE`: session, user, project (default), policy, global")
	fs.StringVar(&req.Project, "project", "", "`PROJECT`")
	fs.StringVar(&req.SessionID, "session", "", "session `ID`")
	fs.StringVar(&req.Channel, "channel", "", "`CHANNEL`: private, public, team, agent")
	fs.StringVar(&req.SubjectType, "subject-type", "", "subject `TYPE`")
	fs.StringVar(&req.SubjectID, "subject-id", "", "subject `ID`")
	importance := optFloat(fs, "importance", "importance 0..1 (default 0.5)")
	confidence := optFloat(fs, "confidence", "confidence 0..1 (default 0.8)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return usageError(stderr, fs, "no content: give it as arguments, or \"-\" to read standard input")
	}
	if len(pos) == 1 && pos[0] == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return failed(stderr, fs, fmt.Errorf("reading standard input: %w", err))
		}
		req.Content = string(b)
	} else {
		req.Content = strings.Join(pos, " ")
	}
	req.Tags, req.LinkedFiles = splitComma(*tags), splitComma(*files)
	req.Importance, req.Confidence = *importance, *confidence
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	var res memapi.SaveResult
	raw, err := call(ctx, c, "POST", "/v1/memories", nil, req, &res)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	verb := "saved"
	if res.Upserted {
		verb = "updated (same topic key)"
	}
	fmt.Fprintf(stdout, "%s %s\n", verb, res.ID)
	return exitOK
}

func runGet(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("get", "[flags] ID", "Shows one memory.", stdout, stderr)
	cf := addClientFlags(fs)
	incl := fs.Bool("include-deleted", false, "show a soft-deleted memory too")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, fs, "want exactly one ID, got %d arguments", len(pos))
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	q := url.Values{}
	if *incl {
		q.Set("include_deleted", "true")
	}
	var m memapi.Memory
	raw, err := call(ctx, c, "GET", "/v1/memories/"+url.PathEscape(pos[0]), q, nil, &m)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	printMemory(stdout, m)
	return exitOK
}

func runSearch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("search", "[flags] QUERY…", "Ranked full-text search; the query is the arguments joined by spaces\n(no query lists the newest memories matching the filters).", stdout, stderr)
	cf := addClientFlags(fs)
	ff := addFilterFlags(fs)
	limit := fs.Int("limit", 0, "at most `N` results (node default 10, max 100)")
	incl := fs.Bool("include-deleted", false, "include soft-deleted memories")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	q := ff.values()
	if s := strings.Join(pos, " "); s != "" {
		q.Set("q", s)
	}
	setCount(q, "limit", *limit)
	if *incl {
		q.Set("include_deleted", "true")
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	var res memapi.SearchResult
	raw, err := call(ctx, c, "GET", "/v1/search", q, nil, &res)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	printSearch(stdout, res)
	return exitOK
}

func runTimeline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("timeline", "[flags] ID", "Shows the memories saved around one memory, oldest first; > marks it.", stdout, stderr)
	cf := addClientFlags(fs)
	ff := addFilterFlags(fs)
	before := fs.Int("before", 0, "`N` memories before (node default 5, max 50)")
	after := fs.Int("after", 0, "`N` memories after (node default 5, max 50)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, fs, "want exactly one ID, got %d arguments", len(pos))
	}
	q := ff.values()
	q.Set("id", pos[0])
	setCount(q, "before", *before)
	setCount(q, "after", *after)
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	var tl memapi.Timeline
	raw, err := call(ctx, c, "GET", "/v1/timeline", q, nil, &tl)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	printTimeline(stdout, tl)
	return exitOK
}

func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if isBundle(args) { // capsule_cmds.go: mnemo context --bundle
		return runContextBundle(ctx, args, stdout, stderr)
	}
	fs := newFlagSet("context", "[flags]", "Prints recent memories formatted for a prompt (a summary line goes to stderr).", stdout, stderr)
	cf := addClientFlags(fs)
	ff := addFilterFlags(fs)
	maxTokens := fs.Int("max-tokens", 0, "token budget `N` (node default 2000)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	q := ff.values()
	setCount(q, "max_tokens", *maxTokens)
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	var res memapi.ContextResult
	raw, err := call(ctx, c, "GET", "/v1/context", q, nil, &res)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	fmt.Fprint(stdout, res.Text)
	if res.Text != "" && !strings.HasSuffix(res.Text, "\n") {
		fmt.Fprintln(stdout)
	}
	trunc := ""
	if res.Truncated {
		trunc = ", truncated"
	}
	fmt.Fprintf(stderr, "(%d memories, %d sessions, ~%d of %d tokens%s)\n",
		len(res.Memories), len(res.Sessions), res.TokensUsed, res.MaxTokens, trunc)
	return exitOK
}

func runCompact(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("compact", "[flags]",
		"Identify: --older-than-days N lists stale memories.\nExecute: --ids a,b,c soft-deletes them, writing one compaction_summary memory\nfrom --summary-title/--summary-content if given; all or nothing.", stdout, stderr)
	cf := addClientFlags(fs)
	var req memapi.CompactRequest
	fs.IntVar(&req.OlderThanDays, "older-than-days", 0, "identify memories older than `N` days")
	fs.IntVar(&req.Limit, "limit", 0, "identify at most `N` (node default 50, max 200)")
	fs.StringVar(&req.Namespace, "namespace", "", "namespace `NS`")
	fs.StringVar(&req.Project, "project", "", "`PROJECT`")
	fs.StringVar(&req.Scope, "scope", "", "`SCOPE`")
	ids := fs.String("ids", "", "comma-separated memory `IDS` to compact")
	fs.StringVar(&req.SummaryTitle, "summary-title", "", "`TITLE` of the summary memory")
	fs.StringVar(&req.SummaryContent, "summary-content", "", "`CONTENT` of the summary memory")
	fs.StringVar(&req.SessionID, "session", "", "session `ID`")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	req.CompactIDs = splitComma(*ids)
	if len(req.CompactIDs) == 0 && req.OlderThanDays == 0 {
		return usageError(stderr, fs, "give --older-than-days N (identify) or --ids a,b,c (execute)")
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	var res memapi.CompactResult
	raw, err := call(ctx, c, "POST", "/v1/compact", nil, req, &res)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	printCompact(stdout, res)
	return exitOK
}
