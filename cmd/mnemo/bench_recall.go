package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/node/client"
	"github.com/mnemohq/mnemo/node/memapi"
)

// recallKs are the cut-offs the recall bench reports; the last is how many
// results it asks for.
var recallKs = [...]int{1, 5, 10, 20}

const recallAbout = "recall: opens a node in a new temporary data directory, as \"mnemo node\" runs\n" +
	"it, and measures retrieval on LoCoMo-format conversations (Maharana et al.,\n" +
	"ACL 2024): every *.json file of --locomo DIR, each conversation saved into\n" +
	"its own namespace, one memory per dialogue turn (title \"SPEAKER (SESSION\n" +
	"DATE)\", content the turn's text, session_id \"session-N\"), through POST\n" +
	"/v1/memories, in order and at least a millisecond apart. Then every\n" +
	"question with evidence (category 5, adversarial, left out) is sent as-is to\n" +
	"GET /v1/search in its conversation's namespace with limit 20. Prints, per\n" +
	"conversation and over all: hit@k (an evidence turn is among the first k),\n" +
	"recall@k (the share of evidence turns among the first k) and MRR@k (1/rank\n" +
	"of the first evidence turn, 0 past k) for k = 1, 5, 10, 20, and the search\n" +
	"latency percentiles."

// runBenchRecall is "mnemo bench recall".
func runBenchRecall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench recall", "--locomo DIR [flags]", recallAbout, stdout, stderr)
	locomo := fs.String("locomo", "", "`DIR` of LoCoMo-format JSON files (required)")
	dir := fs.String("data", "", "data `DIR` to use (default a new temporary directory, removed after)")
	feedback := fs.Bool("feedback", false, "search with feedback=true (pseudo-relevance feedback)")
	results := fs.String("results", "", "also write one JSON line per question (conversation, question, evidence, the dia_ids returned) to `FILE`")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	if *locomo == "" {
		return usageError(stderr, fs, "--locomo DIR is required")
	}
	convs, err := loadLocomoDir(*locomo)
	if err != nil {
		return failed(stderr, fs, err)
	}
	var dump io.Writer
	if *results != "" {
		f, err := os.Create(*results)
		if err != nil {
			return failed(stderr, fs, err)
		}
		defer f.Close()
		dump = f
	}
	n, err := openBenchNode(ctx, *dir)
	if err != nil {
		return failed(stderr, fs, err)
	}
	defer n.close()
	cl, err := client.New(n.Addr(), n.Token())
	if err != nil {
		return failed(stderr, fs, err)
	}
	how := ""
	if *feedback {
		how = " with feedback"
	}
	fmt.Fprintf(stdout, "LoCoMo recall over GET /v1/search%s (%s), %d conversations from %s\n", how, n.Addr(), len(convs), *locomo)
	row := "%-14s %6s %9s %7s %7s %9s %9s %9s %7s\n"
	fmt.Fprintf(stdout, row, "conversation", "turns", "questions", "hit@1", "hit@10", "recall@5", "recall@10", "recall@20", "MRR@10")
	var all recallScore
	var lats []time.Duration
	for _, c := range convs {
		ns := recallNamespace(c.Name)
		dia, err := loadConversation(ctx, cl, ns, c)
		if err != nil {
			return failed(stderr, fs, fmt.Errorf("conversation %s: %w", c.Name, err))
		}
		var sc recallScore
		for _, q := range c.Questions {
			if q.Category == 5 || len(q.Evidence) == 0 {
				continue
			}
			t0 := time.Now()
			res, err := cl.Search(ctx, memapi.SearchQuery{Query: q.Question, Filter: memapi.Filter{Namespace: ns}, Limit: recallKs[len(recallKs)-1], Feedback: *feedback})
			lats = append(lats, time.Since(t0))
			if err != nil {
				return failed(stderr, fs, fmt.Errorf("conversation %s: search %q: %w", c.Name, q.Question, err))
			}
			got := make([]string, len(res.Results))
			for i, h := range res.Results {
				got[i] = dia[h.Memory.ID]
			}
			sc.add(q.Evidence, got)
			all.add(q.Evidence, got)
			if dump != nil {
				line, _ := json.Marshal(map[string]any{"conversation": c.Name, "category": q.Category, "question": q.Question, "evidence": q.Evidence, "got": got})
				if _, err := fmt.Fprintf(dump, "%s\n", line); err != nil {
					return failed(stderr, fs, err)
				}
			}
		}
		sc.row(stdout, row, c.Name, c.Turns())
	}
	turns := 0
	for _, c := range convs {
		turns += c.Turns()
	}
	all.row(stdout, row, "all", turns)
	fmt.Fprintf(stdout, "\n%4s %7s %9s %7s\n", "k", "hit@k", "recall@k", "MRR@k")
	for i, k := range recallKs {
		fmt.Fprintf(stdout, "%4d %7.3f %9.3f %7.3f\n", k, all.mean(all.hit[i]), all.mean(all.recall[i]), all.mean(all.rr[i]))
	}
	slices.Sort(lats)
	if len(lats) > 0 {
		at := func(p float64) time.Duration { return lats[int(float64(len(lats)-1)*p)] }
		fmt.Fprintf(stdout, "\nsearch latency over %d queries: p50 %s, p95 %s, max %s\n", len(lats), ms(at(0.5)), ms(at(0.95)), ms(lats[len(lats)-1]))
	}
	return exitOK
}

