package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
)

// The admin verbs of namespaces, grants, tokens and sharing. Each is one
// API request; --json prints the API's answer.

func accessCommands() map[string]command {
	return map[string]command{
		"ns":      {runNS, "list or create namespaces"},
		"grant":   {runGrant, "grant permissions on a namespace"},
		"revoke":  {runRevoke, "revoke permissions on a namespace"},
		"acl":     {runACL, "effective permissions on a namespace"},
		"token":   {runToken, "issue a token bound to a principal"},
		"share":   {runShare, "copy a memory into a namespace"},
		"promote": {runPromote, "copy or move a memory into a team or project"},
		"retract": {runRetract, "remove a memory for good"},
	}
}

const accessUsage = `Namespaces, grants and sharing (talk to a running node):
  ns         list namespaces           mnemo ns ls
             or create one             mnemo ns create team://backend
  grant      grant permissions         mnemo grant team://backend agent://bob read,write
  revoke     revoke permissions        mnemo revoke team://backend agent://bob write
  acl        who holds what            mnemo acl team://backend
  token      principal-bound token     mnemo token issue --principal agent://bob
  share      copy into a namespace     mnemo share ID team://backend
  promote    copy or move to a team    mnemo promote ID team://backend [--move]
  retract    remove for good           mnemo retract ID
`

// simple runs a command whose flags are the client flags plus extra, with
// exactly nargs positional arguments.
func simple(name, synopsis, about string, nargs int, args []string, stdout, stderr io.Writer,
	extra func(fs *flag.FlagSet), do func(cf *clientFlags, pos []string) ([]byte, error), show func(raw []byte)) int {
	fs := newFlagSet(name, synopsis, about, stdout, stderr)
	cf := addClientFlags(fs)
	if extra != nil {
		extra(fs)
	}
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != nargs {
		return usageError(stderr, fs, "want %d argument(s) (%s), got %d", nargs, synopsis, len(pos))
	}
	raw, err := do(cf, pos)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	show(raw)
	return exitOK
}

// request connects and sends one request.
func (cf *clientFlags) request(ctx context.Context, method, path string, q url.Values, in, out any) ([]byte, error) {
	c, err := cf.connect()
	if err != nil {
		return nil, err
	}
	return call(ctx, c, method, path, q, in, out)
}

func runNS(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "create" {
		var info memapi.NamespaceInfo
		return simple("ns create", "NAMESPACE", "Creates a team:// or project:// namespace; you become its creator, holding every\npermission. An existing namespace is an error.", 1, args[1:], stdout, stderr, nil,
			func(cf *clientFlags, pos []string) ([]byte, error) {
				return cf.request(ctx, "POST", "/v1/namespaces", nil, map[string]string{"namespace": pos[0]}, &info)
			}, func([]byte) {
				fmt.Fprintf(stdout, "created %s (admin: %s)\n", info.Namespace, info.Root)
			})
	}
	if len(args) > 0 && (args[0] == "ls" || args[0] == "list") {
		args = args[1:]
	} else if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "mnemo ns: unknown subcommand %q (want ls or create)\n", args[0])
		return exitUsage
	}
	var out struct {
		Namespaces []memapi.NamespaceInfo `json:"namespaces"`
	}
	return simple("ns", "ls | create NAMESPACE", "Lists the namespaces this node holds on which you hold any permission\n(\"mnemo ns create NAMESPACE\" creates one).", 0, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			return cf.request(ctx, "GET", "/v1/namespaces", nil, nil, &out)
		}, func([]byte) {
			w := table(stdout)
			fmt.Fprintln(w, "NAMESPACE\tKIND\tROOT\tYOUR PERMISSIONS")
			for _, n := range out.Namespaces {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n.Namespace, n.Kind, orDash(n.Root), strings.Join(n.Permissions, ","))
			}
			w.Flush()
		})
}

func runGrant(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return grantCmd(ctx, "grant", "POST", "Grants permissions (read, write, share, admin; member = read,write; all) on a\nroot namespace to a principal. You need admin on it.", args, stdout, stderr)
}

func runRevoke(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return grantCmd(ctx, "revoke", "DELETE", "Revokes permissions on a root namespace from a principal. A revocation wins over\nevery grant made without knowing it. You need admin on the namespace.", args, stdout, stderr)
}

