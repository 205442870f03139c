package main

// mnemo soak: a real cluster of `mnemo node` processes under sustained
// writes and faults, then checked. Decisions:
//
//   - Several agents per node: each node's owner agent writes with the
//     owner token; the others are principals the node issues tokens for
//     (POST /v1/tokens, as `mnemo token issue --principal` does), so each
//     is bound to and advertised by its node like a real sidecar's agents.
//     The first node creates team://soak and grants every agent read and
//     write; the writers start once every node agrees on its digest.
//   - A save counts only when acknowledged (201 with an id). One whose node
//     is down, stopped or restarting is "unreachable", not lost; one the
//     node did not answer in time may still be applied, and then is simply
//     an extra record.
//   - With --keep N each agent saves N memories and then overwrites them
//     in turn (PATCH of title and content, acknowledged by 200), so the
//     namespace stops growing at NODES x AGENTS x N memories. Without it
//     every write is a new memory and the namespace grows tenfold in ten
//     minutes, and what a process grows to is its data (README, "Soak"):
//     the RSS bound then cannot tell a leak from the data. Each write's
//     title carries its number in the agent's writes; an overwrite is lost
//     if a node's copy of that memory holds an earlier number than the
//     last one acknowledged (a later unacknowledged one may have been
//     applied).
//   - Faults come one at a time from a seeded script: kill -9 and a restart
//     on ports the OS picks (same data directory, so the same key and
//     tokens), joining a random live node; or SIGSTOP for PauseMin..PauseMax
//     then SIGCONT, which cuts and heals every link of that node at once.
//     Cutting one link between two nodes would need each node in its own
//     network namespace joined by veth pairs; `unshare -rn` gives an
//     unprivileged user a namespace here, but wiring five of them together
//     is left for later.
//   - RSS is sampled from /proc/PID/status. Each process (incarnation) is
//     judged on its own: its baseline is its first sample at least RSSWarm
//     old, and it must stay within RSSDrift of it; one that lived less is
//     not judged. The node's live heap (go_gc_heap_live_bytes of its
//     /metrics) is sampled with it and printed, not judged: a Go process's
//     RSS moves with its collector's pace, and the live heap's floor is
//     what a leak raises (soak_check.go, liveFloor).
//   - At the end the faults are healed, the writers stopped, and the check
//     waits (bounded) for equal digests, then reads the namespace's export
//     from every node and looks each acknowledged id up in it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/httpapi"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/sync/gossip"
)

// soakConfig is one soak run. Zero values are not defaults: runSoak's
// flags give them.
type soakConfig struct {
	Bin        string        // the mnemo binary the nodes run
	Dir        string        // where the nodes' data goes ("" a new temporary directory)
	Nodes      int           // node processes
	Agents     int           // writing principals per node: the owner agent and Agents-1 with issued tokens
	Rate       float64       // saves per second per agent
	For        time.Duration // how long the writers and the faults run
	FaultEvery time.Duration // quiet time between one fault's end and the next's start
	DownMax    time.Duration // a killed node stays down a random time up to this
	PauseMin   time.Duration // a paused node stays stopped between PauseMin and PauseMax
	PauseMax   time.Duration
	RSSEvery   time.Duration // between RSS samples
	RSSWarm    time.Duration // an incarnation's RSS baseline is its first sample this old
	RSSDrift   float64       // allowed drift from the baseline, as a fraction
	HeapDir    string        // where heap profiles of processes past the bound go ("" = none taken)
	Settle     time.Duration // bound on the wait for equal digests at the end
	Keep       int           // memories per agent, overwritten in turn once saved (0: every write a new memory)
	Seed       uint64
}

// soakNS is the team namespace every agent writes.
const soakNS = "team://soak"

// saveTimeout bounds one save: a stopped node holds its writers no longer.
const saveTimeout = 10 * time.Second