// recallNamespace is the sub-namespace of the bench agent a conversation
// is saved into.
func recallNamespace(name string) string {
	return "locomo-" + strings.Trim(nonSegment.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

var nonSegment = regexp.MustCompile(`[^a-z0-9]+`)

// loadConversation saves every turn of c into ns, one at a time and in
// order, each with its session's id as an agent recording a conversation
// would, and returns the dia_id of each saved memory by memory id. Turns
// get strictly increasing creation times (creation times have millisecond
// resolution; turns saved within one millisecond would be ordered by their
// random ids), so ties in score, and the order of a session, are the same
// on every run.
func loadConversation(ctx context.Context, cl *client.Client, ns string, c locomoConversation) (map[string]string, error) {
	dia := make(map[string]string, c.Turns())
	for _, s := range c.Sessions {
		for _, t := range s.Turns {
			title, content := locomoMemory(s, t)
			res, err := cl.Save(ctx, memapi.SaveRequest{Namespace: ns, Type: "observation", Title: title, Content: content, SessionID: fmt.Sprintf("session-%d", s.N)})
			if err != nil {
				return nil, fmt.Errorf("save %s: %w", t.DiaID, err)
			}
			dia[res.ID] = t.DiaID
			// Turns are said seconds apart, not within one millisecond: wait
			// for the next one, so every turn has a creation time of its own
			// and the order of the conversation is the order of the memories.
			for next := res.Memory.CreatedAt.Truncate(time.Millisecond).Add(time.Millisecond); time.Now().Before(next); {
				time.Sleep(time.Until(next))
			}
		}
	}
	if len(dia) != c.Turns() {
		return nil, fmt.Errorf("%d turns saved as %d memories: some saves were merged", c.Turns(), len(dia))
	}
	return dia, nil
}

// recallScore sums per-question figures at each cut-off of recallKs.
type recallScore struct {
	n               int
	hit, recall, rr [len(recallKs)]float64
}

// add scores one question: evidence are the turns that answer it, got the
// turns returned, best first.
func (s *recallScore) add(evidence, got []string) {
	want := slices.Compact(slices.Sorted(slices.Values(evidence)))
	var ranks []int // 1-based ranks of the distinct evidence turns returned
	seen := make(map[string]bool)
	for i, id := range got {
		if slices.Contains(want, id) && !seen[id] {
			seen[id] = true
			ranks = append(ranks, i+1)
		}
	}
	s.n++
	for i, k := range recallKs {
		found := 0
		for _, r := range ranks {
			if r <= k {
				found++
			}
		}
		s.recall[i] += float64(found) / float64(len(want))
		if len(ranks) > 0 && ranks[0] <= k {
			s.hit[i]++
			s.rr[i] += 1 / float64(ranks[0])
		}
	}
}

func (s *recallScore) mean(sum float64) float64 {
	if s.n == 0 {
		return 0
	}
	return sum / float64(s.n)
}

func (s *recallScore) row(w io.Writer, format, name string, turns int) {
	f := func(v float64) string { return fmt.Sprintf("%.3f", s.mean(v)) }
	fmt.Fprintf(w, format, name, fmt.Sprint(turns), fmt.Sprint(s.n), f(s.hit[0]), f(s.hit[2]), f(s.recall[1]), f(s.recall[2]), f(s.recall[3]), f(s.rr[2]))
}
