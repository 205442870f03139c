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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// scalePollEvery is how often each node is asked whether a save has become
// searchable there. It bounds the resolution of the propagation figure;
// smaller means more search requests competing with the nodes for the CPU.
const scalePollEvery = 5 * time.Millisecond

// TestE2ETwentyNodes is issue 14's multi-process test: twenty real `mnemo
// node` processes on loopback, all joining the first, share one team
// namespace. Saves are made one at a time on four writers; each must become
// searchable on the nineteen other nodes, and the namespace's digests agree
// on all twenty at the end. It logs how long each save took from its 201 to
// searchable on each other node and on all of them (p50/p99, the README's
// figure) and the nodes' summed resident memory; it asserts no bound on
// times, the machine being shared. Twenty processes are heavy, so it runs
// only with MNEMO_SCALE_TEST=1 (MNEMO_SCALE_SAVES changes the number of
// saves, default 50):
//
//	MNEMO_SCALE_TEST=1 go test -count=1 -run TestE2ETwentyNodes -v -timeout 20m ./cmd/mnemo/
func TestE2ETwentyNodes(t *testing.T) {
	if os.Getenv("MNEMO_SCALE_TEST") != "1" {
		t.Skip("twenty node processes: set MNEMO_SCALE_TEST=1 to run (MNEMO_SCALE_TEST=1 go test -count=1 -run TestE2ETwentyNodes -v -timeout 20m ./cmd/mnemo/)")
	}
	const n = 20
	saves := 50
	if v := os.Getenv("MNEMO_SCALE_SAVES"); v != "" {
		if _, err := fmt.Sscan(v, &saves); err != nil || saves <= 0 {
			t.Fatalf("MNEMO_SCALE_SAVES=%q: want a positive count", v)
		}
	}
	keyFile := filepath.Join(t.TempDir(), "cluster.key")
	r := cli(t, "", cleanEnv(t), "cluster-key").ok(t, "cluster-key")
	if err := os.WriteFile(keyFile, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	nodes := make([]*nodeProc, n)
	nodes[0] = startNode(t, t.TempDir(), scaleAgent(0), "--cluster-key", keyFile)
	for i := 1; i < n; i++ {
		nodes[i] = startNode(t, t.TempDir(), scaleAgent(i), "--cluster-key", keyFile, "--join", nodes[0].gossip)
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
	var perNode, toAll []time.Duration
	var ids []string
	for k := range saves {
		w := k % 4 * (n / 4) // writers 0, 5, 10 and 15 in turn
		word := fmt.Sprintf("scaleprobe%04d", k)
		lat, id := measurePropagation(t, client, nodes, w, ns, word)
		ids = append(ids, id)
		perNode = append(perNode, lat...)
		toAll = append(toAll, slices.Max(lat))
	}

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
	slices.Sort(perNode)
	slices.Sort(toAll)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	t.Logf("save -> searchable on one other node (%d samples): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		len(perNode), ms(quantile(perNode, 0.50)), ms(quantile(perNode, 0.99)), ms(perNode[len(perNode)-1]))
	t.Logf("save -> searchable on all %d other nodes (%d saves): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		n-1, len(toAll), ms(quantile(toAll, 0.50)), ms(quantile(toAll, 0.99)), ms(toAll[len(toAll)-1]))
	t.Logf("resident memory of the %d nodes at the end: %.0f MiB (sum of VmRSS), %.0f MiB (sum of VmHWM)", n, rss, hwm)
	fmt.Printf("scale nodes=%d saves=%d poll_ms=%g node_p50_ms=%.1f node_p99_ms=%.1f all_p50_ms=%.1f all_p99_ms=%.1f all_max_ms=%.1f rss_mib=%.0f hwm_mib=%.0f\n",
		n, len(toAll), ms(scalePollEvery), ms(quantile(perNode, 0.50)), ms(quantile(perNode, 0.99)),
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
// word there that finds it. Every node is asked every scalePollEvery, all at
// once; a node that has not found it within waitLimit fails the test.
func measurePropagation(t *testing.T, client *http.Client, nodes []*nodeProc, w int, ns, word string) ([]time.Duration, string) {
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
			d, err := pollSearchable(ctx, client, p, word, id, saved)
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

// pollSearchable searches p for word every scalePollEvery until the result
// holds id, and returns the time since saved at which it did.
func pollSearchable(ctx context.Context, client *http.Client, p *nodeProc, word, id string, saved time.Time) (time.Duration, error) {
	tick := time.NewTicker(scalePollEvery)
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

// quantile is the nearest-rank q-quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
