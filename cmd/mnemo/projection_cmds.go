package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/projection"
)

// Projections: a filtered, compressed, read-only view of a namespace
// delivered to another agent (POST/GET/DELETE /v1/projections).

func projectionCommands() map[string]command {
	return map[string]command{
		"projection": {runProjection, "create, list or remove projections"},
	}
}

const projectionUsage = `Projections (talk to a running node):
  projection create   a live view for an agent   mnemo projection create --source team://backend --target agent://bob --tags auth --level L2
                      a snapshot                 mnemo projection create --source NS --target agent://bob --files 'src/payments/**' --snapshot
  projection ls       those you created or receive
  projection rm       end one, its view empties  mnemo projection rm ID
`

func runProjection(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "create":
		return runProjectionCreate(ctx, args, stdout, stderr)
	case "ls", "list":
		return runProjectionList(ctx, args, stdout, stderr)
	case "rm", "delete":
		var id string
		return simple("projection rm", "ID", "Ends a projection you created: its spec is marked deleted and every memory of\nits view is retracted, so the subscriber's view empties.", 1, args, stdout, stderr, nil,
			func(cf *clientFlags, pos []string) ([]byte, error) {
				id = pos[0]
				return cf.request(ctx, "DELETE", "/v1/projections/"+url.PathEscape(pos[0]), nil, nil, nil)
			}, func([]byte) {
				fmt.Fprintf(stdout, "removed projection %s\n", id)
			})
	case "", "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, projectionUsage)
		if sub == "" {
			return exitUsage
		}
		return exitOK
	}
	fmt.Fprintf(stderr, "mnemo projection: unknown subcommand %q (want create, ls or rm)\n", sub)
	return exitUsage
}

func runProjectionCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		req                          memapi.ProjectionRequest
		source, target, level        string
		types, tags, files, pred     string
		snapshot                     bool
		minConfidence, minImportance **float64
		info                         memapi.ProjectionInfo
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&source, "source", "", "the namespace to project (required; you need share on it)")
		fs.StringVar(&target, "target", "", "the agent that receives the view, agent://NAME (required)")
		fs.StringVar(&types, "types", "", "only these memory types, comma separated")
		fs.StringVar(&tags, "tags", "", "only memories with any of these tags, comma separated")
		minConfidence = optFloat(fs, "min-confidence", "only memories with at least this confidence (0..1)")
		minImportance = optFloat(fs, "min-importance", "only memories with at least this importance (0..1)")
		fs.StringVar(&files, "files", "", "only memories linked to a file matching one of these globs, comma separated (src/payments/**)")
		fs.StringVar(&pred, "predicate", "", `a predicate over fields, e.g. 'confidence >= 0.7 and not "wip" in tags'`)
		fs.StringVar(&level, "level", "L2", "L1 headline, L2 + summary and files, L3 the full memory")
		fs.BoolVar(&snapshot, "snapshot", false, "copy once now instead of following the source")
	}
	return simple("projection create", "--source NS --target AGENT [filters]",
		"Creates a projection: the memories of --source that pass every filter given, reduced\nto --level, delivered to --target's inbox (read-only there, included in its searches).\nLive by default: later creates, edits, archives and retracts follow.", 0, args, stdout, stderr, extra,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			lv, err := projection.ParseLevel(level)
			if err != nil {
				return nil, err
			}
			live := !snapshot
			req = memapi.ProjectionRequest{Source: source, Target: target, Level: lv, Live: &live,
				Filter: projection.Filter{Types: splitComma(types), Tags: splitComma(tags), LinkedFiles: splitComma(files),
					Predicate: pred, MinConfidence: *minConfidence, MinImportance: *minImportance}}
			return cf.request(ctx, "POST", "/v1/projections", nil, req, &info)
		}, func([]byte) {
			mode := "live"
			if !info.Live {
				mode = "snapshot"
			}
			fmt.Fprintf(stdout, "created %s projection %s: %s → %s at %s, %d memories in %s\n",
				mode, info.ID, info.Source, info.Target, info.Level, info.Memories, info.View)
		})
}

func runProjectionList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var out struct {
		Projections []memapi.ProjectionInfo `json:"projections"`
	}
	return simple("projection ls", "", "Lists the projections you created or receive that this node knows of.", 0, args, stdout, stderr, nil,
		func(cf *clientFlags, pos []string) ([]byte, error) {
			return cf.request(ctx, "GET", "/v1/projections", nil, nil, &out)
		}, func([]byte) {
			w := table(stdout)
			fmt.Fprintln(w, "ID\tSOURCE\tTARGET\tCREATOR\tLEVEL\tMODE\tMEMORIES\tFILTER")
			for _, p := range out.Projections {
				mode := "live"
				if !p.Live {
					mode = "snapshot"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", p.ID, p.Source, p.Target, p.Creator, p.Level, mode, p.Memories, describeFilter(p.Filter))
			}
			w.Flush()
		})
}

func describeFilter(f projection.Filter) string {
	var parts []string
	add := func(name string, vs []string) {
		if len(vs) > 0 {
			parts = append(parts, name+"="+strings.Join(vs, ","))
		}
	}
	add("types", f.Types)
	add("tags", f.Tags)
	add("files", f.LinkedFiles)
	if f.MinConfidence != nil {
		parts = append(parts, fmt.Sprintf("confidence>=%g", *f.MinConfidence))
	}
	if f.MinImportance != nil {
		parts = append(parts, fmt.Sprintf("importance>=%g", *f.MinImportance))
	}
	if f.Predicate != "" {
		parts = append(parts, "where "+f.Predicate)
	}
	if len(parts) == 0 {
		return "everything"
	}
	return strings.Join(parts, " ")
}
