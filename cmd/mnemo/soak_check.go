package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// check waits for the nodes to agree on the team namespace, looks every
// acknowledged save up on every node, judges the RSS samples and prints
// the figures. Each failed check adds to s.failures.
func (s *soak) check(ctx context.Context, writesEnded time.Time) error {
	s.mu.Lock()
	lastFault := s.lastFaultEnd
	acks := slices.Clone(s.acks)
	s.mu.Unlock()
	if lastFault.IsZero() {
		lastFault = writesEnded
	}
	digest, agreed := s.agreed(ctx, s.cfg.Settle)
	agreedAt := time.Now()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	records := make([]int, len(s.nodes))
	for i, n := range s.nodes {
		_, records[i] = s.api.digest(ctx, n, soakNS)
	}
	latest := lastAcked(acks)
	missing := make([][]soakAck, len(s.nodes))
	for i, n := range s.nodes {
		p := n.current()
		var ex struct {
			Memories []struct {
				ID    string `json:"id"`
				Title string `json:"title"`
			} `json:"memories"`
		}
		if err := s.api.call(ctx, p.url, n.token, "GET", "/v1/export?namespace="+url.QueryEscape(soakNS), nil, http.StatusOK, &ex); err != nil {
			return fmt.Errorf("export %s from %s: %w", soakNS, n.name, err)
		}
		have := make(map[string]int, len(ex.Memories)) // id -> the write its copy holds
		for _, m := range ex.Memories {
			if k, ok := soakVersion(m.Title); ok {
				have[m.ID] = k
			} else {
				have[m.ID] = -1
			}
		}
		missing[i] = lostOn(latest, have)
	}
	s.report(acks, lastFault, writesEnded, agreedAt, digest, agreed, records, missing)
	return nil
}

