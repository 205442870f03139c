package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mixed is the sweep's run for one seed: every kind of fault (loss,
// duplication, reordering, partitions, crash-restarts, stalls, a leave and
// rejoin, a late joiner, two skewed clocks within and beyond the bound) on
// 4–10 nodes. Small clusters and short workloads, so a sweep covers many
// seeds: each seed is a different cluster, workload and fault schedule.
// One seed in four answers syncs in batches of 2 KiB, so that answers
// split in several batches (lost, reordered) are swept too: at 150
// operations an answer otherwise fits one batch, which hid two bugs of
// split answers (doc.go, "Found"). One seed in five sends bindings on
// demand (cluster.Config.BindingsOnDemandAt).
func Mixed(seed uint64) Config {
	c := Config{
		Nodes: 4 + int(seed%7), Ops: 150, Seed: seed,
		Loss: 0.1, Dup: 0.05, Reorder: 0.1,
		Partitions: 2, Crashes: 2, Stalls: 1, Churn: 1, Joins: 1,
		SkewedNodes: 2, Skew: 8 * time.Second, // the bound is 5s
	}
	if seed%4 == 3 {
		c.Engine.BatchMaxBytes = 2 << 10
	}
	if seed%3 == 1 {
		// Live deltas of every replica set of four holders or more go
		// over broadcast trees (sync/replica/doc.go, "Trees"); the other
		// seeds keep the engine's threshold, which only their larger
		// sets reach.
		c.Engine.TreeThreshold = 4
	}
	if seed%5 == 2 {
		// Bindings travel only where they are used (node/cluster's
		// bindings_demand.go, not a node's default yet): pulled for
		// refused deltas and for the readers of sparse namespaces.
		c.BindingsOnDemandAt = 2
	}
	return c
}

// SweepResult is what a sweep ran and found.
type SweepResult struct {
	Seeds, Clean   int
	Failed         []*Report // by seed
	Wall           time.Duration
	WorstVirtualMS int64 // the slowest convergence after the last fault
}

// SeedsPerSecond is the sweep's throughput.
func (r SweepResult) SeedsPerSecond() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Seeds) / r.Wall.Seconds()
}

// Sweep runs the configurations config(seed) for seeds first, first+1, …:
// n of them, or (n <= 0) as many as start before until. Runs are
// independent, so workers of them run at once (each on one goroutine,
// unless config sets Config.Workers); each is called with every
// report, from the calling goroutine, in the order they finish. A
// cancelled ctx stops it between runs (and returns ctx's error with what
// ran).
func Sweep(ctx context.Context, config func(seed uint64) Config, first uint64, n int, until time.Time, workers int,
	each func(*Report)) (SweepResult, error) {
	start := time.Now()
	workers = max(1, workers)
	if n <= 0 && until.IsZero() {
		return SweepResult{}, errors.New("sim: a sweep needs a number of seeds or an end time")
	}
	seeds := make(chan uint64)
	type done struct {
		r   *Report
		err error
	}
	out := make(chan done)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				cfg := config(seed)
				if cfg.Workers == 0 {
					cfg.Workers = 1 // the seeds run at once already (Config.Workers)
				}
				r, err := Run(cfg)
				out <- done{r, err}
			}
		}()
	}
	go func() {
		defer close(seeds)
		for i := 0; n <= 0 || i < n; i++ {
			if ctx.Err() != nil || (!until.IsZero() && time.Now().After(until)) {
				return
			}
			select {
			case seeds <- first + uint64(i):
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	var res SweepResult
	var errs []error
	for d := range out {
		if d.err != nil {
			errs = append(errs, d.err)
			continue
		}
		res.Seeds++
		if d.r.Converged {
			res.Clean++
			res.WorstVirtualMS = max(res.WorstVirtualMS, d.r.VirtualMS)
		} else {
			res.Failed = append(res.Failed, d.r)
		}
		if each != nil {
			each(d.r)
		}
	}
	slices.SortFunc(res.Failed, func(a, b *Report) int { return int(a.Seed - b.Seed) })
	res.Wall = time.Since(start)
	return res, errors.Join(append(errs, ctx.Err())...)
}

// RecordSweep appends one line for res to the log at path (created if
// missing): when, what ran, how many seeds ran clean.
func RecordSweep(path, what string, res SweepResult) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s clean=%d seeds=%d failed=%d seeds_per_s=%.2f %s\n",
		time.Now().UTC().Format(time.RFC3339), res.Clean, res.Seeds, len(res.Failed), res.SeedsPerSecond(), what)
	return errors.Join(err, f.Close())
}

// CleanTotal sums the seeds run clean over every line of the log at path:
// the cumulative figure the README quotes.
func CleanTotal(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total := 0
	in := bufio.NewScanner(f)
	for line := 1; in.Scan(); line++ {
		for _, field := range strings.Fields(in.Text()) {
			if v, ok := strings.CutPrefix(field, "clean="); ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return 0, fmt.Errorf("%s:%d: bad clean count %q", path, line, v)
				}
				total += n
			}
		}
	}
	return total, in.Err()
}
