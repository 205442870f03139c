package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
)

// Capsules, the context bundle (mnemo context --bundle, dispatched from
// runContext) and duplicates. Each verb is one API request.

func capsuleCommands() map[string]command {
	return map[string]command{
		"capsule":    {runCapsule, "create, list, read or revoke capsules"},
		"duplicates": {runDuplicates, "find or merge near-duplicate memories"},
	}
}

const capsuleUsage = `Capsules, context bundles and duplicates (talk to a running node):
  capsule    hand memories to agents   mnemo capsule create --subject-type user --subject-id jack --audience agent://bob --ids a,b
             list, read, revoke        mnemo capsule ls | get ID | revoke ID
  context --bundle  decisions, capsules and recent memories within a budget
                                       mnemo context --bundle --session S --project P --max-tokens 1500
  duplicates near-duplicates           mnemo duplicates [--namespace NS]
             merge in a shared ns      mnemo duplicates merge --namespace team://backend ID1 ID2
`

func runCapsule(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "create":
		return capsuleCreate(ctx, args, stdout, stderr)
	case "", "ls", "list":
		var out memapi.CapsuleList
		var st, si string
		return simple("capsule ls", "[--subject-type T --subject-id I]", "Lists the capsules available to you: shared with you (active) and created by you.", 0, args, stdout, stderr,
			func(fs *flag.FlagSet) {
				fs.StringVar(&st, "subject-type", "", "only subject type `T`")
				fs.StringVar(&si, "subject-id", "", "only subject id `I`")
			},
			func(cf *clientFlags, pos []string) ([]byte, error) {
				q := url.Values{}
				if st != "" {
					q.Set("subject_type", st)
				}
				if si != "" {
					q.Set("subject_id", si)
				}
				return cf.request(ctx, "GET", "/v1/capsules", q, nil, &out)
			}, func([]byte) {
				w := table(stdout)
				fmt.Fprintln(w, "CAPSULE\tSTATUS\tAUTHOR\tSUBJECT\tITEMS\tEXPIRES\tAUDIENCE")
				for _, c := range out.Capsules {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s:%s\t%d\t%s\t%s\n", c.ID, c.Status, c.Author, c.SubjectType, c.SubjectID, c.ItemCount, when(c.ExpiresAt), strings.Join(c.Audience, ","))
				}
				w.Flush()
			})
	case "get", "revoke":
		var c memapi.Capsule
		method, about := "GET", "Shows a capsule with its risks and items."
		if sub == "revoke" {
			method, about = "DELETE", "Revokes a capsule you created: unreadable at once for its whole audience."
		}
		return simple("capsule "+sub, "ID", about, 1, args, stdout, stderr, nil,
			func(cf *clientFlags, pos []string) ([]byte, error) {
				return cf.request(ctx, method, "/v1/capsules/"+url.PathEscape(pos[0]), nil, nil, &c)
			}, func([]byte) {
				fmt.Fprintf(stdout, "capsule %s (%s) from %s about %s:%s, expires %s\n", c.ID, c.Status, c.Author, c.SubjectType, c.SubjectID, when(c.ExpiresAt))
				fmt.Fprintf(stdout, "audience: %s\n", strings.Join(c.Audience, ", "))
				for _, r := range c.Risks {
					fmt.Fprintf(stdout, "risk: %s\n", r)
				}
				for _, m := range c.Items {
					fmt.Fprintf(stdout, "- [%s] %s (%s): %s\n", m.Type, m.Title, m.ID, cell(strings.Join(strings.Fields(m.Content), " "), 200))
				}
			})
	}
	fmt.Fprintf(stderr, "mnemo capsule: unknown subcommand %q (want create, ls, get or revoke)\n", sub)
	return exitUsage
}

func capsuleCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var req memapi.CapsuleRequest
	var audience, ids, risks, query string
	var limit int
	var res memapi.CapsuleCreated
	return simple("capsule create", "--subject-type T --subject-id I --audience A[,B] (--ids a,b | --query Q)",
		"Creates a capsule: a copy of the chosen memories, with risks and an expiry, readable\nonly by the audience (and you). Needs share on every memory's namespace.", 0, args, stdout, stderr,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.SubjectType, "subject-type", "", "subject type `T` (required)")
			fs.StringVar(&req.SubjectID, "subject-id", "", "subject id `I` (required)")
			fs.StringVar(&req.Project, "project", "", "`PROJECT`")
			fs.StringVar(&audience, "audience", "", "comma-separated agent `PRINCIPALS` (required)")
			fs.StringVar(&ids, "ids", "", "comma-separated memory `IDS`")
			fs.StringVar(&query, "query", "", "search text `Q` choosing the memories")
			fs.IntVar(&limit, "limit", 0, "with --query: at most `N` memories (default 10)")
			fs.IntVar(&req.TTLDays, "ttl-days", 0, "expiry in `DAYS` (default 7, max 90)")
			fs.StringVar(&risks, "risks", "", "risks, separated by `;`")
		},
		func(cf *clientFlags, pos []string) ([]byte, error) {
			req.Audience, req.IDs = splitComma(audience), splitComma(ids)
			if query != "" {
				req.Query = &memapi.SearchQuery{Query: query, Limit: limit}
			}
			for _, r := range strings.Split(risks, ";") {
				if r = strings.TrimSpace(r); r != "" {
					req.Risks = append(req.Risks, r)
				}
			}
			return cf.request(ctx, "POST", "/v1/capsules", nil, req, &res)
		}, func([]byte) {
			fmt.Fprintf(stdout, "created capsule %s (%d items) for %s, expires %s\n", res.CapsuleID, res.ItemCount, strings.Join(res.Audience, ", "), when(res.ExpiresAt))
		})
}

