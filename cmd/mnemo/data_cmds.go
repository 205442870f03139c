package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mnemohq/mnemo/node/memapi"
)

func runStats(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("stats", "[flags]", "Counts memories and sessions by type and namespace.", stdout, stderr)
	cf := addClientFlags(fs)
	ns := fs.String("namespace", "", "namespace `NS` (default everything readable)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	var st memapi.Stats
	raw, err := call(ctx, c, "GET", "/v1/stats", nsQuery(*ns), nil, &st)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	printStats(stdout, st)
	return exitOK
}

func runExport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("export", "[flags] > FILE",
		"Writes every memory and session you can read as JSON (format mnemo-export)\nto standard output, or to --out.", stdout, stderr)
	cf := addClientFlags(fs) // --json is accepted; the output is JSON either way
	ns := fs.String("namespace", "", "namespace `NS` (default everything readable)")
	out := fs.String("out", "", "write to `FILE` (mode 0600) instead of standard output")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q (redirect the output or use --out)", pos)
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	raw, err := call(ctx, c, "GET", "/v1/export", nsQuery(*ns), nil, nil)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if *out == "" {
		printJSON(stdout, raw)
		return exitOK
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return failed(stderr, fs, err)
	}
	printJSON(f, raw)
	if err := f.Close(); err != nil {
		return failed(stderr, fs, err)
	}
	return exitOK
}

func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("import", "[flags] FILE | -",
		"Imports a mnemo export or an engram export (sessions, observations, prompts).\nMemories already present (same id, or same content in the same namespace) are skipped.", stdout, stderr)
	cf := addClientFlags(fs)
	ns := fs.String("namespace", "", "import into namespace `NS` (default your agent's)")
	preserve := fs.Bool("preserve-provenance", false, "keep the authors, provenance and lineage the file states (owner token only; default: you are the author of every imported memory)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, fs, "want one FILE (or - for standard input), got %d arguments", len(pos))
	}
	var data []byte
	var err error
	if pos[0] == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return failed(stderr, fs, err)
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	res, err := c.Import(ctx, data, memapi.ImportOptions{Namespace: *ns, PreserveProvenance: *preserve})
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		raw, _ := jsonBytes(res)
		printJSON(stdout, raw)
		return exitOK
	}
	fmt.Fprintf(stdout, "imported %d memories, %d sessions, %d prompts; skipped %d (format %s)\n",
		res.Memories, res.Sessions, res.Prompts, res.Skipped, res.Format)
	return exitOK
}
