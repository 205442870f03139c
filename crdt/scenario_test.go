package crdt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs the scripts in testdata/*.txt with datadriven: a
// command line, any values that need quoting below it (one per line, as Go
// strings, taken after the line's own arguments), a line "----" and the
// expected output, which ends at a blank line. Lines starting with # are
// comments. Commands:
//
//	replica NAME [skew=DURATION]      a replica; ids follow creation order
//	NAME set ID FIELD @WALLMS         write the field to the value below, at wall time WALLMS
//	NAME add ID SET ELEM              add an element
//	NAME remove ID SET ELEM           remove an element
//	NAME retract ID                   retract a record
//	NAME edit ID                      start an edit (reports ErrRetracted)
//	deliver A->B [reverse] [@WALLMS]  all of A's deltas B has not received
//	sync A->B [@WALLMS]               join A's full state into B
//	show NAME                         the state, readably
//	digest-equal A B...               whether the digests agree
//	expect-error COMMAND              the command must fail
//
// `go test -run TestScenarios -rewrite` regenerates the outputs.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, file string) {
		sc := &scenario{reps: map[string]*scenarioReplica{}, names: map[ReplicaID]string{}}
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			args, err := scenarioArgs(d)
			if err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			got, err := sc.run(args)
			if err != nil {
				t.Fatalf("%s: %s: %v", d.Pos, d.FullCmd(), err)
			}
			return strings.TrimRight(got, "\n")
		})
	})
}

// scenarioArgs is the command, its arguments, then the quoted values of
// the input, one a line.
func scenarioArgs(d *datadriven.TestData) ([]string, error) {
	args := []string{d.Cmd}
	for _, a := range d.CmdArgs {
		args = append(args, a.String())
	}
	for _, line := range strings.Split(d.Input, "\n") {
		if line == "" {
			continue
		}
		v, err := strconv.Unquote(line)
		if err != nil {
			return nil, fmt.Errorf("input %s: want a Go string: %v", line, err)
		}
		args = append(args, v)
	}
	return args, nil
}

type scenarioReplica struct {
	name  string
	id    ReplicaID
	clock *Clock
	wall  int64
	m     *Map
	out   []*Map         // deltas this replica produced
	sent  map[string]int // deltas of out already delivered, per receiver
}

type scenario struct {
	reps  map[string]*scenarioReplica
	names map[ReplicaID]string
	order []string
}

// run executes one command. A returned error is a broken script; errors of
// the package under test are output.
func (sc *scenario) run(args []string) (string, error) {
	line := strings.Join(args, " ")
	if args[0] == "expect-error" {
		out, err := sc.run(args[1:])
		if err == nil && !strings.HasPrefix(out, "error: ") {
			return "", fmt.Errorf("expected an error, got %q", out)
		}
		return out, err
	}
	var err error
	var wall int64 = -1
	if i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "@") }); i >= 0 {
		if wall, err = strconv.ParseInt(args[i][1:], 10, 64); err != nil {
			return "", err
		}
		args = slices.Delete(slices.Clone(args), i, i+1)
	}
	switch args[0] {
	case "replica":
		r := &scenarioReplica{name: args[1], id: ReplicaID(len(sc.order) + 1), m: NewMap(), sent: map[string]int{}}
		skew := time.Minute
		for _, a := range args[2:] {
			if v, ok := strings.CutPrefix(a, "skew="); ok {
				if skew, err = time.ParseDuration(v); err != nil {
					return "", err
				}
			}
		}
		r.clock = NewClock(skew)
		sc.reps[r.name], sc.names[r.id] = r, r.name
		sc.order = append(sc.order, r.name)
		return fmt.Sprintf("%s is replica %d, max skew %v", r.name, r.id, skew), nil
	case "deliver", "sync":
		from, to, ok := strings.Cut(args[1], "->")
		a, b := sc.reps[from], sc.reps[to]
		if !ok || a == nil || b == nil {
			return "", fmt.Errorf("bad pair %q", args[1])
		}
		if wall >= 0 {
			b.wall = wall
		}
		if args[0] == "sync" {
			return sc.apply(b, a.m.Clone()), nil
		}
		pending := slices.Clone(a.out[a.sent[to]:])
		a.sent[to] = len(a.out)
		if slices.Contains(args, "reverse") {
			slices.Reverse(pending)
		}
		var out strings.Builder
		for _, d := range pending {
			out.WriteString(sc.apply(b, d))
		}
		if len(pending) == 0 {
			return "nothing to deliver", nil
		}
		return out.String(), nil
	case "show":
		r := sc.reps[args[1]]
		if r == nil {
			return "", fmt.Errorf("no replica %q", args[1])
		}
		return sc.show(r), nil
	case "digest-equal":
		var digests []Digest
		for _, n := range args[1:] {
			digests = append(digests, sc.reps[n].m.Digest())
		}
		for _, d := range digests[1:] {
			if d != digests[0] {
				return "differ", nil
			}
		}
		return "equal", nil
	}
	r := sc.reps[args[0]]
	if r == nil || len(args) < 3 {
		return "", fmt.Errorf("unknown command %q", line)
	}
	if wall >= 0 {
		r.wall = wall
	}
	id := args[2]
	var d *Map
	switch args[1] {
	case "set":
		if len(args) != 5 {
			return "", fmt.Errorf("set needs ID FIELD VALUE")
		}
		ts := r.clock.Now(time.UnixMilli(r.wall))
		d, err = r.m.Set(r.id, ts, id, args[3], []byte(args[4]))
		if err == nil {
			r.out = append(r.out, d)
			return fmt.Sprintf("ok ts=%v", ts), nil
		}
	case "add":
		d, err = r.m.Add(r.id, id, args[3], args[4])
	case "remove":
		d, err = r.m.Remove(r.id, id, args[3], args[4])
	case "retract":
		d = r.m.Retract(id)
	case "edit":
		_, err = r.m.Edit(r.id, id, DefaultLimits())
	default:
		return "", fmt.Errorf("unknown command %q", line)
	}
	if err != nil {
		return "error: " + err.Error(), nil
	}
	if d != nil {
		r.out = append(r.out, d)
	}
	return "ok", nil
}

// apply does what the node does with a delta: check its largest timestamp
// against the clock, observe it, join it; a rejected delta changes nothing.
func (sc *scenario) apply(r *scenarioReplica, d *Map) string {
	before := r.m.Digest()
	if _, err := r.clock.Observe(d.MaxTimestamp(), time.UnixMilli(r.wall)); err != nil {
		if r.m.Digest() != before {
			return "state changed by a rejected delta\n"
		}
		return "error: " + err.Error() + "\n"
	}
	r.m.Join(d)
	if err := checkMap(r.m); err != nil {
		return "invariant: " + err.Error() + "\n"
	}
	return fmt.Sprintf("%s applied %s\n", r.name, sc.describe(d))
}

// describe summarises a delta: its ids and their operations.
func (sc *scenario) describe(d *Map) string {
	var parts []string
	for _, id := range d.RetractedIDs() {
		parts = append(parts, "retract "+id)
	}
	for _, id := range d.EntryIDs() {
		rec := d.Entry(id)
		var ops []string
		for _, f := range rec.FieldNames() {
			ops = append(ops, f)
		}
		for _, s := range slices.Sorted(mapKeys(rec.sets)) {
			for _, e := range rec.Elements(s) {
				ops = append(ops, "+"+s+"/"+e)
			}
		}
		if len(ops) == 0 {
			ops = append(ops, "no content")
		}
		parts = append(parts, id+" ("+strings.Join(ops, ", ")+")")
	}
	if len(parts) == 0 {
		return "state"
	}
	return strings.Join(parts, "; ")
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (sc *scenario) show(r *scenarioReplica) string {
	var b strings.Builder
	fmt.Fprintf(&b, "clock %v\n", r.clock.Last())
	for _, id := range r.m.EntryIDs() {
		rec := r.m.Entry(id)
		if rec.Empty() {
			fmt.Fprintf(&b, "%s (empty entry)\n", id)
			continue
		}
		fmt.Fprintf(&b, "%s\n", id)
		for _, n := range rec.FieldNames() {
			f, _ := rec.Field(n)
			fmt.Fprintf(&b, "  %s = %q (%v by %s)\n", n, f.Value, f.TS, sc.names[f.Dot.Replica])
		}
		for _, s := range slices.Sorted(mapKeys(rec.sets)) {
			fmt.Fprintf(&b, "  %s: %s\n", s, strings.Join(rec.Elements(s), " "))
		}
	}
	for _, id := range r.m.RetractedIDs() {
		fmt.Fprintf(&b, "%s retracted\n", id)
		if r.m.Entry(id) != nil {
			fmt.Fprintf(&b, "  BUG: still has an entry\n")
		}
	}
	if r.m.IsEmpty() {
		b.WriteString("empty\n")
	}
	return b.String()
}
