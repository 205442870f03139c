package projection

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs the scripts in testdata/*.txt with datadriven: a
// command line, any values that need quoting below it, a line "----" and
// the expected output, which ends at a blank line. Lines starting with #
// are comments. Commands:
//
//	item NAME [like=OTHER] FIELD=VALUE...  define an item (id: NAME, or OTHER's);
//	                                       lists are comma-separated, deleted_at=TIME|yes,
//	                                       quarantined=yes|no
//	filter FIELD=VALUE...                  set the filter: types tags min_confidence
//	                                       min_importance linked_files predicate
//	match NAME...                          whether each item passes the filter
//	predicate                              compile the SRC below: canonical form or the error
//	eval NAME...                           evaluate the predicate SRC below on items
//	glob PATTERN PATH...                   MatchGlob on each path
//	project NAME LEVEL                     the projected item
//	decide LEVEL BEFORE|- AFTER|-          the Action for the current filter
//	decide-view HELD AFTER|-               DecideView: HELD is nothing, shown,
//	                                       removed or retracted
//
// A value with spaces, quotes or nothing at all goes below the command, one
// a line, as a Go string ("SRC") or FIELD="VALUE"; they follow the line's
// own arguments. `go test -run TestScenarios -rewrite` regenerates the
// outputs.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, file string) {
		sc := &scenario{items: map[string]Item{}}
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

type scenario struct {
	items  map[string]Item
	filter Filter
}

// scenarioArgs is the command, its arguments, then the input's values, one
// a line: "VALUE" or FIELD="VALUE", unquoted.
func scenarioArgs(d *datadriven.TestData) ([]string, error) {
	args := []string{d.Cmd}
	for _, a := range d.CmdArgs {
		args = append(args, a.String())
	}
	for _, line := range strings.Split(d.Input, "\n") {
		if line == "" {
			continue
		}
		field, quoted := "", line
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, `"`) {
			field, quoted = k+"=", v
		}
		v, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("input %s: want a Go string: %v", line, err)
		}
		args = append(args, field+v)
	}
	return args, nil
}

func list(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func (sc *scenario) item(name string) (*Item, error) {
	if name == "-" {
		return nil, nil
	}
	it, ok := sc.items[name]
	if !ok {
		return nil, fmt.Errorf("no item %q", name)
	}
	return &it, nil
}

// run executes one command. A returned error is a broken script; errors of
// the package under test are output.
func (sc *scenario) run(args []string) (string, error) {
	var out strings.Builder
	switch args[0] {
	case "item":
		it := Item{ID: args[1]}
		for _, a := range args[2:] {
			k, v, _ := strings.Cut(a, "=")
			if err := setItemField(sc, &it, k, v); err != nil {
				return "", err
			}
		}
		sc.items[args[1]] = it
		return "ok", nil
	case "filter":
		f := Filter{}
		for _, a := range args[1:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "types":
				f.Types = list(v)
			case "tags":
				f.Tags = list(v)
			case "linked_files":
				f.LinkedFiles = list(v)
			case "predicate":
				f.Predicate = v
			case "min_confidence", "min_importance":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return "", err
				}
				if k == "min_confidence" {
					f.MinConfidence = &x
				} else {
					f.MinImportance = &x
				}
			default:
				return "", fmt.Errorf("unknown filter field %q", k)
			}
		}
		sc.filter = f
		if err := f.Validate(); err != nil {
			return "error: " + err.Error(), nil
		}
		return "ok", nil
	case "match":
		for _, n := range args[1:] {
			it, err := sc.item(n)
			if err != nil || it == nil {
				return "", fmt.Errorf("no item %q", n)
			}
			fmt.Fprintf(&out, "%s: %s\n", n, yesNo(sc.filter.Match(*it)))
		}
		return out.String(), nil
	case "predicate", "eval":
		// The source comes from the input, after the item names.
		if len(args) < 2 {
			return "", fmt.Errorf("%s needs a source below it", args[0])
		}
		src, names := args[len(args)-1], args[1:len(args)-1]
		p, err := CompilePredicate(src)
		if err != nil {
			return "error: " + err.Error(), nil
		}
		if args[0] == "predicate" {
			return "ok: " + p.String(), nil
		}
		for _, n := range names {
			it, err := sc.item(n)
			if err != nil || it == nil {
				return "", fmt.Errorf("no item %q", n)
			}
			fmt.Fprintf(&out, "%s: %v\n", n, p.Eval(*it))
		}
		return out.String(), nil
	case "glob":
		if err := CheckGlob(args[1]); err != nil {
			return "error: " + err.Error(), nil
		}
		for _, p := range args[2:] {
			fmt.Fprintf(&out, "%s: %s\n", p, yesNo(MatchGlob(args[1], p)))
		}
		return out.String(), nil
	case "project":
		it, err := sc.item(args[1])
		if err != nil || it == nil {
			return "", fmt.Errorf("no item %q", args[1])
		}
		l, err := ParseLevel(args[2])
		if err != nil {
			return "", err
		}
		return formatItem(Project(*it, l)), nil
	case "decide":
		l, err := ParseLevel(args[1])
		if err != nil {
			return "", err
		}
		before, err := sc.item(args[2])
		if err != nil {
			return "", err
		}
		after, err := sc.item(args[3])
		if err != nil {
			return "", err
		}
		return Decide(Spec{Filter: sc.filter, Level: l}, before, after).String(), nil
	case "decide-view":
		held, ok := map[string]Held{"nothing": HeldNothing, "shown": HeldShown, "removed": HeldRemoved, "retracted": HeldRetracted}[args[1]]
		if !ok {
			return "", fmt.Errorf("unknown held state %q", args[1])
		}
		after, err := sc.item(args[2])
		if err != nil {
			return "", err
		}
		return DecideView(Spec{Filter: sc.filter, Level: L3}, held, after).String(), nil
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func setItemField(sc *scenario, it *Item, k, v string) error {
	num := func(dst *float64) error {
		x, err := strconv.ParseFloat(v, 64)
		*dst = x
		return err
	}
	tm := func(dst *time.Time) error {
		x, err := time.Parse(time.RFC3339, v)
		*dst = x
		return err
	}
	switch k {
	case "like":
		base, ok := sc.items[v]
		if !ok {
			return fmt.Errorf("no item %q", v)
		}
		*it = base // the id too: NAME is a later version of the same memory
	case "id":
		it.ID = v
	case "type":
		it.Type = v
	case "title":
		it.Title = v
	case "content":
		it.Content = v
	case "summary":
		it.Summary = v
	case "tags":
		it.Tags = list(v)
	case "importance":
		return num(&it.Importance)
	case "confidence":
		return num(&it.Confidence)
	case "linked_files":
		it.LinkedFiles = list(v)
	case "scope":
		it.Scope = v
	case "subject_type":
		it.SubjectType = v
	case "subject_id":
		it.SubjectID = v
	case "project":
		it.Project = v
	case "session_id":
		it.SessionID = v
	case "channel":
		it.Channel = v
	case "author":
		it.Author = v
	case "created_at":
		return tm(&it.CreatedAt)
	case "updated_at":
		return tm(&it.UpdatedAt)
	case "deleted_at":
		var d time.Time
		if v != "yes" {
			if err := tm(&d); err != nil {
				return err
			}
		} else {
			d = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		it.DeletedAt = &d
	case "quarantined":
		it.Quarantined = v == "yes"
	case "topic_key":
		it.TopicKey = v
	case "lineage":
		it.Lineage = v
	case "content_hash":
		it.ContentHash = v
	default:
		return fmt.Errorf("unknown item field %q", k)
	}
	return nil
}

// formatItem prints the non-zero fields, one per line, in declaration order.
func formatItem(it Item) string {
	var b strings.Builder
	str := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s=%q\n", k, v)
		}
	}
	lst := func(k string, v []string) {
		if v != nil {
			fmt.Fprintf(&b, "%s=%q\n", k, v)
		}
	}
	num := func(k string, v float64) {
		if v != 0 {
			fmt.Fprintf(&b, "%s=%v\n", k, v)
		}
	}
	tm := func(k string, v time.Time) {
		if !v.IsZero() {
			fmt.Fprintf(&b, "%s=%s\n", k, v.Format(time.RFC3339))
		}
	}
	str("id", it.ID)
	str("type", it.Type)
	str("title", it.Title)
	str("content", it.Content)
	str("summary", it.Summary)
	lst("tags", it.Tags)
	num("importance", it.Importance)
	num("confidence", it.Confidence)
	lst("linked_files", it.LinkedFiles)
	str("scope", it.Scope)
	str("subject_type", it.SubjectType)
	str("subject_id", it.SubjectID)
	str("project", it.Project)
	str("session_id", it.SessionID)
	str("channel", it.Channel)
	str("author", it.Author)
	tm("created_at", it.CreatedAt)
	tm("updated_at", it.UpdatedAt)
	if it.DeletedAt != nil {
		tm("deleted_at", *it.DeletedAt)
	}
	if it.Quarantined {
		str("quarantined", "yes")
	}
	str("topic_key", it.TopicKey)
	str("lineage", it.Lineage)
	str("content_hash", it.ContentHash)
	return b.String()
}
