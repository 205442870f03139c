package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
)

const searchAbout = "search: opens a node in a new temporary data directory, as \"mnemo node\" runs\n" +
	"it, bulk-loads --memories generated memories through POST /v1/import (English-\n" +
	"like text: a 20k-word Zipf vocabulary, stopwords and technical words; title\n" +
	"4–8 words, content 40–120, 2–4 tags; --batch per request, spread over four\n" +
	"namespaces), then times GET /v1/search (limit 10) from one client over one\n" +
	"connection with seeded 2–3-word queries drawn as document words are:\n" +
	"--queries right after the load, --searches more, and --queries again after\n" +
	"--settle. Prints p50/p95/p99/max, the process's CPU time per search (node\n" +
	"and client: steadier than the latency on a shared machine), the collections\n" +
	"the runtime ran meanwhile (gcs: a search overlapping one is slower) and its resident\n" +
	"memory after the searches from /proc/self/status (with the share of Badger's\n" +
	"mapped files; then again right after the hand-back of their pages that the\n" +
	"node does every minute), under the soft memory limit mnemo node sets (the\n" +
	"client's share is small: it keeps one batch at a time; the import's garbage\n" +
	"is the node's own). The directory is removed\n" +
	"afterwards unless --data names one; a --data directory that already holds\n" +
	"a node is searched as it is, without loading (to compare builds on the\n" +
	"same data). --trace FILE writes one line per search (its row, start,\n" +
	"latency and the collections that ended during it) to line searches up\n" +
	"against the collector or Badger's log."