func grantCmd(ctx context.Context, name, method, about string, args []string, stdout, stderr io.Writer) int {
	var res memapi.GrantResult
	return simple(name, "NAMESPACE PRINCIPAL PERMS", about, 3, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			req := memapi.GrantRequest{Namespace: pos[0], Principal: pos[1], Permissions: splitComma(pos[2])}
			return cf.request(ctx, method, "/v1/grants", nil, req, &res)
		}, func([]byte) {
			now := strings.Join(res.Permissions, ",")
			if now == "" {
				now = "nothing"
			}
			fmt.Fprintf(stdout, "%s %s (record %s); %s now holds %s on %s\n", res.Record.Kind, strings.Join(res.Record.Permissions, ","),
				cell(res.Record.ID, 12), res.Record.Principal, now, res.Record.Namespace)
		})
}

func runACL(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var v memapi.ACLView
	return simple("acl", "NAMESPACE", "Lists the effective permissions on a namespace (its root's), with who signed\neach grant. Admins also see records that do not count, and why.", 1, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			return cf.request(ctx, "GET", "/v1/grants", url.Values{"namespace": {pos[0]}}, nil, &v)
		}, func([]byte) {
			fmt.Fprintf(stdout, "%s: %s\n", v.Namespace, v.Defaults)
			w := table(stdout)
			fmt.Fprintln(w, "PRINCIPAL\tPERMISSION\tSOURCE\tSIGNED BY\tRECORD\tAT")
			for _, e := range v.Entries {
				at := "-"
				if e.At != nil {
					at = when(*e.At)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Principal, e.Permission, e.Source, e.Signer, orDash(cell(e.RecordID, 12)), at)
			}
			w.Flush()
			for _, r := range v.Rejected {
				fmt.Fprintf(stdout, "not counted: %s %s: %s\n", r.Record.Kind, cell(r.Record.ID, 12), r.Reason)
			}
		})
}

func runToken(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "issue" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			args = []string{"-h"}
		} else {
			fmt.Fprintln(stderr, "usage: mnemo token issue --principal agent://NAME")
			return exitUsage
		}
	} else {
		args = args[1:]
	}
	var principal string
	var out struct {
		Principal string `json:"principal"`
		Token     string `json:"token"`
	}
	return simple("token issue", "--principal agent://NAME", "Asks the node for a new token bound to a principal and prints it (once: the node\nkeeps only its hash). Requests with it act only as that principal. Needs the\nowner token (the data directory's).", 0, args, stdout, stderr,
		func(fs *flag.FlagSet) {
			fs.StringVar(&principal, "principal", "", "the `PRINCIPAL` the token acts as (agent://NAME)")
		},
		func(cf *clientFlags, pos []string) ([]byte, error) {
			if principal == "" {
				return nil, fmt.Errorf("--principal is required")
			}
			return cf.request(ctx, "POST", "/v1/tokens", nil, map[string]string{"principal": principal}, &out)
		}, func([]byte) {
			fmt.Fprintln(stdout, out.Token)
		})
}

func runShare(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var res memapi.ShareResult
	return simple("share", "ID NAMESPACE", "Copies a memory into a namespace (a one-time snapshot whose lineage is the\noriginal). Needs read and share on the memory's namespace and write on the target.", 2, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			return cf.request(ctx, "POST", "/v1/share", nil, memapi.ShareRequest{ID: pos[0], Namespace: pos[1]}, &res)
		}, func([]byte) { printCopy(stdout, "shared", res) })
}

func runPromote(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var res memapi.ShareResult
	var move bool
	return simple("promote", "ID NAMESPACE", "Copies a memory into a team:// or project:// namespace; with --move the original\nis deleted and a reference to the promoted memory takes its place.", 2, args, stdout, stderr,
		func(fs *flag.FlagSet) { fs.BoolVar(&move, "move", false, "move instead of copy") },
		func(cf *clientFlags, pos []string) ([]byte, error) {
			mode := memapi.PromoteCopy
			if move {
				mode = memapi.PromoteMove
			}
			return cf.request(ctx, "POST", "/v1/promote", nil, memapi.PromoteRequest{ID: pos[0], Namespace: pos[1], Mode: mode}, &res)
		}, func([]byte) { printCopy(stdout, "promoted", res) })
}

func printCopy(w io.Writer, verb string, res memapi.ShareResult) {
	state := ""
	if res.Existing {
		state = " (already there)"
	}
	fmt.Fprintf(w, "%s %s as %s in %s%s\n", verb, res.Memory.Lineage, res.Memory.ID, res.Memory.Namespace, state)
	if res.Reference != nil {
		fmt.Fprintf(w, "reference %s left in %s\n", res.Reference.ID, res.Reference.Namespace)
	}
}

func runRetract(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var id string
	return simple("retract", "ID", "Removes a memory for good, from any namespace you may write: final on every node.", 1, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			id = pos[0]
			return cf.request(ctx, "POST", "/v1/retract", nil, map[string]string{"id": id}, nil)
		}, func([]byte) { fmt.Fprintf(stdout, "retracted %s\n", id) })
}
