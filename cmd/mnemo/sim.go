package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
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
	fs.IntVar(&cfg.Engine.BatchMaxBytes, "batch", 0, "largest batch of a sync answer, in `BYTES` (default the engine's 256 KiB; small values split answers)")
	fs.IntVar(&cfg.Engine.TreeThreshold, "tree-threshold", 0, "replica set size from which live deltas go over broadcast trees (default the engine's 8; negative: never)")
	fs.IntVar(&cfg.BindingsOnDemandAt, "bindings-on-demand", 0, "membership from which bindings travel only where they are used (default 0: never, as on a node)")
	fs.BoolVar(&cfg.NoSetRemoves, "no-set-removes", false, "no tag removes in the workload (tags are only added)")
	scenario := fs.String("scenario", "", "scenario `FILE` (fixed topology and fault script)")
	asJSON := fs.Bool("json", false, "print one JSON object (a sweep: one per line, then a summary)")
	sweep := fs.Int("sweep", 0, "run `SEEDS` seeds from --seed on and summarise")
	soak := fs.Duration("for", 0, "sweep seeds from --seed on for this long (with --sweep: at most that many)")
	mixed := fs.Bool("mixed", false, "sweep sim.Mixed: every kind of fault on 4-10 nodes, varying with the seed (other run flags ignored)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs at once in a sweep")
	fs.IntVar(&cfg.Workers, "sim-workers", 0, "goroutines running one run's nodes at once (1: serial; default GOMAXPROCS for one run, 1 for each run of a sweep); the same seed gives the same run whatever it is")
	recordLog := fs.String("record", "", "append the sweep's result to this `LOG` (the cumulative clean-seed figure)")
	trace := fs.Bool("trace", false, "print every operation, fault and node warning to stderr (one run)")
	total := fs.String("total", "", "print the seeds run clean over every sweep recorded in `LOG`, and exit")
	shrink := fs.String("shrink", "", "if the run fails, shrink it and write the smallest failing scenario to `FILE`")
	plot := fs.String("plot", "", "write an SVG of each tracked update's spread to `FILE`")
	memLimit := fs.String("memory-limit", "", "soft limit on the Go runtime's memory, `SIZE` in bytes or with KiB/MiB/GiB; \"off\" for none (default "+simMemoryLimit+", or $GOMEMLIMIT when set); the limit follows a live heap that outgrows four fifths of it")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole command to `FILE` (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a heap profile, taken when the command ends, to `FILE`")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, fs, "unexpected argument %q", pos[0])
	}
	if cfg.Workers < 0 {
		return usageError(stderr, fs, "--sim-workers %d: must not be negative", cfg.Workers)
	}
	limit, err := simMemoryLimitOf(*memLimit)
	if err != nil {
		return usageError(stderr, fs, "--memory-limit: %v", err)
	}
	defer applyMemoryLimit(ctx, limit)()
	if *scenario != "" {
		sc, err := sim.LoadScenario(*scenario)
		if err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
			return exitUsage
		}
		cfg.Scenario = sc
	}
	if *total != "" {
		n, err := sim.CleanTotal(*total)
		if err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "%d seeds run clean in the sweeps recorded in %s\n", n, *total)
		return exitOK
	}
	if *trace {
		cfg.Trace = stderr
	}
	stop, err := startProfiles(*cpuProfile, *memProfile)
	if err != nil {
		fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
		return exitError
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
		}
	}()
	if *sweep <= 0 && *soak <= 0 {
		if *shrink != "" {
			return shrinkTo(*shrink, cfg, stdout, stderr)
		}
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
			writeCollector(stdout)
		}
		if !r.Converged {
			return exitError
		}
		return exitOK
	}
	config := func(seed uint64) sim.Config { c := cfg; c.Seed = seed; return c }
	if *mixed {
		// --sim-workers applies to a mixed sweep's runs too (Mixed leaves
		// Workers at 0, which a sweep runs serially).
		config = func(seed uint64) sim.Config { c := sim.Mixed(seed); c.Workers = cfg.Workers; return c }
	}
	var until time.Time
	if *soak > 0 {
		until = time.Now().Add(*soak)
	}
	res, err := sim.Sweep(ctx, config, cfg.Seed, *sweep, until, *workers, func(r *sim.Report) {
		if *asJSON {
			_ = json.NewEncoder(stdout).Encode(r)
		}
	})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
		return exitUsage
	}
	if *recordLog != "" {
		what := fmt.Sprintf("mnemo sim --sweep %d --for %v from seed %d (mixed=%v, %d workers)", *sweep, *soak, cfg.Seed, *mixed, *workers)
		if err := sim.RecordSweep(*recordLog, what, res); err != nil {
			fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
			return exitError
		}
	}
	if *asJSON {
		sum := map[string]any{"seeds": res.Seeds, "clean": res.Clean, "failed": len(res.Failed), "worst_virtual_ms": res.WorstVirtualMS,
			"wall_ms": res.Wall.Milliseconds(), "seeds_per_s": res.SeedsPerSecond()}
		var replays []string
		for _, r := range res.Failed {
			replays = append(replays, r.Replay)
		}
		sum["replays"] = replays
		_ = json.NewEncoder(stdout).Encode(sum)
	} else {
		fmt.Fprintf(stdout, "%d/%d seeds clean; worst virtual time to converge %d ms; wall %v; %.2f seeds/s\n",
			res.Clean, res.Seeds, res.WorstVirtualMS, res.Wall.Round(time.Millisecond), res.SeedsPerSecond())
		for _, r := range res.Failed {
			fmt.Fprintf(stdout, "seed %d FAILED: %s\n  replay: %s\n", r.Seed, r.FirstViolation(), r.Replay)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "mnemo sim: interrupted")
		return exitError
	}
	if len(res.Failed) > 0 {
		return exitError
	}
	return exitOK
}

