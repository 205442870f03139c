package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mnemohq/mnemo/node/memapi"
)

// runBench measures a real node: durable saves over its HTTP API, search
// latency and resident memory at scale (bench_search.go), or retrieval
// quality on LoCoMo conversations (bench_recall.go).
func runBench(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "recall" {
		return runBenchRecall(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "search" {
		return runBenchSearch(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("bench", "saves [flags]",
		"saves: opens a node in a new temporary data directory (Badger, every commit\n"+
			"synced, as \"mnemo node\" runs it), serves its HTTP API on a free loopback\n"+
			"port, and drives POST /v1/memories from N concurrent clients for the\n"+
			"duration, once per client count. Prints saves/s, latency percentiles (each\n"+
			"save is acknowledged only once durable) and the process's CPU time per save\n"+
			"(node and clients: steadier than the rate on a shared machine). The\n"+
			"directory is removed afterwards unless --data names one.", stdout, stderr)
	clients := fs.String("clients", "1,8,32", "comma-separated client `COUNTS`, one run each")
	dur := fs.Duration("duration", 10*time.Second, "how long each run saves")
	warm := fs.Duration("warmup", time.Second, "saves before each run that are not measured")
	dir := fs.String("data", "", "data `DIR` to use (default a new temporary directory, removed after)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured runs to `FILE` (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write the allocations made (heap profile, sample_index=alloc_space) to `FILE` when the runs end (go tool pprof)")
	blockProfile := fs.String("blockprofile", "", "write a profile of where goroutines waited (channels, locks, every wait of 10µs or more) to `FILE` (go tool pprof)")
	mutexProfile := fs.String("mutexprofile", "", "write a profile of contended mutexes to `FILE` (go tool pprof)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 || pos[0] != "saves" {
		return usageError(stderr, fs, "takes one argument, the workload: saves (or search or recall, first: mnemo bench search -h)")
	}
	var counts []int
	for _, f := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return usageError(stderr, fs, "--clients: %q is not a count from 1 to 4096", f)
		}
		counts = append(counts, n)
	}
	if *dur <= 0 || *warm < 0 {
		return usageError(stderr, fs, "--duration must be positive and --warmup not negative")
	}
	n, err := openBenchNode(ctx, *dir)
	if err != nil {
		return failed(stderr, fs, err)
	}
	defer n.close()
	stopProfile, err := startProfiles(*cpuProfile, *memProfile) // sim.go
	if err != nil {
		return failed(stderr, fs, err)
	}
	defer stopProfile()
	stopWaits := startWaitProfiles(*blockProfile, *mutexProfile)
	defer func() {
		if err := stopWaits(); err != nil {
			fmt.Fprintln(stderr, "mnemo bench:", err)
		}
	}()
	fmt.Fprintf(stdout, "durable saves over HTTP (%s), GOMAXPROCS=%d, %v per run\n", n.Addr(), runtime.GOMAXPROCS(0), *dur)
	row := "%7s %8s %8s %9s %9s %9s %9s %9s\n"
	fmt.Fprintf(stdout, row, "clients", "saves", "saves/s", "p50", "p95", "p99", "max", "cpu/save")
	b := &saveBench{url: n.Addr() + "/v1/memories", token: n.Token()}
	for _, c := range counts {
		if *warm > 0 {
			if _, err := b.run(ctx, c, *warm); err != nil {
				return failed(stderr, fs, err)
			}
		}
		r, err := b.run(ctx, c, *dur)
		if err != nil {
			return failed(stderr, fs, err)
		}
		fmt.Fprintf(stdout, row, strconv.Itoa(c), strconv.Itoa(r.n), fmt.Sprintf("%.0f", r.rate), ms(r.p50), ms(r.p95), ms(r.p99), ms(r.max),
			fmt.Sprintf("%.0fµs", float64(r.cpu)/float64(time.Microsecond)/float64(max(r.n, 1))))
	}
	return exitOK
}

// startWaitProfiles turns on the block profile (waits of 10µs or more)
// and the mutex profile (every contention) when their file is named, and
// returns what writes them and turns them off again.
func startWaitProfiles(blockFile, mutexFile string) (stop func() error) {
	if blockFile != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	}
	if mutexFile != "" {
		runtime.SetMutexProfileFraction(1)
	}
	write := func(name, file string) error {
		if file == "" {
			return nil
		}
		f, err := os.Create(file)
		if err != nil {
			return err
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return func() error {
		err := errors.Join(write("block", blockFile), write("mutex", mutexFile))
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
		return err
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// saveBench drives a node's save route.
type saveBench struct {
	url, token string
	seq        uint64 // distinguishes the runs' random streams
}

type benchResult struct {
	n                  int
	rate               float64 // saves per second
	p50, p95, p99, max time.Duration
	// cpu is the process's CPU time (user and system) over the run, node
	// and clients together: on a shared machine a steadier measure than
	// the rate, whose ceiling on idle cores it bounds.
	cpu time.Duration
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run saves from clients goroutines, each with its own connection, for
// dur, and times every save from request to response.
func (b *saveBench) run(ctx context.Context, clients int, dur time.Duration) (benchResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	lats := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(dur)
	b.seq++
	cpu0 := cpuTime()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(b.seq, uint64(i)))
			for k := 0; time.Now().Before(deadline) && ctx.Err() == nil; k++ {
				body, _ := json.Marshal(benchSave(rng, i, k))
				t0 := time.Now()
				if err := b.save(ctx, hc, body); err != nil {
					errs[i] = err
					return
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	if err := errors.Join(errs...); err != nil {
		return benchResult{}, err
	}
	all := slices.Concat(lats...)
	slices.Sort(all)
	r := benchResult{n: len(all), rate: float64(len(all)) / elapsed.Seconds(), cpu: cpu}
	if len(all) > 0 {
		at := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)] }
		r.p50, r.p95, r.p99, r.max = at(0.50), at(0.95), at(0.99), all[len(all)-1]
	}
	return r, ctx.Err()
}

func (b *saveBench) save(ctx context.Context, hc *http.Client, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("save: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// benchWords make the saves' text: realistic lengths, searchable words.
var benchWords = strings.Fields(`badger compaction latency fsync memtable replica gossip quic
	token namespace grant projection capsule digest context session decision pattern
	observation preference summary index search query schema record delta seal clock
	agent sidecar cluster member queue batch commit durable write read cache budget`)

// benchSave is client i's k-th save: a title, a few sentences, some tags.
func benchSave(rng *rand.Rand, i, k int) memapi.SaveRequest {
	words := func(n int) string {
		w := make([]string, n)
		for j := range w {
			w[j] = benchWords[rng.IntN(len(benchWords))]
		}
		return strings.Join(w, " ")
	}
	types := []string{"observation", "decision", "pattern", "preference"}
	return memapi.SaveRequest{
		Type:    types[rng.IntN(len(types))],
		Title:   fmt.Sprintf("client %d save %d: %s", i, k, words(4)),
		Content: words(30 + rng.IntN(40)),
		Tags:    []string{benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))]},
	}
}
