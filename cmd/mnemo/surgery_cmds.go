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

// The memory-surgery verbs: propose an edit, approve or reject one, read
// the audit log. Each is one API request; --json prints the API's answer.

func surgeryCommands() map[string]command {
	return map[string]command{
		"edit":    {runEdit, "propose an edit of a memory (retract, amend, quarantine, attenuate, block)"},
		"approve": {runApprove, "approve a pending edit (admin)"},
		"reject":  {runReject, "reject a pending edit (admin)"},
		"audit":   {runAudit, "the edit history of a memory, or of everything readable"},
	}
}

const surgeryUsage = `Memory surgery (talk to a running node):
  edit       propose an edit           mnemo edit ID --op amend --reason R --text T
                                       ops: retract, amend, quarantine, attenuate, block
  approve    approve a pending edit    mnemo approve EDIT_ID
  reject     reject a pending edit     mnemo reject EDIT_ID
  audit      edit history              mnemo audit [ID] [--status pending]
`

// floatFlag is a float flag that knows whether it was given (nil: not given).
type floatFlag struct{ v *float64 }

func (o *floatFlag) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatFloat(*o.v, 'g', -1, 64)
}

func (o *floatFlag) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	o.v = &f
	return nil
}

func runEdit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var req memapi.EditRequest
	var text string
	var imp, delta floatFlag
	var res memapi.EditResult
	return simple("edit", "ID --op OP --reason R [--text T] [--importance X] [--importance-delta D] [--channel C]",
		"Proposes an edit of a memory. retract: gone from every query and purged on every node;\n"+
			"amend: new text and/or importance; quarantine: hidden from context and default search;\n"+
			"attenuate: importance by --importance-delta or to --importance; block: hidden from queries\n"+
			"for --channel. A reason is required. Edits the namespace's approvals settings name stay\n"+
			"pending until an admin approves them.", 1, args, stdout, stderr,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Op, "op", "", "`OP`: retract, amend, quarantine, attenuate or block")
			fs.StringVar(&req.Reason, "reason", "", "why (`REASON`), recorded in the audit log; required")
			fs.StringVar(&text, "text", "", "amend: the new `TEXT`")
			fs.Var(&imp, "importance", "amend, attenuate: the new importance `X` (0..1)")
			fs.Var(&delta, "importance-delta", "attenuate: add `D` (-1..1) to the importance")
			fs.StringVar(&req.Patch.Channel, "channel", "", "block: the `CHANNEL` (private, public, team, agent)")
		},
		func(cf *clientFlags, pos []string) ([]byte, error) {
			req.TargetID = pos[0]
			if text != "" {
				req.Patch.Text = &text
			}
			req.Patch.Importance, req.Patch.ImportanceDelta = imp.v, delta.v
			return cf.request(ctx, "POST", "/v1/edits", nil, req, &res)
		}, func([]byte) { fmt.Fprintf(stdout, "edit %s %s\n", res.EditID, res.Status) })
}

func runApprove(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runDecide(ctx, "approve", args, stdout, stderr)
}

func runReject(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runDecide(ctx, "reject", args, stdout, stderr)
}

func runDecide(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
	var e memapi.Edit
	return simple(verb, "EDIT_ID", "Decides a pending edit ("+verb+"s it). Needs admin on the memory's namespace.", 1, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			return cf.request(ctx, "POST", "/v1/edits/"+url.PathEscape(pos[0])+"/"+verb, nil, nil, &e)
		}, func([]byte) { printEdits(stdout, []memapi.Edit{e}) })
}

func runAudit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit", "[ID] [--status pending|approved|rejected] [--namespace NS]",
		"Lists edits, oldest first: those of memory ID, or of everything you can read; then the\nderived memories (summaries, copies) whose sources were retracted and need re-summary.", stdout, stderr)
	cf := addClientFlags(fs)
	status := fs.String("status", "", "only edits with `STATUS`: pending, approved, rejected")
	ns := fs.String("namespace", "", "only namespace `NS` (and below)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) > 1 {
		return usageError(stderr, fs, "want at most one memory ID, got %d arguments", len(pos))
	}
	q := url.Values{}
	if len(pos) == 1 {
		q.Set("id", pos[0])
	}
	if *status != "" {
		q.Set("status", *status)
	}
	if *ns != "" {
		q.Set("namespace", *ns)
	}
	var res memapi.AuditResult
	raw, err := cf.request(ctx, "GET", "/v1/audit", q, nil, &res)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	if len(res.Edits) == 0 {
		fmt.Fprintln(stdout, "no edits")
	}
	printEdits(stdout, res.Edits)
	if len(res.NeedsResummary) > 0 {
		fmt.Fprintln(stdout, "\nneeds re-summary (a source was retracted):")
		for _, r := range res.NeedsResummary {
			fmt.Fprintf(stdout, "  %s  %s  %s %q  retracted: %s\n", r.ID, r.Namespace, r.Type, r.Title, strings.Join(r.Retracted, ","))
		}
	}
	return exitOK
}

func printEdits(w io.Writer, edits []memapi.Edit) {
	for _, e := range edits {
		fmt.Fprintf(w, "%s  %s  %-10s %-8s %s on %s in %s by %s", e.EditID, e.CreatedAt.Format("2006-01-02 15:04:05"), e.Op, e.Status, patchString(e.Patch), e.TargetID, e.Namespace, e.Proposer)
		if e.Approver != "" {
			fmt.Fprintf(w, ", %s by %s", e.Status, e.Approver)
		}
		fmt.Fprintf(w, "\n    reason: %s\n", e.Reason)
	}
}

func patchString(p memapi.EditPatch) string {
	var parts []string
	if p.Text != nil {
		parts = append(parts, fmt.Sprintf("text=%q", truncate(*p.Text, 40)))
	}
	if p.Importance != nil {
		parts = append(parts, "importance="+strconv.FormatFloat(*p.Importance, 'g', -1, 64))
	}
	if p.ImportanceDelta != nil {
		parts = append(parts, "delta="+strconv.FormatFloat(*p.ImportanceDelta, 'g', -1, 64))
	}
	if p.Channel != "" {
		parts = append(parts, "channel="+p.Channel)
	}
	if len(parts) == 0 {
		return "-"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