// runBenchSearch is "mnemo bench search".
func runBenchSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench search", "[flags]", searchAbout, stdout, stderr)
	memories := fs.Int("memories", 100_000, "how many memories to load")
	queries := fs.Int("queries", 500, "searches timed right after the load and again after --settle")
	searches := fs.Int("searches", 2000, "searches between the two timed runs (timed too), before resident memory is read")
	batch := fs.Int("batch", 5000, "memories per import request")
	settle := fs.Duration("settle", 20*time.Second, "idle time before the last timed run (background compactions)")
	dir := fs.String("data", "", "data `DIR` to use (default a new temporary directory, removed after)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed searches to `FILE` (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a heap profile to `FILE` when resident memory is read (go tool pprof)")
	tracePath := fs.String("trace", "", "write each search's row, start (µs since the first search), latency (µs) and collections ended during it to `FILE`")
	memLimit := fs.String("memory-limit", "", "soft memory limit as \"mnemo node --memory-limit\" takes it (default "+defaultMemoryLimit+", as the node runs)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	if *memories < 1 || *queries < 1 || *searches < 0 || *batch < 1 || *settle < 0 {
		return usageError(stderr, fs, "--memories, --queries and --batch must be positive, --searches and --settle not negative")
	}
	limit, err := memoryLimit(*memLimit)
	if err != nil {
		return usageError(stderr, fs, "--memory-limit: %v", err)
	}
	reuse := false
	if *dir != "" {
		if ents, err := os.ReadDir(*dir); err == nil && len(ents) > 0 {
			reuse = true
		}
	}
	n, err := openBenchNode(ctx, *dir)
	if err != nil {
		return failed(stderr, fs, err)
	}
	defer n.close()
	// As mnemo node does once open: the resident figure is then the node's,
	// not that of a process collecting at GOGC alone.
	defer applyMemoryLimit(ctx, limit)()
	b := &searchBench{base: n.Addr(), token: n.Token(), hc: &http.Client{Timeout: time.Minute}}
	if *tracePath != "" {
		f, err := os.Create(*tracePath)
		if err != nil {
			return failed(stderr, fs, err)
		}
		b.trace = bufio.NewWriter(f)
		fmt.Fprintln(b.trace, "row\tsearch\tstart_us\tlatency_us\tgcs")
		defer func() {
			if err := b.trace.Flush(); err != nil {
				fmt.Fprintf(stderr, "bench search: --trace: %v\n", err)
			}
			f.Close()
		}()
	}
	fmt.Fprintf(stdout, "search over GET /v1/search (%s), GOMAXPROCS=%d\n", n.Addr(), runtime.GOMAXPROCS(0))

	first := "right after the load"
	if reuse {
		first = "reopened, first"
		fmt.Fprintf(stdout, "searching the node in %s as it is (not loaded)\n\n", *dir)
	} else {
		t0 := time.Now()
		if err := b.load(ctx, newTextGen(1), *memories, *batch); err != nil {
			return failed(stderr, fs, err)
		}
		fmt.Fprintf(stdout, "loaded %d memories in %v (%d per import)\n\n", *memories, time.Since(t0).Round(time.Millisecond), *batch)
	}

	stopProfile, err := startProfiles(*cpuProfile, "") // sim.go
	if err != nil {
		return failed(stderr, fs, err)
	}
	defer stopProfile()
	qs := newTextGen(1).queryGen(2)
	row := "%-22s %7s %8s %8s %8s %8s %10s %9s %4s\n"
	fmt.Fprintf(stdout, row, "run", "queries", "p50", "p95", "p99", "max", "cpu/search", "mean hits", "gcs")
	report := func(name string, count int) error {
		b.row = name
		r, err := b.run(ctx, qs, count)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, row, name, strconv.Itoa(r.n), ms(r.p50), ms(r.p95), ms(r.p99), ms(r.max),
			fmt.Sprintf("%.0fµs", float64(r.cpu)/float64(time.Microsecond)/float64(max(r.n, 1))), fmt.Sprintf("%.0f", r.meanTotal), strconv.FormatUint(r.gcs, 10))
		return nil
	}
	if err := report(first, *queries); err != nil {
		return failed(stderr, fs, err)
	}
	if *searches > 0 {
		if err := report("then", *searches); err != nil {
			return failed(stderr, fs, err)
		}
	}
	mem := procMemory()
	badgerFiles := mappedKiB(n.Dir()) / 1024
	rt := runtimeMemory()
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			return failed(stderr, fs, err)
		}
	}
	select {
	case <-time.After(*settle):
	case <-ctx.Done():
		return failed(stderr, fs, ctx.Err())
	}
	if err := report(fmt.Sprintf("after %v idle", *settle), *queries); err != nil {
		return failed(stderr, fs, err)
	}
	fmt.Fprintf(stdout, "\nresident memory after %d searches: VmRSS %.1f MiB = RssAnon %.1f MiB + RssFile %.1f MiB (of which Badger's files %.1f MiB; + RssShmem %.1f MiB); VmHWM %.1f MiB\n",
		*queries+*searches, mem["VmRSS"], mem["RssAnon"], mem["RssFile"], badgerFiles, mem["RssShmem"], mem["VmHWM"])
	lim := "off"
	if rt.limit < 1<<30 {
		lim = fmt.Sprintf("%.1f MiB", rt.limit)
	}
	fmt.Fprintf(stdout, "the runtime then: soft limit %s, live heap %.1f MiB, its own overhead %.1f MiB (heap spans' unused room, metadata, stacks: counted against the limit)\n",
		lim, rt.live, rt.overhead)
	// The node unmaps the pages of Badger's files it has read every
	// minute (node.SweepInterval); this is the process right after that.
	n.Service().Store().ReleaseFilePages()
	mem = procMemory()
	fmt.Fprintf(stdout, "after the node's hand-back of Badger's file pages: VmRSS %.1f MiB = RssAnon %.1f MiB + RssFile %.1f MiB (of which Badger's files %.1f MiB)\n",
		mem["VmRSS"], mem["RssAnon"], mem["RssFile"], mappedKiB(n.Dir())/1024)
	return exitOK
}

// searchBench drives a node's import and search routes.
type searchBench struct {
	base, token string
	hc          *http.Client
	// body holds the last answer read (do): the client runs in the node's
	// process, and a new buffer per answer (io.ReadAll) was garbage the
	// node's collector paid for.
	body bytes.Buffer
	// trace, when not nil, gets a line per search (--trace), labelled
	// with row; t0 is the first search's start.
	trace *bufio.Writer
	row   string
	t0    time.Time
}

