package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/mnemohq/mnemo/sim"
)

// runSim runs the deterministic cluster simulator: one seed, or a sweep.
func runSim(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", "[flags]",
		"Runs N real nodes (memory service, features, replication loop) over an\n"+
			"in-memory store, a virtual network and clock, with a\n"+
			"workload and fault schedule drawn from one seed, then checks convergence and\n"+
			"the invariants. A failing run prints the command that replays it.\n"+
			"Exit status 1 if any invariant is violated.", stdout, stderr)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(sim.GCPercent) // a batch job: trade memory for wall time (sim.GCPercent)
	}
	var cfg sim.Config
	fs.IntVar(&cfg.Nodes, "nodes", 5, "cluster size")
	fs.IntVar(&cfg.Ops, "ops", 200, "workload operations")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed driving every random choice")
	fs.Float64Var(&cfg.Loss, "loss", 0, "message loss probability")
	fs.Float64Var(&cfg.Dup, "dup", 0, "message duplication probability")
	fs.Float64Var(&cfg.Reorder, "reorder", 0, "probability of an extra delay that reorders a message")
	fs.IntVar(&cfg.Partitions, "partitions", 0, "partition/heal pairs")
	fs.IntVar(&cfg.Crashes, "crashes", 0, "crash/restart pairs")
	fs.IntVar(&cfg.Stalls, "stalls", 0, "stalled-subscriber episodes")
	fs.IntVar(&cfg.Churn, "churn", 0, "leave/rejoin pairs")
	fs.IntVar(&cfg.Joins, "joins", 0, "nodes that join during the run")
	fs.IntVar(&cfg.SkewedNodes, "skewed-nodes", 0, "nodes whose wall clock is off by up to --skew")
	fs.DurationVar(&cfg.Skew, "skew", 0, "largest clock offset of a skewed node, either way")
	fs.DurationVar(&cfg.MaxSkew, "max-skew", 5*time.Second, "forward skew the nodes tolerate on incoming deltas")
	fs.BoolVar(&cfg.NoSetRemoves, "no-set-removes", false, "no tag removes in the workload (tags are only added)")
	scenario := fs.String("scenario", "", "scenario `FILE` (fixed topology and fault script)")
	asJSON := fs.Bool("json", false, "print one JSON object (a sweep: one per line, then a summary)")
	sweep := fs.Int("sweep", 0, "run `SEEDS` seeds from --seed on and summarise")
	plot := fs.String("plot", "", "write an SVG of each tracked update's spread to `FILE`")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, fs, "unexpected argument %q", pos[0])
	}
	if *scenario != "" {
		sc, err := sim.LoadScenario(*scenario)
		if err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
			return exitUsage
		}
		cfg.Scenario = sc
	}
	if *sweep <= 0 {
		r, err := sim.Run(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
			return exitUsage
		}
		if *plot != "" {
			if err := writePlot(*plot, r); err != nil {
				fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
				return exitError
			}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			if err := enc.Encode(r); err != nil {
				return exitError
			}
		} else {
			r.WriteText(stdout)
		}
		if !r.Converged {
			return exitError
		}
		return exitOK
	}
	start := time.Now()
	ok, worst := 0, int64(0)
	var failed []*sim.Report
	first := cfg.Seed
	for i := range *sweep {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "mnemo sim: interrupted")
			return exitError
		}
		c := cfg
		c.Seed = first + uint64(i)
		r, err := sim.Run(c)
		if err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
			return exitUsage
		}
		if r.Converged {
			ok++
			worst = max(worst, r.VirtualMS)
		} else {
			failed = append(failed, r)
		}
		if *asJSON {
			_ = json.NewEncoder(stdout).Encode(r)
		}
	}
	if *asJSON {
		sum := map[string]any{"seeds": *sweep, "converged": ok, "failed": len(failed), "worst_virtual_ms": worst, "wall_ms": time.Since(start).Milliseconds()}
		var replays []string
		for _, r := range failed {
			replays = append(replays, r.Replay)
		}
		sum["replays"] = replays
		_ = json.NewEncoder(stdout).Encode(sum)
	} else {
		fmt.Fprintf(stdout, "%d/%d seeds converged; worst virtual time to converge %d ms; wall %v\n",
			ok, *sweep, worst, time.Since(start).Round(time.Millisecond))
		for _, r := range failed {
			fmt.Fprintf(stdout, "seed %d FAILED: %s\n  replay: %s\n", r.Seed, r.FirstViolation(), r.Replay)
		}
	}
	if len(failed) > 0 {
		return exitError
	}
	return exitOK
}

func writePlot(path string, r *sim.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
