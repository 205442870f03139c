package sim

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scenario is a fixed cluster shape and fault script, read from a file.
// The format is one directive per line; '#' starts a comment:
//
//	nodes 6              # cluster size
//	ops 300              # workload operations
//	teams 2              # team:// namespaces (projects N likewise)
//	loss 0.05            # also dup P, reorder P
//	span 40s             # virtual time the workload is spread over
//	absent n5            # n5 starts outside the membership (join it later)
//	at 5s partition n0,n1 | n2,n3   # unlisted nodes join the first group
//	at 20s heal
//	at 8s crash n2
//	at 9s crash-in-write n3  # dies in the middle of its next write
//	at 12s restart n2
//	at 3s stall n1 for 10s
//	at 4s leave n3
//	at 9s join n3
//	skewed-nodes 2       # also skew 8s, max-skew 5s
//	seed 1008            # overrides the command line's
//	at 1.5s op 8812…     # an operation with its own seed (see below)
//	at 3s stall n1       # … and its end, as a shrunk scenario writes them
//	at 9s unstall n1
//
// Without a seed line the seed comes from the command line: a scenario
// fixes the faults, the seed the workload and the network's draws. With
// op lines (or "ops listed"), they are the whole workload: each
// operation's choices come from its own seed, so dropping one leaves the
// others as they were. Shrink writes such files.
type Scenario struct {
	Path   string
	set    map[string]string
	absent []int
	faults []*fault
	ops    []plannedOp
}

// LoadScenario reads a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc, err := ParseScenario(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc.Path = path
	return sc, nil
}

// ParseScenario reads the scenario format described on Scenario.
func ParseScenario(r io.Reader) (*Scenario, error) {
	sc := &Scenario{set: map[string]string{}}
	in := bufio.NewScanner(r)
	line := 0
	for in.Scan() {
		line++
		text, _, _ := strings.Cut(in.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if err := sc.directive(f); err != nil {
			return nil, fmt.Errorf("sim: scenario line %d: %w", line, err)
		}
	}
	if err := in.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(sc.faults, func(a, b *fault) int { return int(a.at - b.at) })
	slices.SortStableFunc(sc.ops, func(a, b plannedOp) int { return int(a.at - b.at) })
	return sc, nil
}

func (sc *Scenario) directive(f []string) error {
	switch f[0] {
	case "nodes", "ops", "teams", "projects", "loss", "dup", "reorder", "span", "seed", "skewed-nodes", "skew", "max-skew":
		if len(f) != 2 {
			return fmt.Errorf("%s takes one value", f[0])
		}
		if f[0] == "ops" && f[1] == "listed" {
			sc.ops = []plannedOp{} // the op lines are the whole workload, even none
			return nil
		}
		if err := checkValue(f[0], f[1]); err != nil {
			return err
		}
		sc.set[f[0]] = f[1]
	case "absent":
		for _, a := range f[1:] {
			n, err := nodeRef(a)
			if err != nil {
				return err
			}
			sc.absent = append(sc.absent, n)
		}
	case "at":
		if len(f) < 3 {
			return fmt.Errorf("at TIME ACTION")
		}
		at, err := time.ParseDuration(f[1])
		if err != nil || at < 0 {
			return fmt.Errorf("bad time %q", f[1])
		}
		return sc.action(at, f[2], f[3:])
	default:
		return fmt.Errorf("unknown directive %q", f[0])
	}
	return nil
}

func checkValue(key, v string) error {
	switch key {
	case "span", "skew", "max-skew":
		d, err := time.ParseDuration(v)
		if err == nil && d < 0 {
			err = fmt.Errorf("negative %s", key)
		}
		return err
	case "seed":
		_, err := strconv.ParseUint(v, 10, 64)
		return err
	case "loss", "dup", "reorder":
		_, err := strconv.ParseFloat(v, 64)
		return err
	}
	_, err := strconv.Atoi(v)
	return err
}

func nodeRef(s string) (int, error) {
	if !strings.HasPrefix(s, "n") {
		return 0, fmt.Errorf("bad node %q (want nN)", s)
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad node %q (want nN)", s)
	}
	return n, nil
}

func (sc *Scenario) action(at time.Duration, verb string, args []string) error {
	kinds := map[string]faultKind{"crash": fCrash, "crash-in-write": fCrashInWrite, "restart": fRestart, "leave": fLeave, "join": fJoin, "stall": fStall, "unstall": fUnstall}
	switch verb {
	case "op":
		if len(args) != 1 {
			return fmt.Errorf("at TIME op SEED")
		}
		seed, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return fmt.Errorf("bad op seed %q", args[0])
		}
		sc.ops = append(sc.ops, plannedOp{at: at, seed: seed})
	case "heal":
		sc.faults = append(sc.faults, &fault{at: at, kind: fHeal})
	case "partition":
		var groups [][]int
		for _, g := range strings.Split(strings.Join(args, " "), "|") {
			var nodes []int
			for _, a := range strings.Split(strings.ReplaceAll(g, " ", ""), ",") {
				if a == "" {
					continue
				}
				n, err := nodeRef(a)
				if err != nil {
					return err
				}
				nodes = append(nodes, n)
			}
			groups = append(groups, nodes)
		}
		if len(groups) < 2 {
			return fmt.Errorf("partition needs two groups separated by |")
		}
		sc.faults = append(sc.faults, &fault{at: at, kind: fPartition, groups: groups})
	default:
		k, ok := kinds[verb]
		if !ok || len(args) < 1 {
			return fmt.Errorf("unknown action %q", verb)
		}
		n, err := nodeRef(args[0])
		if err != nil {
			return err
		}
		sc.faults = append(sc.faults, &fault{at: at, kind: k, node: n})
		if k == fStall && len(args) > 1 {
			if len(args) != 3 || args[1] != "for" {
				return fmt.Errorf("stall nN [for DURATION]")
			}
			d, err := time.ParseDuration(args[2])
			if err != nil {
				return err
			}
			sc.faults = append(sc.faults, &fault{at: at + d, kind: fUnstall, node: n})
		}
	}
	return nil
}