// isBundle reports whether a context command line asks for the bundle.
func isBundle(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--bundle" || a == "-bundle" || a == "--bundle=true" || a == "-bundle=true"
	})
}

func runContextBundle(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var req memapi.BundleRequest
	var noCapsules bool
	var res memapi.BundleResult
	fs := newFlagSet("context --bundle", "[flags]", "Prints the context bundle: decisions in force by precedence, capsules shared with\nyou and recent memories (session first), within --max-tokens; the budget split goes to stderr.", stdout, stderr)
	cf := addClientFlags(fs)
	fs.Bool("bundle", true, "build the context bundle")
	fs.StringVar(&req.SessionID, "session", "", "session `ID`")
	fs.StringVar(&req.Channel, "channel", "", "`CHANNEL` (private, public, team, agent)")
	fs.StringVar(&req.SubjectType, "subject-type", "", "subject type `T`")
	fs.StringVar(&req.SubjectID, "subject-id", "", "subject id `I`")
	fs.StringVar(&req.Project, "project", "", "`PROJECT`")
	fs.StringVar(&req.Namespace, "namespace", "", "namespace `NS` (default: everything readable)")
	fs.IntVar(&req.MaxTokens, "max-tokens", 0, "token budget `N` (node default 2000)")
	fs.BoolVar(&noCapsules, "no-capsules", false, "leave capsules out")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	if noCapsules {
		f := false
		req.IncludeCapsules = &f
	}
	raw, err := cf.request(ctx, "POST", "/v1/context/bundle", nil, req, &res)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	fmt.Fprint(stdout, res.Text)
	b := res.Budget
	trunc := ""
	if res.Truncated {
		trunc = ", truncated"
	}
	fmt.Fprintf(stderr, "(%d decisions, %d capsules, %d recent; tokens: decisions %d, capsules %d, recent %d, total %d of %d%s)\n",
		len(res.Decisions), len(res.Capsules), len(res.Recent), b.Decisions, b.Capsules, b.Recent, b.Total, b.MaxTokens, trunc)
	return exitOK
}

func runDuplicates(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "merge" {
		var ns string
		var res memapi.MergeResult
		fs := newFlagSet("duplicates merge", "--namespace NS ID ID...", "Merges duplicates within a shared namespace you can write: the first id in it\nsurvives with every contributor's provenance; the others there are archived.", stdout, stderr)
		cf := addClientFlags(fs)
		fs.StringVar(&ns, "namespace", "", "the shared namespace `NS` (required)")
		pos, code := parseArgs(fs, args[1:], stdout)
		if code >= 0 {
			return code
		}
		if len(pos) < 2 {
			return usageError(stderr, fs, "want at least two ids, got %d", len(pos))
		}
		raw, err := cf.request(ctx, "POST", "/v1/duplicates/merge", nil, memapi.MergeRequest{IDs: pos, Namespace: ns}, &res)
		if err != nil {
			return failed(stderr, fs, err)
		}
		if cf.json {
			printJSON(stdout, raw)
			return exitOK
		}
		fmt.Fprintf(stdout, "merged into %s (archived: %s; contributors: %s); independent=%v, confidence %.2f -> %.2f\n", res.Memory.ID,
			orDash(strings.Join(res.Merged, ",")), orDash(strings.Join(res.Contributors, ",")), res.Independent, res.ConfidenceBefore, res.ConfidenceAfter)
		return exitOK
	}
	var ns string
	var threshold float64
	var out memapi.DuplicatesResult
	return simple("duplicates", "[--namespace NS] [--threshold X] | merge --namespace NS ID ID...", "Lists near-duplicate memories across the namespaces you can read (MinHash,\nand embeddings when the node is configured for them).", 0, args, stdout, stderr,
		func(fs *flag.FlagSet) {
			fs.StringVar(&ns, "namespace", "", "only pairs with a side in `NS`")
			fs.Float64Var(&threshold, "threshold", 0, "similarity threshold `X` (node default 0.8)")
		},
		func(cf *clientFlags, pos []string) ([]byte, error) {
			q := url.Values{}
			if ns != "" {
				q.Set("namespace", ns)
			}
			if threshold != 0 {
				q.Set("threshold", strconv.FormatFloat(threshold, 'g', -1, 64))
			}
			return cf.request(ctx, "GET", "/v1/duplicates", q, nil, &out)
		}, func([]byte) {
			w := table(stdout)
			fmt.Fprintln(w, "SIMILARITY\tMETHOD\tA\tB\tINDEPENDENT")
			for _, p := range out.Pairs {
				fmt.Fprintf(w, "%.3f\t%s\t%s %s\t%s %s\t%v\n", p.Similarity, p.Method, p.A.ID, p.A.Namespace, p.B.ID, p.B.Namespace, p.Independent)
			}
			w.Flush()
			if out.Warning != "" {
				fmt.Fprintln(stderr, "warning:", out.Warning)
			}
		})
}
