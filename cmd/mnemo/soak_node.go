package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/cluster"
)

// soakNode is one of the soak's `mnemo node` processes across its
// incarnations: the data directory (so the node key, the owner token and
// the issued tokens) stays, the process and its ports change at each
// restart. Safe for concurrent use: writers read the current URL while the
// fault script replaces the process.
type soakNode struct {
	name    string // owner agent, s0..s4
	dir     string // data directory
	logPath string // stderr of every incarnation, appended
	bin     string
	key     string // cluster key file

	mu     sync.Mutex
	proc   *soakProc // nil while down
	paused bool
	incs   []*soakIncarnation
	token  string // owner token, read once the first incarnation is ready
}

// soakProc is one running `mnemo node` process.
type soakProc struct {
	cmd                   *exec.Cmd
	done                  chan struct{} // closed once the process has exited
	url, gossip, quic, id string
}

// soakIncarnation is what the RSS sampler keeps of one process.
type soakIncarnation struct {
	started time.Time
	ended   time.Time   // zero while it runs
	rss     []rssSample // in time order
	pid     int
	profile int64 // RSS in KiB at the last heap profile taken (--heap-profiles), 0 before the first
}

type rssSample struct {
	age  time.Duration // since the incarnation started
	kib  int64         // VmRSS
	anon int64         // RssAnon: the heap and stacks; the rest is mapped files (Badger's tables, the binary)
	live int64         // the Go heap the last collection found reachable (KiB; 0: not read, the node paused or slow)
}

// start runs a new incarnation joining the gossip addresses in join (none
// for the first node) and waits for its ready line.
func (n *soakNode) start(ctx context.Context, join []string, limit time.Duration) error {
	args := []string{"node", "--data", n.dir, "--http", "127.0.0.1:0", "--agent", n.name, "--cluster-key", n.key}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "--- soak: start %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(n.bin, args...)
	cmd.Env = soakEnv()
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &soakProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := readyRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case m := <-ready:
		p.url, p.id, p.gossip, p.quic = m[2], m[4], m[6], m[7]
	case <-p.done:
		return fmt.Errorf("%s exited before ready (%v); see %s", n.name, cmd.ProcessState, n.logPath)
	case <-timer.C:
		cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s not ready within %v; see %s", n.name, limit, n.logPath)
	case <-ctx.Done():
		cmd.Process.Kill()
		<-p.done
		return ctx.Err()
	}
	tok, err := node.ReadToken(n.dir)
	if err != nil {
		cmd.Process.Kill()
		<-p.done
		return err
	}
	n.mu.Lock()
	n.proc, n.paused, n.token = p, false, tok
	n.incs = append(n.incs, &soakIncarnation{started: time.Now(), pid: cmd.Process.Pid})
	n.mu.Unlock()
	return nil
}

// soakEnv is the environment without MNEMO_* variables, so nothing of the
// user's own node (token, data directory) reaches the soak's nodes.
func soakEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MNEMO_") {
			env = append(env, kv)
		}
	}
	return env
}

// current is the running process, nil while the node is down.
func (n *soakNode) current() *soakProc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// live is the running process when it is also not paused.
func (n *soakNode) live() *soakProc {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused {
		return nil
	}
	return n.proc
}

// kill ends the current process with sig (SIGKILL for a crash, SIGTERM at
// the end) and waits for it to exit, within limit.
func (n *soakNode) kill(sig syscall.Signal, limit time.Duration) error {
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	wasPaused := n.paused
	n.paused = false
	if len(n.incs) > 0 && n.incs[len(n.incs)-1].ended.IsZero() {
		n.incs[len(n.incs)-1].ended = time.Now()
	}
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	p.cmd.Process.Signal(sig)
	if wasPaused {
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %v of %v", n.name, limit, sig)
	}
}

// pause stops the process (SIGSTOP) or resumes it (SIGCONT): every link
// of the node is cut or healed at once.
func (n *soakNode) pause(stop bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return fmt.Errorf("%s is down", n.name)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	n.paused = stop
	return n.proc.cmd.Process.Signal(sig)
}

