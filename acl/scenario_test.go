package acl

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
)

// TestScenarios runs testdata/*.txt with datadriven: a command line, "----"
// and its expected output, blocks separated by blank lines, # for comments;
// `go test -run TestScenarios -rewrite` regenerates the outputs. Commands:
//
//	agents NAME...                               cluster agents, one node key each
//	create  ID by=AGENT ns=NS [ts=N]             sign a record and put it in the pool as ID
//	grant   ID by=AGENT ns=NS to=AGENT perms=P [after=ID,ID] [ts=N]
//	revoke  ID by=AGENT ns=NS to=AGENT perms=P [ts=N]
//	check     ns=NS [only=ID,ID] [without=ID,ID]  each agent's permissions
//	effective ns=NS [only=ID,ID] [without=ID,ID]  the listing and the rejected records
//
// check and effective evaluate a replica holding the pool's records (all,
// only those listed, or all but those listed), added in a shuffled order.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, file string) {
		s := &scenario{w: newWorld(t), recs: map[string]SignedRecord{}, names: map[string]string{}}
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			got, err := s.run(d)
			if err != nil {
				return "error: " + err.Error()
			}
			return got
		})
	})
}

type scenario struct {
	w      *world
	agents []string
	recs   map[string]SignedRecord
	order  []string
	names  map[string]string // record id -> scenario name
}

func (s *scenario) run(d *datadriven.TestData) (string, error) {
	cmd, args := d.Cmd, map[string]string{}
	var pos []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
		} else {
			args[a.Key] = strings.Join(a.Vals, ",")
		}
	}
	switch cmd {
	case "agents":
		for _, a := range pos {
			s.w.ids[a] = testIdentity(s.w.t, a)
			s.agents = append(s.agents, a)
		}
		slices.Sort(s.agents)
		return "ok", nil
	case "create", "grant", "revoke":
		if len(pos) != 1 || s.recs[pos[0]].Kind != 0 {
			return "", fmt.Errorf("want one new record name")
		}
		r, err := s.record(cmd, args)
		if err != nil {
			return "", err
		}
		s.recs[pos[0]], s.names[r.ID()] = r, pos[0]
		s.order = append(s.order, pos[0])
		return "ok", nil
	case "check", "effective":
		ns, err := namespace.Parse(args["ns"])
		if err != nil {
			return "", err
		}
		p, err := s.replica(args)
		if err != nil {
			return "", err
		}
		if cmd == "check" {
			return s.check(p, ns), nil
		}
		return s.effective(p, ns), nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

func (s *scenario) record(kind string, args map[string]string) (SignedRecord, error) {
	by, ok := s.w.ids[args["by"]]
	if !ok {
		return SignedRecord{}, fmt.Errorf("unknown signer %q", args["by"])
	}
	ns, err := namespace.Parse(args["ns"])
	if err != nil {
		return SignedRecord{}, err
	}
	ts := s.w.next()
	if v, ok := args["ts"]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return SignedRecord{}, err
		}
		ts = crdt.Timestamp(n)
	}
	if kind == "create" {
		return NewCreate(by, agent(args["by"]), ns, ts)
	}
	perms, err := ParsePermissions(args["perms"])
	if err != nil {
		return SignedRecord{}, err
	}
	if kind == "revoke" {
		return NewRevoke(by, agent(args["by"]), ns, agent(args["to"]), perms, ts)
	}
	var after []string
	for _, n := range splitList(args["after"]) {
		r, ok := s.recs[n]
		if !ok {
			return SignedRecord{}, fmt.Errorf("after: unknown record %q", n)
		}
		after = append(after, r.ID())
	}
	return NewGrant(by, agent(args["by"]), ns, agent(args["to"]), perms, after, ts)
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// replica builds a policy from the chosen records, added in reverse order so
// that no scenario depends on the order it wrote them in.
func (s *scenario) replica(args map[string]string) (*Policy, error) {
	set := s.order
	if only, ok := args["only"]; ok {
		set = splitList(only)
	}
	without := splitList(args["without"])
	b := NewBook(s.w.keyOf)
	for i := len(set) - 1; i >= 0; i-- {
		r, ok := s.recs[set[i]]
		if !ok {
			return nil, fmt.Errorf("unknown record %q", set[i])
		}
		if slices.Contains(without, set[i]) {
			continue
		}
		if err := b.AddRecord(r); err != nil {
			return nil, err
		}
	}
	return b.Policy(), nil
}

func (s *scenario) check(p *Policy, ns namespace.Address) string {
	var lines []string
	for _, a := range s.agents {
		perms := FormatPermissions(p.Permissions(agent(a), ns))
		if perms == "" {
			perms = "-"
		}
		lines = append(lines, a+": "+perms)
	}
	return strings.Join(lines, "\n")
}

func (s *scenario) effective(p *Policy, ns namespace.Address) string {
	var lines []string
	for _, e := range p.Effective(ns) {
		from := e.Source.String()
		if e.RecordID != "" {
			from += " " + s.names[e.RecordID]
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s by %s", e.Principal.Name, e.Perm, from, e.Signer.Name))
	}
	var rejected []string
	for _, r := range p.Rejected(ns) {
		why := "not authorized"
		if errors.Is(r.Err, ErrWrongKey) {
			why = "wrong key"
		}
		rejected = append(rejected, fmt.Sprintf("rejected %s: %s", s.names[r.ID], why))
	}
	slices.Sort(rejected)
	lines = append(lines, rejected...)
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, "\n")
}
