package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A failing seed is shrunk to a scenario: the run's configuration, its
// faults and its operations, each with its own seed, written in the
// Scenario format; then operations and faults are dropped for as long as
// the run still fails the same way (the first violation's kind: "lost
// write:", "convergence:" …). What is left is a file a test replays
// (TestScenarios runs every file in testdata/scenarios).

// ScenarioText is the run as a scenario: replaying it (with no seed on the
// command line) runs the same cluster, faults and operations.
func (s *Sim) ScenarioText() string {
	return scenarioText(s.cfg, s.faults, s.ops)
}

func scenarioText(c Config, faults []*fault, ops []plannedOp) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.ReplayCommand())
	fmt.Fprintf(&b, "seed %d\nnodes %d\nteams %d\nprojects %d\nops listed\n", c.Seed, c.Nodes, c.Teams, c.Projects)
	for _, v := range []struct {
		k string
		f float64
	}{{"loss", c.Loss}, {"dup", c.Dup}, {"reorder", c.Reorder}} {
		if v.f > 0 {
			fmt.Fprintf(&b, "%s %g\n", v.k, v.f)
		}
	}
	if c.SkewedNodes > 0 && c.Skew > 0 {
		fmt.Fprintf(&b, "skewed-nodes %d\nskew %v\n", c.SkewedNodes, c.Skew)
	}
	fmt.Fprintf(&b, "max-skew %v\n", c.MaxSkew)
	var absent []string
	for i := range c.Nodes {
		if isAbsent(c, i) {
			absent = append(absent, fmt.Sprintf("n%d", i))
		}
	}
	if len(absent) > 0 {
		fmt.Fprintf(&b, "absent %s\n", strings.Join(absent, " "))
	}
	type line struct {
		at   time.Duration
		text string
	}
	var lines []line
	for _, f := range faults {
		if f.kind != fQuiet {
			lines = append(lines, line{f.at, f.String()})
		}
	}
	for _, op := range ops {
		lines = append(lines, line{op.at, fmt.Sprintf("op %d", op.seed)})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return int(a.at - b.at) })
	for _, l := range lines {
		fmt.Fprintf(&b, "at %v %s\n", l.at, l.text)
	}
	return b.String()
}

// isAbsent reports whether node i starts outside the membership.
func isAbsent(c Config, i int) bool {
	if c.Scenario != nil {
		return slices.Contains(c.Scenario.absent, i)
	}
	return i >= c.Nodes-c.Joins
}

// violationKind is the first violation's kind: its text up to the colon.
func violationKind(r *Report) string {
	k, _, _ := strings.Cut(r.FirstViolation(), ":")
	return k
}

// Shrink runs cfg and, if it fails, drops operations and faults while the
// run still fails with the same kind of first violation, and returns the
// smallest failing scenario's text and report (nil, nil when cfg passes).
// Every attempt is a whole run; budget bounds their number.
func Shrink(cfg Config, budget int) (string, *Report, error) {
	s, err := New(cfg)
	if err != nil {
		return "", nil, err
	}
	r := s.Run()
	if r.Converged {
		return "", nil, nil
	}
	kind := violationKind(r)
	base := s.cfg
	base.Scenario = nil
	faults, ops := slices.Clone(s.faults), slices.Clone(s.ops)
	faults = slices.DeleteFunc(faults, func(f *fault) bool { return f.kind == fQuiet })
	best := r
	try := func(fs []*fault, os []plannedOp) bool {
		if budget <= 0 {
			return false
		}
		budget--
		sc, err := ParseScenario(strings.NewReader(scenarioText(base, fs, os)))
		if err != nil {
			return false
		}
		c := base
		c.Scenario = sc
		r, err := Run(c)
		if err != nil || r.Converged || violationKind(r) != kind {
			return false
		}
		best = r
		return true
	}
	// Drop chunks of operations, halving the chunk when none can go.
	for chunk := max(1, len(ops)/2); chunk >= 1 && budget > 0; {
		dropped := false
		for i := 0; i+chunk <= len(ops) && budget > 0; {
			cand := slices.Concat(ops[:i], ops[i+chunk:])
			if try(faults, cand) {
				ops, dropped = cand, true
				continue
			}
			i += chunk
		}
		if !dropped {
			if chunk == 1 {
				break
			}
			chunk /= 2
		}
	}
	for i := 0; i < len(faults) && budget > 0; {
		cand := slices.Delete(slices.Clone(faults), i, i+1)
		if try(cand, ops) {
			faults = cand
			continue
		}
		i++
	}
	return scenarioText(base, faults, ops), best, nil
}