// sampleRSS records the current incarnation's resident set, and returns
// the incarnation and the sample (ok false if none was taken).
func (n *soakNode) sampleRSS(now time.Time) (inc *soakIncarnation, kib int64, ok bool) {
	n.mu.Lock()
	if n.proc == nil || len(n.incs) == 0 {
		n.mu.Unlock()
		return nil, 0, false
	}
	inc = n.incs[len(n.incs)-1]
	n.mu.Unlock()
	kib, anon, err := vmRSS(inc.pid)
	if err != nil {
		return nil, 0, false // exited between the check and the read
	}
	n.mu.Lock()
	inc.rss = append(inc.rss, rssSample{age: now.Sub(inc.started), kib: kib, anon: anon})
	n.mu.Unlock()
	return inc, kib, true
}

// vmRSS reads a process's resident set and its anonymous part, in KiB,
// from /proc/PID/status.
func vmRSS(pid int) (rss, anon int64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) == 0 || (k != "VmRSS" && k != "RssAnon") {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", k, err)
		}
		if k == "VmRSS" {
			rss, found = n, true
		} else {
			anon = n
		}
	}
	if !found {
		return 0, 0, errors.New("no VmRSS line")
	}
	return rss, anon, nil
}

// soakAPI calls nodes' HTTP APIs with one bounded client.
type soakAPI struct {
	hc *http.Client
}

// errStatus is an answer other than the one expected.
type errStatus struct {
	code int
	body string
}

func (e *errStatus) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// call sends body (nil: none) and decodes a want answer into out (nil:
// discard).
func (a *soakAPI) call(ctx context.Context, url, token, method, path string, body any, want int, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &errStatus{resp.StatusCode, string(bytes.TrimSpace(msg))}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// digest is the node's digest and record count of ns ("" when it holds
// none or cannot answer).
func (a *soakAPI) digest(ctx context.Context, n *soakNode, ns string) (string, int) {
	p := n.live()
	if p == nil {
		return "", 0
	}
	n.mu.Lock()
	tok := n.token
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a full scan of the namespace
	defer cancel()
	var st cluster.Status
	if err := a.call(ctx, p.url, tok, "GET", "/v1/status?digests=true", nil, http.StatusOK, &st); err != nil {
		return "", 0
	}
	for _, d := range st.Namespaces {
		if d.Namespace == ns {
			return d.Digest, d.Records
		}
	}
	return "", 0
}

// liveHeap reads the node's live heap (go_gc_heap_live_bytes of GET
// /metrics) in KiB; 0 when the node is paused or does not answer soon.
func (a *soakAPI) liveHeap(ctx context.Context, n *soakNode) int64 {
	p := n.live()
	if p == nil {
		return 0
	}
	n.mu.Lock()
	tok := n.token
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", p.url+"/metrics", nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0
	}
	return liveHeapOf(string(b))
}

// liveHeapOf finds go_gc_heap_live_bytes in a Prometheus text exposition,
// in KiB (0 if absent).
func liveHeapOf(text string) int64 {
	for line := range strings.Lines(text) {
		v, ok := strings.CutPrefix(line, "go_gc_heap_live_bytes ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 {
			return 0
		}
		return int64(f) / 1024
	}
	return 0
}

// aliveMembers counts the members the node's gossip sees alive.
func (a *soakAPI) aliveMembers(ctx context.Context, url, token string) int {
	var out struct {
		Members []cluster.Member `json:"members"`
	}
	if a.call(ctx, url, token, "GET", "/v1/members", nil, http.StatusOK, &out) != nil {
		return 0
	}
	k := 0
	for _, m := range out.Members {
		if m.State == "alive" {
			k++
		}
	}
	return k
}

// poll calls cond every interval until it holds, ctx ends or limit passes.
func poll(ctx context.Context, limit, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
