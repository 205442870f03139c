package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// TestResidentMemoryNode measures the resident memory of a real `mnemo
// node` process (not of a test binary that also carries a loader's
// garbage): idle on an empty data directory, and idle on one holding 100k
// realistic memories after a few searches. It fills the directory fast
// through memory.Service with NoSync (as an import would), then starts the
// binary on it, waits for the ready line, calls GET /healthz and searches
// over HTTP (20, then 2000 more of 1-3 corpus words, stopwords included), and
// reads /proc/PID/status. It runs only with MNEMO_RSS_TEST=1
// (MNEMO_RSS_N changes the count; MNEMO_RSS_LIMITS, a comma-separated list
// of --memory-limit values, default "default,off"; MNEMO_RSS_DIR keeps the
// filled directory there for the next run):
//
//	MNEMO_RSS_TEST=1 go test -run TestResidentMemoryNode -v -timeout 30m ./cmd/mnemo/
func TestResidentMemoryNode(t *testing.T) {
	if os.Getenv("MNEMO_RSS_TEST") != "1" {
		t.Skip("set MNEMO_RSS_TEST=1 to measure a node process's resident memory")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: ", err)
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("MNEMO_RSS_N")); err == nil && v > 0 {
		n = v
	}
	limits := []string{"default", "off"}
	if v := os.Getenv("MNEMO_RSS_LIMITS"); v != "" {
		limits = strings.Split(v, ",")
	}
	const agent = "rss"
	full := filepath.Join(t.TempDir(), "full")
	if d := os.Getenv("MNEMO_RSS_DIR"); d != "" {
		full = d // kept between runs: filled only if it holds no data yet
	}
	if _, err := os.Stat(filepath.Join(full, "MANIFEST")); err != nil {
		start := time.Now()
		fillNodeDir(t, full, agent, n)
		t.Logf("filled %s with %d memories in %v", full, n, time.Since(start).Round(time.Millisecond))
	}

	var rows []string
	for _, lim := range limits {
		var extra []string
		if lim != "default" {
			extra = []string{"--memory-limit", lim}
		}
		// Empty directory: a fresh node, idle.
		empty := filepath.Join(t.TempDir(), "empty-"+lim)
		p := startNode(t, empty, agent, extra...)
		p.healthz()
		p.searches([]string{"database latency", "postgres"})
		p.settled(5 * time.Second)
		rows = append(rows, p.rssRow(lim, "empty, idle"))
		p.stop(syscall.SIGTERM)

		// 100k memories: reopened (index rebuilt), searched, idle.
		t0 := time.Now()
		p = startNode(t, full, agent, extra...)
		ready := time.Since(t0)
		p.healthz()
		rows = append(rows, p.rssRow(lim, fmt.Sprintf("%d, ready in %v", n, ready.Round(10*time.Millisecond))))
		qs := []string{"database latency", "postgres migration timeout", "cache", "the kubernetes deploy", "retry queue worker"}
		for range 4 {
			p.searches(qs)
		}
		rows = append(rows, p.rssRow(lim, fmt.Sprintf("%d, after 20 searches", n)))
		g := newTextGen(9)
		for range 2000 {
			p.searches([]string{g.text(1 + g.rng.IntN(3))})
		}
		rows = append(rows, p.rssRow(lim, fmt.Sprintf("%d, after 2000 more", n)))
		p.settled(15 * time.Second)
		rows = append(rows, p.rssRow(lim, fmt.Sprintf("%d, then idle until settled", n)))
		p.stop(syscall.SIGTERM)
	}
	fmt.Printf("%-8s %-34s %9s %9s %9s %9s\n", "limit", "state", "VmRSS", "RssAnon", "RssFile", "VmHWM")
	for _, r := range rows {
		fmt.Println(r)
		t.Log(r)
	}
}

func (p *nodeProc) healthz() {
	p.t.Helper()
	if code, body := p.api("GET", "/healthz", "", ""); code != 200 {
		p.t.Fatalf("healthz: %d %s", code, body)
	}
}

func (p *nodeProc) searches(qs []string) {
	p.t.Helper()
	for _, q := range qs {
		if code, body := p.api("GET", "/v1/search?q="+url.QueryEscape(q), p.token, ""); code != 200 {
			p.t.Fatalf("search %q: %d %s", q, code, body)
		}
	}
}

// rssRow formats the process's memory figures from /proc/PID/status in MiB.
// settled waits until the node's resident size stops moving — two readings
// 500 ms apart within 1% — or within passes, so an "idle" figure is one.
func (p *nodeProc) settled(within time.Duration) {
	p.t.Helper()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(within)
	prev := p.procStatus()["VmRSS"]
	for time.Now().Before(deadline) {
		<-tick.C
		cur := p.procStatus()["VmRSS"]
		if d := cur - prev; d*d*10000 <= prev*prev {
			return
		}
		prev = cur
	}
}

func (p *nodeProc) rssRow(limit, state string) string {
	p.t.Helper()
	v := p.procStatus()
	return fmt.Sprintf("%-8s %-34s %6.1f MiB %6.1f MiB %6.1f MiB %6.1f MiB", limit, state,
		v["VmRSS"], v["RssAnon"], v["RssFile"], v["VmHWM"])
}

// procStatus reads the node's /proc status fields, in MiB.
func (p *nodeProc) procStatus() map[string]float64 {
	p.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatal(err)
	}
	v := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64); err == nil {
			v[k] = kb / 1024
		}
	}
	return v
}

// fillNodeDir saves n realistic memories into dir for agent, without fsync,
// in the agent's namespace and three sub-agent namespaces.
func fillNodeDir(t *testing.T, dir, agent string, n int) {
	t.Helper()
	owner := namespace.MustParse("agent://" + agent)
	kv, err := badgerkv.Open(dir, badgerkv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memory.Open(memory.Config{KV: kv, Agent: owner})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := newTextGen(5)
	ctx := context.Background()
	caller := memapi.Caller{Principal: owner}
	nss := []string{"", "", "", "subagent/build", "subagent/research", "subagent/review"}
	types := []string{"decision", "fact", "fact", "observation", "observation", "note", "preference", "task", "procedure"}
	scopes := []string{"project", "project", "user", "session", "global"}
	for i := range n {
		req := memapi.SaveRequest{
			Namespace: nss[g.rng.IntN(len(nss))],
			Type:      types[g.rng.IntN(len(types))],
			Title:     g.text(4 + g.rng.IntN(5)),
			Content:   g.text(40 + g.rng.IntN(81)),
			Project:   fmt.Sprintf("proj-%d", g.rng.IntN(20)),
			Scope:     scopes[g.rng.IntN(len(scopes))],
			SessionID: fmt.Sprintf("sess-%d", i/50),
		}
		for range 2 + g.rng.IntN(3) {
			req.Tags = append(req.Tags, g.tags[g.tagZ.Uint64()])
		}
		if _, err := s.Save(ctx, caller, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