// simMemoryLimit is the soft memory limit `mnemo sim` runs under when
// neither --memory-limit nor GOMEMLIMIT is given. Below it the collector
// runs at GOGC 400 (sim.GCPercent), so a run's heap grows to five times
// what it holds: at 100 nodes and 10k ops (live heap ~600 MB at the end)
// the peak was 3.4 GB. The limit makes it collect earlier once the heap
// nears 1.5 GiB, and follows a live heap that outgrows four fifths of it
// (applyMemoryLimit), so a larger run is never starved. Measured at 100 x
// 10k, seed 1, --loss 0.1 --partitions 3, the two at once (load 7-9,
// ac3094e): peak RSS 3.37 -> 1.58 GB for 182.9 -> 208.0 s of user CPU
// (+14%); same digest. Runs whose heap stays small (the sweeps, 4-10
// nodes) never reach it. Lower, the same run fits under 1 GiB and pays
// for it in collections (the run's last line, writeCollector; 2026-12-07,
// one run each, one after the other, a soak running beside them):
// --memory-limit 960MiB peak RSS 1.59 GB -> 0.97 GB (974 MiB), 64 -> 114
// collections, 23.3 -> 60.3 s of the collector's CPU (9% -> 17% of the
// process's), wall 133 -> 187 s. A run's wall time is what a user waits
// for, so the default stays; --memory-limit 960MiB is the choice where
// memory is short.
const simMemoryLimit = "1536MiB"

// simMemoryLimitOf is memoryLimit with the simulator's default.
func simMemoryLimitOf(v string) (int64, error) { return memoryLimitOr(v, simMemoryLimit) }

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

// shrinkTo runs cfg and, if it fails, writes its shrunk scenario to path.
func shrinkTo(path string, cfg sim.Config, stdout, stderr io.Writer) int {
	text, r, err := sim.Shrink(cfg, 500)
	if err != nil {
		fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
		return exitUsage
	}
	if r == nil {
		fmt.Fprintln(stdout, "converged: nothing to shrink")
		return exitOK
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintf(stderr, "mnemo sim: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "FAILED: %s\nshrunk to %s (%d lines); replay: mnemo sim --scenario %s\n",
		r.FirstViolation(), path, strings.Count(text, "\n"), path)
	return exitError
}

// startProfiles starts a CPU profile into cpuFile (if named) and returns the
// function that ends it and writes a heap profile into memFile (if named).
func startProfiles(cpuFile, memFile string) (stop func() error, err error) {
	var cpu *os.File
	if cpuFile != "" {
		if cpu, err = os.Create(cpuFile); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, err
		}
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return err
			}
		}
		if memFile == "" {
			return nil
		}
		f, err := os.Create(memFile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}, nil
}

// writeCollector prints what the garbage collector cost the process so
// far, from the runtime's own metrics: the figure to weigh a memory limit
// by (--memory-limit), steadier on a shared machine than wall or user time.
func writeCollector(w io.Writer) {
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"}}
	metrics.Read(sample)
	for _, s := range sample {
		if s.Value.Kind() == metrics.KindBad {
			return
		}
	}
	busy := sample[2].Value.Float64() - sample[3].Value.Float64()
	fmt.Fprintf(w, "collector: %d collections, %.1f s of CPU (%.0f%% of the process's %.1f s busy)\n",
		sample[0].Value.Uint64(), sample[1].Value.Float64(), 100*sample[1].Value.Float64()/max(busy, 1e-9), busy)
}