func runSoak(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("soak", "[flags]",
		"Runs NODES real `mnemo node` processes (this binary) on loopback ports the OS\n"+
			"picks, joined into one cluster with a fresh cluster key, data in a temporary\n"+
			"directory (kept, and its path printed, when a check fails). Every node hosts\n"+
			"AGENTS principals (its owner agent and tokens issued for the others); each\n"+
			"saves into team://soak at RATE per second for the duration, while a seeded\n"+
			"fault script kills a node with kill -9 and restarts it on new ports, or\n"+
			"cuts all its links by SIGSTOP and heals them by SIGCONT. Then it waits for\n"+
			"equal digests and checks that every acknowledged save is on every node and\n"+
			"that each node process's RSS stayed within the bound of its level once it\n"+
			"was RSS-WARM old. Prints the figures; exits 1 if a check fails.", stdout, stderr)
	cfg := soakConfig{}
	fs.StringVar(&cfg.Bin, "bin", "", "the mnemo `BINARY` to run as nodes (default this one)")
	fs.StringVar(&cfg.Dir, "dir", "", "put the nodes' data in `DIR` and keep it (default a new temporary directory, removed when every check passes)")
	fs.IntVar(&cfg.Nodes, "nodes", 5, "node processes, `N`")
	fs.IntVar(&cfg.Agents, "agents", 3, "writing agents per node, `N`")
	fs.Float64Var(&cfg.Rate, "rate", 2, "saves per second per agent")
	fs.DurationVar(&cfg.For, "for", 10*time.Minute, "how long writers and faults run")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", 15*time.Second, "quiet time between faults")
	fs.DurationVar(&cfg.DownMax, "down-max", 5*time.Second, "a killed node restarts after a random time up to this")
	fs.DurationVar(&cfg.PauseMin, "pause-min", 10*time.Second, "shortest SIGSTOP")
	fs.DurationVar(&cfg.PauseMax, "pause-max", 30*time.Second, "longest SIGSTOP")
	fs.DurationVar(&cfg.RSSEvery, "rss-every", 5*time.Second, "between RSS samples")
	fs.DurationVar(&cfg.RSSWarm, "rss-warmup", time.Minute, "age of a node process at which its RSS baseline is taken")
	fs.Float64Var(&cfg.RSSDrift, "rss-drift", 0.20, "allowed RSS drift from the baseline, a fraction")
	fs.StringVar(&cfg.HeapDir, "heap-profiles", "", "write a heap profile of each node process into `DIR` at its RSS baseline and each time it passes\n"+
		"the bound by another tenth (go tool pprof -base BASELINE LATER tells what grew)")
	fs.DurationVar(&cfg.Settle, "settle", 2*time.Minute, "bound on the wait for equal digests after the faults")
	fs.IntVar(&cfg.Keep, "keep", 0, "each agent saves `N` memories, then overwrites them in turn, so the namespace stops growing\n"+
		"(default 0: every write a new memory)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "fault script seed (default from the clock; printed)")
	pos, code := parseArgs(fs, args, stdout)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", pos)
	}
	if cfg.Nodes < 2 || cfg.Nodes > 32 || cfg.Agents < 1 || cfg.Agents > 8 || cfg.Rate <= 0 || cfg.Rate > 1000 {
		return usageError(stderr, fs, "--nodes 2..32, --agents 1..8 and --rate in (0, 1000] please")
	}
	if cfg.For <= 0 || cfg.FaultEvery <= 0 || cfg.DownMax < 0 || cfg.PauseMin < 0 || cfg.PauseMax < cfg.PauseMin ||
		cfg.RSSEvery <= 0 || cfg.RSSWarm < 0 || cfg.Settle <= 0 || cfg.RSSDrift <= 0 {
		return usageError(stderr, fs, "durations must be positive (--pause-max at least --pause-min) and --rss-drift above 0")
	}
	if cfg.Keep < 0 || cfg.Keep > 1_000_000 {
		return usageError(stderr, fs, "--keep 0..1000000 please")
	}
	if cfg.HeapDir != "" {
		if err := os.MkdirAll(cfg.HeapDir, 0o700); err != nil {
			return failed(stderr, fs, err)
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if cfg.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return failed(stderr, fs, err)
		}
		cfg.Bin = exe
	}
	keep := cfg.Dir != ""
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "mnemo-soak-")
		if err != nil {
			return failed(stderr, fs, err)
		}
		cfg.Dir = d
	} else if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return failed(stderr, fs, err)
	}
	kept := "every write a new memory"
	if cfg.Keep > 0 {
		kept = fmt.Sprintf("%d memories per agent, then overwritten in turn", cfg.Keep)
	}
	fmt.Fprintf(stdout, "soak: %d nodes x %d agents, %.3g writes/s each (%s), for %v, a fault every %v, seed %d\nsoak: data and node logs in %s\n",
		cfg.Nodes, cfg.Agents, cfg.Rate, kept, cfg.For, cfg.FaultEvery, cfg.Seed, cfg.Dir)
	s := newSoak(cfg, stdout)
	err := s.run(ctx)
	if err == nil && s.failures == 0 {
		fmt.Fprintln(stdout, "result: PASS")
		if !keep {
			os.RemoveAll(cfg.Dir)
		}
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mnemo soak: %v\n", err)
	}
	fmt.Fprintf(stdout, "result: FAIL (data and logs kept in %s)\n", cfg.Dir)
	return exitError
}

