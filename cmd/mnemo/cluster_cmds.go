package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mnemohq/mnemo/node/cluster"
)

func runMembers(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("members", "[flags]", "Lists the cluster's members as gossip sees them.", stdout, stderr)
	cf := addClientFlags(fs)
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
	var out struct {
		Members []cluster.Member `json:"members"`
	}
	raw, err := call(ctx, c, "GET", "/v1/members", nil, nil, &out)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tADDR\tAGENTS\tKEY")
	for _, m := range out.Members {
		id := m.NodeID
		if m.Self {
			id += " (self)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, m.State, m.Addr, strings.Join(m.Agents, ","), orNone(m.Key))
	}
	tw.Flush()
	return exitOK
}

func runStatus(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("status", "[flags]", "Shows replication per peer: queue depth and bytes, deltas sent and\nreceived, rejections, fallbacks to state sync, last sync.", stdout, stderr)
	cf := addClientFlags(fs)
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
	var st cluster.Status
	raw, err := call(ctx, c, "GET", "/v1/status", nil, nil, &st)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	fmt.Fprintf(stdout, "node %s  quic %s  gossip %s\napplied %d  rejected %d  dropped frames %d  local overflows %d\n",
		orNone(st.NodeID), orNone(st.QUIC), orNone(st.Gossip), st.Applied, st.Rejected, st.DroppedFrames, st.LocalOverflow)
	if len(st.Peers) == 0 {
		fmt.Fprintln(stdout, "no peers")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tQUEUE\tBYTES\tSENT\tRECEIVED\tREJECTED\tFALLBACKS\tLAST SYNC")
	for _, p := range st.Peers {
		last := "-"
		if !p.LastSync.IsZero() {
			last = p.LastSync.Format("15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Peer, p.QueueDeltas, p.QueueBytes, p.DeltasSent, p.DeltasRecv, p.Rejected, p.Fallbacks, last)
	}
	tw.Flush()
	return exitOK
}

func runSync(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("sync", "[--peer NODE] [flags]", "Asks a peer (default: every peer) for a digest sync of the shared\nnamespaces now: catch-up without waiting for anti-entropy.", stdout, stderr)
	cf := addClientFlags(fs)
	peer := fs.String("peer", "", "node id of the peer (see mnemo members)")
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
	raw, err := call(ctx, c, "POST", "/v1/sync", nil, map[string]string{"peer": *peer}, nil)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	fmt.Fprintln(stdout, "sync requested")
	return exitOK
}

func runHandover(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("handover", "PRINCIPAL --to KEY [flags]", "Hands an agent this node hosts over to another node for good: signs the\nhand-over with this node's key and sends it to every peer. KEY is the new\nhost's key as `mnemo members` shows it. Stop acting for the agent here\nafterwards (its tokens): records this node signs for it no longer count.", stdout, stderr)
	cf := addClientFlags(fs)
	to := fs.String("to", "", "the new host's key (see mnemo members)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 || *to == "" {
		return usageError(stderr, fs, "needs one PRINCIPAL and --to KEY")
	}
	c, err := cf.connect()
	if err != nil {
		return failed(stderr, fs, err)
	}
	raw, err := call(ctx, c, "POST", "/v1/handover", nil, map[string]string{"principal": pos[0], "to": *to}, nil)
	if err != nil {
		return failed(stderr, fs, err)
	}
	if cf.json {
		printJSON(stdout, raw)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s handed over to the node with key %s\n", pos[0], *to)
	return exitOK
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