// apply sets the fields the scenario names and checks its node references.
func (sc *Scenario) apply(c *Config) {
	for _, k := range slices.Sorted(maps.Keys(sc.set)) {
		v := sc.set[k]
		switch k {
		case "nodes":
			c.Nodes, _ = strconv.Atoi(v)
		case "ops":
			c.Ops, _ = strconv.Atoi(v)
		case "teams":
			c.Teams, _ = strconv.Atoi(v)
		case "projects":
			c.Projects, _ = strconv.Atoi(v)
		case "loss":
			c.Loss, _ = strconv.ParseFloat(v, 64)
		case "dup":
			c.Dup, _ = strconv.ParseFloat(v, 64)
		case "reorder":
			c.Reorder, _ = strconv.ParseFloat(v, 64)
		case "span":
			c.Span, _ = time.ParseDuration(v)
		case "seed":
			c.Seed, _ = strconv.ParseUint(v, 10, 64)
		case "skewed-nodes":
			c.SkewedNodes, _ = strconv.Atoi(v)
		case "skew":
			c.Skew, _ = time.ParseDuration(v)
		case "max-skew":
			c.MaxSkew, _ = time.ParseDuration(v)
		}
	}
	c.Partitions, c.Crashes, c.Stalls, c.Churn, c.Joins = 0, 0, 0, 0, 0
	if sc.ops != nil {
		c.Ops = len(sc.ops)
	}
}

func (sc *Scenario) check(nodes int) error {
	for _, n := range sc.absent {
		if n >= nodes {
			return fmt.Errorf("sim: scenario names n%d of %d nodes", n, nodes)
		}
	}
	for _, f := range sc.faults {
		if f.kind != fPartition && f.kind != fHeal && f.node >= nodes {
			return fmt.Errorf("sim: scenario names n%d of %d nodes", f.node, nodes)
		}
		for _, g := range f.groups {
			for _, n := range g {
				if n >= nodes {
					return fmt.Errorf("sim: scenario names n%d of %d nodes", n, nodes)
				}
			}
		}
	}
	return nil
}