// soak is one run's state.
type soak struct {
	cfg   soakConfig
	out   io.Writer
	api   *soakAPI
	nodes []*soakNode
	start time.Time // when the writers started

	mu           sync.Mutex
	acks         []soakAck
	unreachable  int         // saves whose node was down, paused or restarting
	answers      map[int]int // other answers by HTTP status
	faults       map[string]int
	lastFaultEnd time.Time
	failures     int // checks that failed
}

// soakAck is one acknowledged write: a save, or an overwrite of id.
type soakAck struct {
	id      string
	agent   string
	version int // the write's number among the agent's writes, in its title
}

func newSoak(cfg soakConfig, out io.Writer) *soak {
	// The client's bound is for the end's exports and digests (full scans);
	// a save has its own, shorter one.
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Agents * 2}
	return &soak{cfg: cfg, out: out, api: &soakAPI{hc: &http.Client{Transport: tr, Timeout: 2 * time.Minute}},
		answers: map[int]int{}, faults: map[string]int{}}
}

// logf prints one progress line stamped with the time into the run.
func (s *soak) logf(format string, args ...any) {
	at := time.Duration(0)
	if !s.start.IsZero() {
		at = time.Since(s.start).Round(100 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, "  %8v  %s\n", at, fmt.Sprintf(format, args...))
}

func (s *soak) run(ctx context.Context) error {
	defer s.shutdown()
	agents, err := s.setUp(ctx)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithTimeout(ctx, s.cfg.For)
	defer stop()
	s.start = time.Now()
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.write(runCtx, a)
		}()
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s.sample(runCtx)
	}()
	faultErr := s.faultScript(runCtx)
	if faultErr != nil {
		stop()
	}
	wg.Wait()
	<-sampled
	writesEnded := time.Now()
	if faultErr != nil {
		return faultErr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.logf("writers and faults stopped")
	return s.check(ctx, writesEnded)
}

// soakAgent is one writing principal.
type soakAgent struct {
	name  string
	seq   uint64 // seeds its content
	node  *soakNode
	token string // "" for the owner agent: the node's owner token
}

// setUp starts the nodes, issues the extra agents' tokens, creates the team
// namespace on the first node, grants every agent read and write, and
// waits until every node holds the same state of it.
func (s *soak) setUp(ctx context.Context) ([]soakAgent, error) {
	key := filepath.Join(s.cfg.Dir, "cluster.key")
	if err := node.WriteClusterKey(key, gossip.GenerateClusterKey()); err != nil {
		return nil, err
	}
	var agents []soakAgent
	for i := range s.cfg.Nodes {
		name := fmt.Sprintf("s%d", i)
		n := &soakNode{name: name, dir: filepath.Join(s.cfg.Dir, name), logPath: filepath.Join(s.cfg.Dir, name+".log"), bin: s.cfg.Bin, key: key}
		var join []string
		if i > 0 {
			join = []string{s.nodes[0].current().gossip}
		}
		if err := n.start(ctx, join, time.Minute); err != nil {
			return nil, err
		}
		s.nodes = append(s.nodes, n)
		p := n.current()
		s.logf("%s up: http=%s gossip=%s quic=%s", name, p.url, p.gossip, p.quic)
		agents = append(agents, soakAgent{name: "agent://" + name, seq: uint64(len(agents)), node: n})
		for j := 1; j < s.cfg.Agents; j++ {
			principal := fmt.Sprintf("agent://%s%c", name, 'a'+j)
			var tok httpapi.TokenAnswer
			if err := s.api.call(ctx, p.url, n.token, "POST", "/v1/tokens", map[string]string{"principal": principal}, http.StatusCreated, &tok); err != nil {
				return nil, fmt.Errorf("issue a token for %s on %s: %w", principal, name, err)
			}
			agents = append(agents, soakAgent{name: principal, seq: uint64(len(agents)), node: n, token: tok.Token})
		}
	}
	for _, n := range s.nodes {
		p := n.current()
		if !poll(ctx, time.Minute, 200*time.Millisecond, func() bool { return s.api.aliveMembers(ctx, p.url, n.token) == s.cfg.Nodes }) {
			return nil, fmt.Errorf("%s does not see %d members alive within a minute", n.name, s.cfg.Nodes)
		}
	}
	n0 := s.nodes[0]
	p0 := n0.current()
	if err := s.api.call(ctx, p0.url, n0.token, "POST", "/v1/namespaces", map[string]string{"namespace": soakNS}, http.StatusCreated, nil); err != nil {
		return nil, fmt.Errorf("create %s: %w", soakNS, err)
	}
	for _, a := range agents[1:] { // the first is the creator, admin already
		req := map[string]any{"namespace": soakNS, "principal": a.name, "permissions": []string{"read", "write"}}
		if err := s.api.call(ctx, p0.url, n0.token, "POST", "/v1/grants", req, http.StatusCreated, nil); err != nil {
			return nil, fmt.Errorf("grant %s: %w", a.name, err)
		}
	}
	d, ok := s.agreed(ctx, time.Minute)
	if !ok {
		return nil, fmt.Errorf("the nodes do not agree on %s's grants within a minute", soakNS)
	}
	s.logf("%d agents granted read and write on %s; digests agree (%s)", len(agents), soakNS, d)
	return agents, nil
}