func (s *soak) report(acks []soakAck, lastFault, writesEnded, agreedAt time.Time, digest string, agreed bool, records []int, missing [][]soakAck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.out
	fail := func(ok bool) string {
		if ok {
			return ""
		}
		s.failures++
		return "   <- FAIL"
	}
	agents := s.cfg.Nodes * s.cfg.Agents
	ran := writesEnded.Sub(s.start)
	fmt.Fprintln(w, "figures")
	fmt.Fprintf(w, "  duration            %v of writes and faults, %d nodes, seed %d\n", ran.Round(100*time.Millisecond), s.cfg.Nodes, s.cfg.Seed)
	fmt.Fprintf(w, "  saves acknowledged  %d by %d agents (%.2f/s per agent)%s\n", len(acks), agents, float64(len(acks))/ran.Seconds()/float64(agents), fail(len(acks) > 0))
	var other []string
	for _, code := range slices.Sorted(maps.Keys(s.answers)) {
		other = append(other, fmt.Sprintf("%d x HTTP %d", s.answers[code], code))
	}
	if len(other) == 0 {
		other = []string{"none"}
	}
	fmt.Fprintf(w, "  not acknowledged    %d unreachable (node down, stopped or restarting); other answers: %s\n", s.unreachable, strings.Join(other, ", "))
	total := 0
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(s.faults)) {
		total += s.faults[k]
		kinds = append(kinds, fmt.Sprintf("%d %s", s.faults[k], k))
	}
	fmt.Fprintf(w, "  faults injected     %d: %s\n", total, strings.Join(kinds, "; "))
	if agreed {
		fmt.Fprintf(w, "  digests agree       yes, %v after the last fault healed, %v after the last write (%s: %v records)\n",
			agreedAt.Sub(lastFault).Round(time.Millisecond), agreedAt.Sub(writesEnded).Round(time.Millisecond), digest, records)
	} else {
		fmt.Fprintf(w, "  digests agree       no, not within %v of the last write (records per node %v)%s\n", s.cfg.Settle, records, fail(false))
	}
	lost := 0
	for _, m := range missing {
		lost = max(lost, len(m))
	}
	fmt.Fprintf(w, "  lost writes         %d (%d acknowledged writes, to %d memories, looked up on each of %d nodes)%s\n", lost, len(acks), len(lastAcked(acks)), len(s.nodes), fail(lost == 0))
	for i, m := range missing {
		if len(m) == 0 {
			continue
		}
		var ids []string
		for _, a := range m[:min(len(m), 5)] {
			ids = append(ids, fmt.Sprintf("%s by %s (write %d)", a.id, a.agent, a.version))
		}
		fmt.Fprintf(w, "    %s lacks %d, e.g. %s\n", s.nodes[i].name, len(m), strings.Join(ids, ", "))
	}
	fmt.Fprintf(w, "  RSS                 per node process: at %v of its life, max after, drift (bound %.0f%%); anon = heap and stacks, the rest mapped files;\n"+
		"                      then, not judged, the Go heap the last collection found live, and its floor (least) in the first and last minute\n", s.cfg.RSSWarm, s.cfg.RSSDrift*100)
	for _, n := range s.nodes {
		n.mu.Lock()
		for k, inc := range n.incs {
			from := max(inc.started.Sub(s.start), 0).Round(time.Second)
			end := inc.ended
			if end.IsZero() || end.After(writesEnded) {
				end = writesEnded
			}
			to := end.Sub(s.start).Round(time.Second)
			base, peak, drift, ok := rssDrift(inc.rss, s.cfg.RSSWarm)
			anon := func(kib int64) float64 { // the anonymous part of the first sample of kib
				i := slices.IndexFunc(inc.rss, func(r rssSample) bool { return r.age >= s.cfg.RSSWarm && r.kib == kib })
				return float64(inc.rss[i].anon) / 1024
			}
			if !ok {
				fmt.Fprintf(w, "    %s #%d  %v-%v  lived under %v: not judged\n", n.name, k+1, from, to, s.cfg.RSSWarm)
				continue
			}
			fmt.Fprintf(w, "    %s #%d  %v-%v  %.1f MiB (%.1f anon), max %.1f MiB (%.1f anon), drift %+.1f%%%s\n", n.name, k+1, from, to,
				float64(base)/1024, anon(base), float64(peak)/1024, anon(peak), drift*100, fail(math.Abs(drift) <= s.cfg.RSSDrift))
			if lb, lp, ld, ok := liveDrift(inc.rss, s.cfg.RSSWarm); ok {
				fmt.Fprintf(w, "          live heap %.1f MiB, max %.1f MiB, drift %+.1f%%", float64(lb)/1024, float64(lp)/1024, ld*100)
				if first, last, ok := liveFloor(inc.rss, s.cfg.RSSWarm, time.Minute); ok {
					fmt.Fprintf(w, "; floor %.1f -> %.1f MiB (%+.1f%%)", float64(first)/1024, float64(last)/1024, 100*float64(last-first)/float64(first))
				}
				fmt.Fprintln(w)
			}
		}
		n.mu.Unlock()
	}
}

// lastAcked is, for each memory written, its last acknowledged write
// (the highest number: an agent's writes to one memory are in order), in
// the order the memories were first acknowledged.
func lastAcked(acks []soakAck) []soakAck {
	at := map[string]int{}
	var out []soakAck
	for _, a := range acks {
		i, ok := at[a.id]
		switch {
		case !ok:
			at[a.id] = len(out)
			out = append(out, a)
		case a.version > out[i].version:
			out[i] = a
		}
	}
	return out
}

// lostOn is the acknowledged writes a node's copy lacks: have maps each
// memory it holds to the write its copy holds (-1 if its title names none).
// A copy holding a later write than the last acknowledged one has it too
// (a later write may be applied and not acknowledged).
func lostOn(latest []soakAck, have map[string]int) []soakAck {
	var out []soakAck
	for _, a := range latest {
		if k, ok := have[a.id]; !ok || k < a.version {
			out = append(out, a)
		}
	}
	return out
}

