package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestE2ETwentyNodes is issue 14's multi-process test: twenty real `mnemo
// node` processes on loopback, all joining the first, share one team
// namespace. Saves are made one at a time on four writers; each must become
// searchable on the nineteen other nodes, and the namespace's digests agree
// on all twenty at the end. It logs how long each save took from its 201 to
// searchable on each other node and on all of them (p50/p99, the README's
// figure) and the nodes' summed resident memory; it asserts no bound on
// times, the machine being shared. Twenty processes are heavy, so it runs
// only with MNEMO_SCALE_TEST=1. MNEMO_SCALE_SAVES changes the number of
// saves (default 50), MNEMO_SCALE_NODES the number of nodes (default 20, at
// least 4), MNEMO_SCALE_POLL how often each node is searched (default 5ms:
// the figure's resolution; more often, more searches compete with the
// nodes for the CPU), MNEMO_SCALE_TREES a --tree-threshold for every node
// (default none: direct sends, as mnemo node runs):
//
//	MNEMO_SCALE_TEST=1 go test -count=1 -run TestE2ETwentyNodes -v -timeout 20m ./cmd/mnemo/
func TestE2ETwentyNodes(t *testing.T) {
	if os.Getenv("MNEMO_SCALE_TEST") != "1" {
		t.Skip("twenty node processes: set MNEMO_SCALE_TEST=1 to run (MNEMO_SCALE_TEST=1 go test -count=1 -run TestE2ETwentyNodes -v -timeout 20m ./cmd/mnemo/)")
	}
	n, saves, poll := 20, 50, 5*time.Millisecond
	for _, e := range []struct {
		name string
		v    *int
		min  int
	}{{"MNEMO_SCALE_NODES", &n, 4}, {"MNEMO_SCALE_SAVES", &saves, 1}} {
		if v := os.Getenv(e.name); v != "" {
			if _, err := fmt.Sscan(v, e.v); err != nil || *e.v < e.min {
				t.Fatalf("%s=%q: want a count of at least %d", e.name, v, e.min)
			}
		}
	}
	if v := os.Getenv("MNEMO_SCALE_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("MNEMO_SCALE_POLL=%q: want a positive duration", v)
		}
		poll = d
	}
	keyFile := filepath.Join(t.TempDir(), "cluster.key")
	r := cli(t, "", cleanEnv(t), "cluster-key").ok(t, "cluster-key")
	if err := os.WriteFile(keyFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--cluster-key", keyFile}
	if v := os.Getenv("MNEMO_SCALE_TREES"); v != "" {
		flags = append(flags, "--tree-threshold", v)
	}

	began := time.Now()
	nodes := make([]*nodeProc, n)
	nodes[0] = startNode(t, t.TempDir(), scaleAgent(0), flags...)
	for i := 1; i < n; i++ {
		nodes[i] = startNode(t, t.TempDir(), scaleAgent(i), append(flags, "--join", nodes[0].gossip)...)
	}
	started := time.Since(began)
	for i, p := range nodes {
		eventually(t, fmt.Sprintf("node %d sees %d members", i, n), func() bool { return p.members(t) == n })
	}
	t.Logf("%d nodes started in %v, all see %d members after %v", n, started.Round(time.Millisecond), n, time.Since(began).Round(time.Millisecond))

	const ns = "team://scale"
	if code, body := nodes[0].api("POST", "/v1/namespaces", nodes[0].token, fmt.Sprintf(`{"namespace":%q}`, ns)); code != 201 {
		t.Fatalf("create team: %d %s", code, body)
	}
	for i := 1; i < n; i++ {
		if code, body := nodes[0].api("POST", "/v1/grants", nodes[0].token, fmt.Sprintf(`{"namespace":%q,"principal":"agent://%s","permissions":["read","write"]}`, ns, scaleAgent(i))); code != 201 && code != 200 {
			t.Fatalf("grant %s: %d %s", scaleAgent(i), code, body)
		}
	}
	// The grants have reached a node once it may write there; one save from
	// every node, seen everywhere, also opens every connection the timed
	// saves use.
	granted := time.Now()
	var warm []string
	for i, p := range nodes {
		var id string
		eventually(t, fmt.Sprintf("node %d may write to the team", i), func() bool {
			id = p.trySave(ns, fmt.Sprintf("node %d joined the team", i))
			return id != ""
		})
		warm = append(warm, id)
	}
	for i, p := range nodes {
		for _, id := range warm {
			eventually(t, fmt.Sprintf("every node's first save on node %d", i), func() bool { return p.has(id) })
		}
	}
	t.Logf("grants to %d agents, then one save from each, on every node after %v", n-1, time.Since(granted).Round(time.Millisecond))

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	t.Cleanup(client.CloseIdleConnections)
	var perNode, toAll, first []time.Duration
	var ids []string
	before := countersOf(t, nodes)
	cpu0, wall0 := nodesCPU(t, nodes), time.Now()
	for k := range saves {
		w := k % 4 * (n / 4) // four writers in turn: 0, 5, 10 and 15 of 20
		word := fmt.Sprintf("scaleprobe%04d", k)
		lat, id := measurePropagation(t, client, nodes, w, ns, word, poll)
		ids = append(ids, id)
		perNode = append(perNode, lat...)
		toAll = append(toAll, slices.Max(lat))
		first = append(first, slices.Min(lat))
	}

	cpu, wall := nodesCPU(t, nodes)-cpu0, time.Since(wall0)
	eventually(t, "equal digests of the team on all nodes", func() bool {
		d := nodes[0].digest(t, ns)
		for _, p := range nodes[1:] {
			if d == "" || p.digest(t, ns) != d {
				return false
			}
		}
		return true
	})
	for i, p := range nodes {
		for _, id := range ids {
			if !p.has(id) {
				t.Fatalf("digests agree but node %d lacks %s", i, id)
			}
		}
	}

	var rss, hwm float64
	for _, p := range nodes {
		v := p.procStatus()
		rss += v["VmRSS"]
		hwm += v["VmHWM"]
	}
	during := countersOf(t, nodes).minus(before)
	slices.Sort(perNode)
	slices.Sort(toAll)
	slices.Sort(first)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	t.Logf("save -> searchable on one other node (%d samples): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		len(perNode), ms(quantile(perNode, 0.50)), ms(quantile(perNode, 0.99)), ms(perNode[len(perNode)-1]))
	t.Logf("save -> searchable on all %d other nodes (%d saves): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		n-1, len(toAll), ms(quantile(toAll, 0.50)), ms(quantile(toAll, 0.99)), ms(toAll[len(toAll)-1]))
	t.Logf("save -> searchable on the first other node: p50 %.1f ms, p99 %.1f ms", ms(quantile(first, 0.50)), ms(quantile(first, 0.99)))
	t.Logf("CPU of the %d nodes while saving and searching: %.2f s in %.2f s (%.2f cores; the machine has %d)",
		n, cpu.Seconds(), wall.Seconds(), cpu.Seconds()/wall.Seconds(), runtime.NumCPU())
	t.Logf("during the timed saves, all nodes: %d retransmissions, %d fallbacks to digest sync, %d frames dropped, %d local overflows (before them: %d, %d, %d, %d)",
		during.retransmits, during.fallbacks, during.dropped, during.overflows, before.retransmits, before.fallbacks, before.dropped, before.overflows)
	t.Logf("resident memory of the %d nodes at the end: %.0f MiB (sum of VmRSS), %.0f MiB (sum of VmHWM)", n, rss, hwm)
	fmt.Printf("scale nodes=%d saves=%d poll_ms=%g node_p50_ms=%.1f node_p99_ms=%.1f all_p50_ms=%.1f all_p99_ms=%.1f all_max_ms=%.1f rss_mib=%.0f hwm_mib=%.0f\n",
		n, len(toAll), ms(poll), ms(quantile(perNode, 0.50)), ms(quantile(perNode, 0.99)),
		ms(quantile(toAll, 0.50)), ms(quantile(toAll, 0.99)), ms(toAll[len(toAll)-1]), rss, hwm)
}

func scaleAgent(i int) string { return fmt.Sprintf("scale%02d", i) }

// trySave saves content into ns on p and returns the new memory's id, or ""
// when p refuses (as it does before a grant has reached it).
func (p *nodeProc) trySave(ns, content string) string {
	p.t.Helper()
	code, body := p.api("POST", "/v1/memories", p.token, fmt.Sprintf(`{"namespace":%q,"content":%q}`, ns, content))
	if code != 201 {
		return ""
	}
	var m struct{ ID string }
	_ = json.Unmarshal(body, &m)
	return m.ID
}

// measurePropagation saves a memory holding word on nodes[w] and returns,
// for each other node, the time from the save's 201 to the first search for
// word there that finds it. Every node is asked every poll, all at once; a
// node that has not found it within waitLimit fails the test.
func measurePropagation(t *testing.T, client *http.Client, nodes []*nodeProc, w int, ns, word string, poll time.Duration) ([]time.Duration, string) {
	t.Helper()
	id := nodes[w].trySave(ns, "propagation probe "+word+" saved on "+scaleAgent(w))
	if id == "" {
		t.Fatalf("save on node %d refused", w)
	}
	saved := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	var lat []time.Duration
	errs := make([]error, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, p := range nodes {
		if i == w {
			continue
		}
		wg.Go(func() {
			d, err := pollSearchable(ctx, client, p, word, id, saved, poll)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, d)
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("save %s on node %d, searching node %d: %v", id, w, i, err)
		}
	}
	return lat, id
}

// pollSearchable searches p for word every poll until the result holds id,
// and returns the time since saved at which it did.
func pollSearchable(ctx context.Context, client *http.Client, p *nodeProc, word, id string, saved time.Time, poll time.Duration) (time.Duration, error) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		found, err := searchFinds(ctx, client, p, word, id)
		if found {
			return time.Since(saved), nil
		}
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			return 0, fmt.Errorf("not searchable after %v: %w", time.Since(saved).Round(time.Millisecond), err)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func searchFinds(ctx context.Context, client *http.Client, p *nodeProc, word, id string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", p.url+"/v1/search?q="+url.QueryEscape(word), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != 200 {
		return false, fmt.Errorf("search: %d %s", resp.StatusCode, body)
	}
	return strings.Contains(string(body), id), nil
}

// counters are the replication counters summed over nodes: a save that
// waited for a timer (a retransmission on the engine's tick, a fallback to
// digest sync) or lost a frame shows in them.
type counters struct{ retransmits, fallbacks, dropped, overflows uint64 }

func countersOf(t *testing.T, nodes []*nodeProc) counters {
	t.Helper()
	var c counters
	for _, p := range nodes {
		st := p.status(t)
		c.dropped += st.DroppedFrames
		c.overflows += st.LocalOverflow
		for _, ps := range st.Peers {
			c.retransmits += ps.Retransmits
			c.fallbacks += ps.Fallbacks
		}
	}
	return c
}

func (c counters) minus(o counters) counters {
	return counters{c.retransmits - o.retransmits, c.fallbacks - o.fallbacks, c.dropped - o.dropped, c.overflows - o.overflows}
}

// nodesCPU is the CPU time the nodes' processes have used, user and
// system, from /proc/PID/stat (in USER_HZ ticks, 100 a second on Linux).
func nodesCPU(t *testing.T, nodes []*nodeProc) time.Duration {
	t.Helper()
	var ticks int64
	for _, p := range nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		// the fields after the command's closing parenthesis, state first:
		// utime and stime are the 12th and 13th
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		for _, s := range f[11:13] {
			var v int64
			if _, err := fmt.Sscan(s, &v); err != nil {
				t.Fatalf("/proc/%d/stat: %v", p.cmd.Process.Pid, err)
			}
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// quantile is the nearest-rank q-quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