// agreed polls until every node answers the same non-empty digest of the
// team namespace, within limit. The nodes are asked at once: a digest is a
// full scan of the namespace (about 0.8 s at 16k records here), so asking
// them in turn would make each round several seconds long.
func (s *soak) agreed(ctx context.Context, limit time.Duration) (string, bool) {
	var d string
	ok := poll(ctx, limit, 250*time.Millisecond, func() bool {
		ds := make([]string, len(s.nodes))
		var wg sync.WaitGroup
		for i, n := range s.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ds[i], _ = s.api.digest(ctx, n, soakNS)
			}()
		}
		wg.Wait()
		for _, x := range ds {
			if x == "" || x != ds[0] {
				return false
			}
		}
		d = ds[0]
		return true
	})
	return d, ok
}

// write saves as agent a at the configured rate until ctx ends, and once
// it holds Keep memories (if set) overwrites them in turn instead. A save
// is acknowledged only by 201 with an id, an overwrite by 200; one its
// node could not answer (down, paused, restarting) is counted as
// unreachable, not lost.
func (s *soak) write(ctx context.Context, a soakAgent) {
	rng := rand.New(rand.NewPCG(s.cfg.Seed, a.seq+1))
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.cfg.Rate))
	defer tick.Stop()
	var mine []string // this agent's memories, while fewer than Keep or Keep is 0: saving
	next := 0         // the one overwritten next
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := a.node.current()
		if p == nil {
			s.mu.Lock()
			s.unreachable++
			s.mu.Unlock()
			continue
		}
		tok := a.token
		if tok == "" {
			a.node.mu.Lock()
			tok = a.node.token
			a.node.mu.Unlock()
		}
		req := benchSave(rng, 0, k)
		req.Namespace = soakNS
		req.Title = soakTitle(a.name, k, req.Title)
		var m struct {
			ID string `json:"id"`
		}
		sctx, cancel := context.WithTimeout(ctx, saveTimeout)
		var err error
		if s.cfg.Keep > 0 && len(mine) == s.cfg.Keep {
			m.ID = mine[next]
			next = (next + 1) % len(mine)
			upd := memapi.UpdateRequest{Title: &req.Title, Content: &req.Content}
			err = s.api.call(sctx, p.url, tok, "PATCH", "/v1/memories/"+url.PathEscape(m.ID), upd, http.StatusOK, nil)
		} else {
			err = s.api.call(sctx, p.url, tok, "POST", "/v1/memories", req, http.StatusCreated, &m)
			if err == nil && m.ID != "" && s.cfg.Keep > 0 {
				mine = append(mine, m.ID)
			}
		}
		cancel()
		s.mu.Lock()
		var st *errStatus
		switch {
		case err == nil && m.ID != "":
			s.acks = append(s.acks, soakAck{id: m.ID, agent: a.name, version: k})
		case errors.As(err, &st):
			s.answers[st.code]++
		case ctx.Err() == nil:
			s.unreachable++
		}
		s.mu.Unlock()
	}
}