// load imports count memories from g in batches, spread over four
// namespaces, created one second apart and ending an hour ago.
func (b *searchBench) load(ctx context.Context, g *textGen, count, batch int) error {
	nss := []string{"", "", "subagent/build", "subagent/research"}
	start := time.Now().Add(-time.Hour - time.Duration(count)*time.Second).Truncate(time.Second)
	for i, k := 0, 0; i < count; k++ {
		ex := memapi.Export{Format: "mnemo-export", Version: 1, ExportedAt: time.Now()}
		for ; i < count && len(ex.Memories) < batch; i++ {
			ex.Memories = append(ex.Memories, g.memory(i, start.Add(time.Duration(i)*time.Second)))
		}
		body, err := json.Marshal(ex)
		if err != nil {
			return err
		}
		q := url.Values{"namespace": {nss[k%len(nss)]}}
		if _, err := b.do(ctx, http.MethodPost, "/v1/import?"+q.Encode(), body); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return nil
}

type searchResult struct {
	benchResult
	meanTotal float64
	gcs       uint64 // collections the process ran meanwhile
}

// run times count searches from qs, one after another.
func (b *searchBench) run(ctx context.Context, qs *textGen, count int) (searchResult, error) {
	lats := make([]time.Duration, 0, count)
	totals := 0
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(gc)
	gc0 := gc[0].Value.Uint64()
	cpu0 := cpuTime()
	for i := range count {
		q := url.Values{"q": {qs.query()}, "limit": {"10"}}
		var gcsBefore uint64
		if b.trace != nil {
			metrics.Read(gc)
			gcsBefore = gc[0].Value.Uint64()
		}
		t0 := time.Now()
		body, err := b.do(ctx, http.MethodGet, "/v1/search?"+q.Encode(), nil)
		lats = append(lats, time.Since(t0))
		if b.trace != nil {
			if b.t0.IsZero() {
				b.t0 = t0
			}
			metrics.Read(gc)
			fmt.Fprintf(b.trace, "%s\t%d\t%d\t%d\t%d\n", b.row, i, t0.Sub(b.t0).Microseconds(), lats[len(lats)-1].Microseconds(), gc[0].Value.Uint64()-gcsBefore)
		}
		if err != nil {
			return searchResult{}, fmt.Errorf("search %q: %w", q.Get("q"), err)
		}
		// The total is read without decoding the hits, to keep the
		// client's share of the CPU time small.
		if i := bytes.LastIndex(body, []byte(`"total":`)); i >= 0 {
			rest := body[i+len(`"total":`):]
			if j := bytes.IndexAny(rest, ",}"); j > 0 {
				v, _ := strconv.Atoi(string(rest[:j]))
				totals += v
			}
		}
	}
	cpu := cpuTime() - cpu0
	metrics.Read(gc)
	slices.Sort(lats)
	at := func(p float64) time.Duration { return lats[int(float64(len(lats)-1)*p)] }
	r := searchResult{benchResult: benchResult{n: len(lats), cpu: cpu, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: lats[len(lats)-1]},
		meanTotal: float64(totals) / float64(len(lats)), gcs: gc[0].Value.Uint64() - gc0}
	return r, nil
}

// do sends a request and returns the answer's body, valid until the next
// call.
func (b *searchBench) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b.body.Reset()
	if _, err := b.body.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	out := b.body.Bytes()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(out))
	}
	return out, nil
}

// runtimeFigures is what the Go runtime holds, in MiB.
type runtimeFigures struct {
	limit, live, overhead float64
}

// runtimeMemory reads the soft memory limit, the live heap as of the last
// collection, and the runtime's own overhead: what it counts against the
// limit besides objects and free pages (the unused room in heap spans,
// metadata, stacks). After Badger's compactions the overhead was ~27 MiB
// against ~17 settled (issue 15), which under an 80 MiB limit leaves the
// collector no room.
func runtimeMemory() runtimeFigures {
	s := []metrics.Sample{{Name: "/gc/gomemlimit:bytes"}, {Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	v := make([]float64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = float64(s[i].Value.Uint64()) / (1 << 20)
		}
	}
	return runtimeFigures{limit: v[0], live: v[1], overhead: v[2] - v[3] - v[4] - v[5]}
}

// writeHeapProfile writes the live heap as of the last collection to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// mappedKiB is the resident size of this process's mappings of files
// under dir (/proc/self/smaps), in KiB; 0 where there is no /proc.
func mappedKiB(dir string) float64 {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return 0
	}
	prefix := abs + string(filepath.Separator)
	var kib float64
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && !strings.HasSuffix(f[0], ":"): // a mapping's header: range perms offset dev inode [path]
			in = len(f) >= 6 && strings.HasPrefix(f[5], prefix)
		case in && len(f) == 3 && f[0] == "Rss:":
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				kib += v
			}
		}
	}
	return kib
}

// procMemory reads this process's memory figures from /proc/self/status,
// in MiB; empty where there is no /proc.
func procMemory() map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[k] = kb / 1024
			}
		}
	}
	return out
}
