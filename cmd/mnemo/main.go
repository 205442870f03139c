// Command mnemo is the single mnemo binary: the sidecar node, the MCP
// server and the memory CLI. See usage below, or run "mnemo help".
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed: node unreachable, an API error, bad input data
	exitUsage = 2 // the command line was wrong
)

const usage = `mnemo — peer-to-peer memory for AI agents

Usage:
  mnemo <command> [flags] [arguments]

Node:
  node       run the sidecar node (HTTP API on 127.0.0.1:7070)
  mcp        serve MCP tools on stdio

Memories (talk to a running node):
  save       save a memory             mnemo save --type decision --title "Use Badger" --tags storage,db "content…"
  get        show one memory           mnemo get ID
  search     full-text search          mnemo search "badger tuning" --type decision --limit 5
  timeline   memories around one       mnemo timeline ID --before 3 --after 3
  context    prompt-ready recent ones  mnemo context --max-tokens 1500
  compact    find stale memories       mnemo compact --older-than-days 30
             or compact some           mnemo compact --ids a,b,c --summary-title T --summary-content C
  stats      counts by type and namespace
  export     everything readable, JSON mnemo export > file.json
  import     a mnemo or engram export  mnemo import file.json

Cluster (talk to a running node):
  members    cluster members as gossip sees them
  status     replication per peer: queues, deltas, fallbacks
  sync       digest sync now           mnemo sync --peer NODE
  cluster-key  a new key for --cluster-key  mnemo cluster-key cluster.key

` + accessUsage + `
` + capsuleUsage + `
` + surgeryUsage + `
` + projectionUsage + `
Other:
  sim        simulate a cluster under faults  mnemo sim --nodes 20 --ops 2000 --seed 7 --loss 0.1
  bench      durable saves on a real node     mnemo bench saves --clients 1,8,32 --duration 10s
             recall on LoCoMo conversations   mnemo bench recall --locomo DIR
  soak       5 real nodes under writes, kill -9 and SIGSTOP, then checked
                                              mnemo soak --for 10m
  version    print the version
  help       help on a command         mnemo help search

Client flags (every memory command):
  --node URL   the node to talk to; default $MNEMO_NODE, else the node.json
               of the data directory, else http://127.0.0.1:7070
  --data DIR   the data directory holding the token; default $MNEMO_DATA or
               ~/.mnemo ($MNEMO_TOKEN, if set, is used instead of the file)
  --json       print the API's JSON instead of a table
  --session-key K
               sent as X-Mnemo-Session: with the owner token, act as the
               principal the node's rules map it to; default $MNEMO_SESSION

Flags may come before or after arguments; "--" ends the flags.
Exit status: 0 success; 1 the command failed (the node's message is on
stderr); 2 the command line was wrong.
`

type command struct {
	run  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	help string
}

func commands() map[string]command {
	cmds := map[string]command{
		"node":        {runNode, "run the sidecar node"},
		"mcp":         {runMCP, "serve MCP tools on stdio"},
		"save":        {runSave, "save a memory"},
		"get":         {runGet, "show one memory"},
		"search":      {runSearch, "full-text search"},
		"timeline":    {runTimeline, "memories around one memory"},
		"context":     {runContext, "recent memories formatted for a prompt"},
		"compact":     {runCompact, "find stale memories, or compact them"},
		"stats":       {runStats, "counts by type and namespace"},
		"export":      {runExport, "write everything readable as JSON"},
		"import":      {runImport, "read a mnemo or engram export"},
		"version":     {runVersion, "print the version"},
		"sim":         {runSim, "deterministic cluster simulator"},
		"bench":       {runBench, "measure durable saves, search at scale or LoCoMo recall on a real node"},
		"soak":        {runSoak, "run a real cluster under writes and faults, then check it"},
		"members":     {runMembers, "list cluster members"},
		"cluster-key": {runClusterKey, "write or print a new cluster key"},
		"status":      {runStatus, "replication status per peer"},
		"sync":        {runSync, "ask peers for a digest sync now"},
		"handover":    {runHandover, "hand an agent this node hosts over to another node"},
	}
	for name, c := range accessCommands() {
		cmds[name] = c
	}
	for name, c := range capsuleCommands() { // capsule_cmds.go
		cmds[name] = c
	}
	for name, c := range surgeryCommands() {
		cmds[name] = c
	}
	for name, c := range projectionCommands() {
		cmds[name] = c
	}
	return cmds
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(ctx, rest, stdin, stdout, stderr)
	case "-version", "--version":
		name = "version"
	}
	cmd, ok := commands()[name]
	if !ok {
		fmt.Fprintf(stderr, "mnemo: unknown command %q; run \"mnemo help\" for the list\n", name)
		return exitUsage
	}
	return cmd.run(ctx, rest, stdin, stdout, stderr)
}

func runHelp(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mnemo help: unknown command %q\n", args[0])
		return exitUsage
	}
	if args[0] == "version" {
		fmt.Fprintln(stdout, "Usage: mnemo version\n\nPrints the version of this binary.")
		return exitOK
	}
	// Every subcommand prints its usage to stdout and exits 0 on -h.
	return cmd.run(ctx, []string{"-h"}, stdin, stdout, stderr)
}

func runVersion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" {
		fmt.Fprintln(stderr, "usage: mnemo version")
		return exitUsage
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	fmt.Fprintf(stdout, "mnemo %s%s %s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