// faultScript injects one fault at a time, a quiet FaultEvery between
// them, until ctx ends; a fault under way when it ends is healed at once.
// Every random choice comes from the seed, drawn before any wait, so a
// seed replays the same script (the timing of the writes around it is the
// machine's).
func (s *soak) faultScript(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0x50a4))
	wait := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	for {
		wait(s.cfg.FaultEvery)
		if ctx.Err() != nil {
			return nil
		}
		n := s.nodes[rng.IntN(len(s.nodes))]
		kill := rng.IntN(2) == 0
		down := time.Duration(rng.Int64N(int64(s.cfg.DownMax) + 1))
		pause := s.cfg.PauseMin + time.Duration(rng.Int64N(int64(s.cfg.PauseMax-s.cfg.PauseMin)+1))
		via := rng.IntN(len(s.nodes) - 1)
		if kill {
			if err := n.kill(syscall.SIGKILL, 30*time.Second); err != nil {
				return err
			}
			s.count("kill -9, restart on new ports")
			s.logf("kill -9 %s; down for %v", n.name, down.Round(time.Millisecond))
			wait(down)
			var others []*soakNode
			for _, o := range s.nodes {
				if o != n && o.live() != nil {
					others = append(others, o)
				}
			}
			j := others[via%len(others)]
			began := time.Now()
			if err := n.start(context.Background(), []string{j.current().gossip}, time.Minute); err != nil {
				return fmt.Errorf("restart %s: %w", n.name, err)
			}
			p := n.current()
			s.logf("%s back in %v via %s: http=%s gossip=%s quic=%s", n.name, time.Since(began).Round(time.Millisecond), j.name, p.url, p.gossip, p.quic)
		} else {
			if err := n.pause(true); err != nil {
				return err
			}
			s.count("SIGSTOP, SIGCONT (every link cut, healed)")
			s.logf("SIGSTOP %s for %v", n.name, pause.Round(time.Millisecond))
			wait(pause)
			if err := n.pause(false); err != nil {
				return err
			}
			s.logf("SIGCONT %s", n.name)
		}
		s.mu.Lock()
		s.lastFaultEnd = time.Now()
		s.mu.Unlock()
	}
}

func (s *soak) count(kind string) {
	s.mu.Lock()
	s.faults[kind]++
	s.mu.Unlock()
}

// sample records every node's RSS each RSSEvery, and prints the count of
// acknowledged saves each minute, until ctx ends.
func (s *soak) sample(ctx context.Context) {
	tick := time.NewTicker(s.cfg.RSSEvery)
	defer tick.Stop()
	minute := time.NewTicker(time.Minute)
	defer minute.Stop()
	for {
		now := time.Now()
		for _, n := range s.nodes {
			inc, kib, ok := n.sampleRSS(now)
			if !ok {
				continue
			}
			if live := s.api.liveHeap(ctx, n); live > 0 {
				n.mu.Lock()
				inc.rss[len(inc.rss)-1].live = live
				n.mu.Unlock()
			}
			if s.cfg.HeapDir != "" {
				s.profileHeap(ctx, n, inc, kib)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-minute.C:
			s.mu.Lock()
			acked, unreachable := len(s.acks), s.unreachable
			s.mu.Unlock()
			s.logf("%d saves acknowledged, %d unreachable so far", acked, unreachable)
		}
	}
}

// shutdown ends every node: SIGTERM, then SIGKILL after a bound.
func (s *soak) shutdown() {
	var wg sync.WaitGroup
	for _, n := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.kill(syscall.SIGTERM, 20*time.Second)
		}()
	}
	wg.Wait()
}

// soakTitle is the title of agent's write number k: the check reads k back
// (soakVersion) to tell which write a node's copy holds.
func soakTitle(agent string, k int, title string) string {
	return fmt.Sprintf("%s save %d: %s", agent, k, title)
}

// soakVersion is the write number soakTitle put in title (false if none).
func soakVersion(title string) (int, bool) {
	_, rest, ok := strings.Cut(title, " save ")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(num)
	return k, err == nil && k >= 0
}
