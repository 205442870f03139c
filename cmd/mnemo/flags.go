package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/client"
)

// newFlagSet makes a subcommand's FlagSet whose -h prints synopsis, what it
// does, and the flags, to stdout (help is an answer, not an error).
func newFlagSet(name, synopsis, about string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mnemo "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: mnemo %s %s\n\n%s\n\nFlags (before or after the arguments):\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags wherever they appear among the arguments and
// returns the positional ones. "--" ends the flags. code is -1 to go on,
// otherwise the exit code (0 for -h, which prints usage to stdout).
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) (pos []string, code int) {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, exitOK
		}
		if a == "--" {
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK
			}
			return nil, exitUsage // flag already printed the error and usage
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), -1
		}
		if len(rest) == 0 {
			return pos, -1
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func usageError(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fmt.Fprintf(stderr, "run \"%s -h\" for usage\n", fs.Name())
	return exitUsage
}

func failed(stderr io.Writer, fs *flag.FlagSet, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	return exitError
}

// optFloat is a float flag that remembers whether it was given.
func optFloat(fs *flag.FlagSet, name, help string) **float64 {
	p := new(*float64)
	fs.Func(name, help, func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", s)
		}
		*p = &v
		return nil
	})
	return p
}

// clientFlags are the flags of every command that talks to a node.
type clientFlags struct {
	node    string
	data    string
	json    bool
	session string
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	cf := &clientFlags{}
	fs.StringVar(&cf.node, "node", "", "node `URL` (default $MNEMO_NODE, else the data directory's node.json, else http://"+node.DefaultHTTPAddr+")")
	fs.StringVar(&cf.data, "data", "", "data `DIR` holding the token (default $MNEMO_DATA or ~/.mnemo; $MNEMO_TOKEN overrides the file)")
	fs.BoolVar(&cf.json, "json", false, "print the API's JSON")
	fs.StringVar(&cf.session, "session-key", "", "session `KEY` sent as X-Mnemo-Session: with the owner token, the node's principal rules map it to the principal to act as (default $MNEMO_SESSION)")
	return cf
}

// connect resolves the node URL and token.
func (cf *clientFlags) connect() (*client.Client, error) {
	dir := cf.data
	if dir == "" {
		d, err := node.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	base := cf.node
	if base == "" {
		base = os.Getenv("MNEMO_NODE")
	}
	if base == "" {
		if info, err := node.ReadInfo(dir); err == nil {
			base = info.HTTP
		}
	}
	if base == "" {
		base = "http://" + node.DefaultHTTPAddr
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	tok := os.Getenv("MNEMO_TOKEN")
	if tok == "" {
		t, err := node.ReadToken(dir)
		if err != nil {
			return nil, fmt.Errorf("%w\n(start \"mnemo node --data %s\" once to create it, pass --data, or set MNEMO_TOKEN)", err, dir)
		}
		tok = t
	}
	cl, err := client.New(base, tok)
	if err != nil {
		return nil, err
	}
	if cf.session == "" {
		cf.session = os.Getenv("MNEMO_SESSION")
	}
	if cf.session != "" {
		cl = cl.WithSession(cf.session)
	}
	return cl, nil
}

// call sends one request. It returns the raw answer (for --json) and, when
// out is non-nil, decodes it there.
func call(ctx context.Context, c *client.Client, method, path string, q url.Values, in any, out any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	raw, err := c.Raw(ctx, method, path, q, body)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("decoding the node's answer: %w", err)
		}
	}
	return raw, nil
}

// printJSON prints an API answer indented, as the API sent it.
func printJSON(w io.Writer, raw []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, bytes.TrimSpace(raw), "", "  ") != nil {
		w.Write(raw)
		return
	}
	buf.WriteByte('\n')
	w.Write(buf.Bytes())
}

func splitComma(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