// rssDrift judges one process's samples: the baseline is the first sample
// at least warm old; drift is the sample after it farthest from it, as a
// signed fraction of it; peak the largest after it. ok is false when no
// sample is that old.
func rssDrift(samples []rssSample, warm time.Duration) (base, peak int64, drift float64, ok bool) {
	i := slices.IndexFunc(samples, func(r rssSample) bool { return r.age >= warm })
	if i < 0 {
		return 0, 0, 0, false
	}
	base, peak = samples[i].kib, samples[i].kib
	for _, r := range samples[i+1:] {
		peak = max(peak, r.kib)
		if d := float64(r.kib-base) / float64(base); math.Abs(d) > math.Abs(drift) {
			drift = d
		}
	}
	return base, peak, drift, true
}

// liveDrift is rssDrift of the live heap: from the first sample at least
// warm old that read it, over the later ones that did. A Go process's RSS
// moves with its collector's pace (the heap fills toward the goal between
// collections), so a node holding the same data swung 41 -> 72 MiB while
// its live heap stayed at 19-21 MB (README, "Soak"); the live heap is the
// figure that tells a leak.
func liveDrift(samples []rssSample, warm time.Duration) (base, peak int64, drift float64, ok bool) {
	var live []rssSample
	for _, r := range samples {
		if r.live > 0 {
			live = append(live, rssSample{age: r.age, kib: r.live})
		}
	}
	return rssDrift(live, warm)
}

// liveFloor is the least live heap read in the first span after warm and
// in the last span of the samples (ok false if the two would overlap).
// Badger's memtables come and go (two arenas of ~10 MiB while one is
// flushed), so the live heap's most swings by that much; a leak raises
// its floor.
func liveFloor(samples []rssSample, warm, span time.Duration) (first, last int64, ok bool) {
	var live []rssSample
	for _, r := range samples {
		if r.live > 0 && r.age >= warm {
			live = append(live, r)
		}
	}
	if len(live) == 0 || live[len(live)-1].age-live[0].age < 2*span {
		return 0, 0, false
	}
	start, end := live[0].age, live[len(live)-1].age
	for _, r := range live {
		if r.age < start+span && (first == 0 || r.live < first) {
			first = r.live
		}
		if r.age > end-span && (last == 0 || r.live < last) {
			last = r.live
		}
	}
	return first, last, true
}

// profileHeap writes a heap profile of n's process inc (whose RSS sample
// is kib) into HeapDir when the sample is its baseline or passes the
// drift bound by another tenth over the last profile, so a run that
// drifts leaves the profiles that say what grew. A profile that cannot
// be fetched (the process paused or gone) is logged and skipped.
func (s *soak) profileHeap(ctx context.Context, n *soakNode, inc *soakIncarnation, kib int64) {
	n.mu.Lock()
	base, _, _, ok := rssDrift(inc.rss, s.cfg.RSSWarm)
	last, k, tok, proc, paused := inc.profile, len(n.incs), n.token, n.proc, n.paused
	n.mu.Unlock()
	bound := float64(base) * (1 + s.cfg.RSSDrift)
	if !ok || proc == nil || paused || (last != 0 && (float64(kib) <= bound || float64(kib) <= float64(last)*1.1)) {
		return
	}
	age := time.Since(inc.started).Round(time.Second)
	name := filepath.Join(s.cfg.HeapDir, fmt.Sprintf("%s-%d-%v-%dMiB.heap", n.name, k, age, kib/1024))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, "GET", proc.url+"/debug/pprof/heap", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := s.api.hc.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err == nil {
		var b []byte
		if b, err = io.ReadAll(resp.Body); err == nil {
			err = os.WriteFile(name, b, 0o600)
		}
	}
	if resp != nil {
		resp.Body.Close()
	}
	if err != nil {
		s.logf("%s: no heap profile at %.1f MiB: %v", n.name, float64(kib)/1024, err)
		return
	}
	n.mu.Lock()
	inc.profile = kib
	n.mu.Unlock()
	s.logf("%s: heap profile at %.1f MiB: %s", n.name, float64(kib)/1024, name)
}
