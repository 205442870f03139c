package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node"
	"github.com/mnemohq/mnemo/node/memapi"
)

// These tests build the real binary once and drive it as a user would: a
// node process on a temporary directory and a free port, the HTTP API, and
// the CLI as separate processes. They never sleep: every wait is on a
// condition (a line on stdout, a process exit) with a deadline.

var binPath string

const waitLimit = 20 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mnemo-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "mnemo")
	out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building mnemo: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// outBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type outBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *outBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *outBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cleanEnv is the environment without MNEMO_* variables and with HOME in a
// temporary directory, so nothing reaches the user's ~/.mnemo.
func cleanEnv(t *testing.T, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MNEMO_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "HOME="+t.TempDir()), extra...)
}

type nodeProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	dir    string
	url    string
	token  string
	stdout *outBuffer
	stderr *outBuffer
	done   chan struct{} // closed once the process has exited
	nodeID string
	gossip string // set when the node replicates
	quic   string
}

// startTrio starts alice (in aliceDir), then bob and carol joining her,
// each with the flags base, and waits until all three see three members.
func startTrio(t *testing.T, aliceDir string, base ...string) (alice, bob, carol *nodeProc) {
	t.Helper()
	alice = startNode(t, aliceDir, "alice", base...)
	join := append(append([]string{}, base...), "--join", alice.gossip)
	bob = startNode(t, t.TempDir(), "bob", join...)
	carol = startNode(t, t.TempDir(), "carol", join...)
	eventually(t, "three members", func() bool {
		return alice.members(t) == 3 && bob.members(t) == 3 && carol.members(t) == 3
	})
	return alice, bob, carol
}

// startNode runs `mnemo node` on dir and a free port and waits for its
// ready line.
func startNode(t *testing.T, dir, agent string, extra ...string) *nodeProc {
	t.Helper()
	p, err := launchNode(t, dir, agent, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func launchNode(t *testing.T, dir, agent string, extra ...string) (*nodeProc, error) {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"node", "--data", dir, "--http", "127.0.0.1:0", "--agent", agent}, extra...)...)
	cmd.Env = cleanEnv(t)
	p := &nodeProc{t: t, cmd: cmd, dir: dir, stdout: &outBuffer{}, stderr: &outBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.stdout.Write([]byte(line + "\n"))
			if readyRE.MatchString(line) {
				select {
				case ready <- line:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case line := <-ready:
		m := readyRE.FindStringSubmatch(line)
		if m[1] != "agent://"+agent {
			return nil, fmt.Errorf("ready line %q: agent %q", line, m[1])
		}
		if abs, _ := filepath.Abs(dir); m[3] != abs {
			return nil, fmt.Errorf("ready line %q: data %q, want %q", line, m[3], abs)
		}
		p.url, p.nodeID, p.gossip, p.quic = m[2], m[4], m[6], m[7]
		if strings.HasSuffix(p.url, ":0") {
			return nil, fmt.Errorf("ready line %q does not give the real port", line)
		}
		tok, err := node.ReadToken(dir)
		if err != nil {
			return nil, err
		}
		p.token = tok
		return p, nil
	case <-p.done:
		return p, fmt.Errorf("node exited with %d before ready; stdout:\n%s\nstderr:\n%s",
			cmd.ProcessState.ExitCode(), p.stdout, p.stderr)
	case <-time.After(waitLimit):
		return nil, fmt.Errorf("no ready line within %v; stderr:\n%s", waitLimit, p.stderr)
	}
}

// stop sends sig and waits for the exit code.
func (p *nodeProc) stop(sig os.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(waitLimit):
		p.t.Fatalf("node did not exit within %v after %v; stderr:\n%s", waitLimit, sig, p.stderr)
		return -1
	}
}

// api calls the node's HTTP API; token "" sends none.
func (p *nodeProc) api(method, path, token, body string) (int, []byte) {
	p.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(p.t.Context(), method, p.url+path, r)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.StatusCode, b
}

type cliResult struct {
	stdout, stderr string
	code           int
}

// cli runs the mnemo binary with args, stdin and extra environment.
func cli(t *testing.T, stdin string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binPath, args...)
	cmd.Env = cleanEnv(t, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("mnemo %q: %v", args, err)
	}
	return cliResult{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

func (r cliResult) ok(t *testing.T, args ...string) cliResult {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("mnemo %q: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// mnemo runs a CLI command against node p (found through its node.json)
// and requires success.
func (p *nodeProc) mnemo(stdin string, args ...string) cliResult {
	p.t.Helper()
	full := append(args, "--data", p.dir)
	return cli(p.t, stdin, nil, full...).ok(p.t, full...)
}

var savedRE = regexp.MustCompile(`^saved (\S+)\n$`)

func TestE2EWorkflow(t *testing.T) {
	dirA := filepath.Join(t.TempDir(), "a")
	a := startNode(t, dirA, "alice")

	// node.json names this process and the real URL; token is private.
	info, err := node.ReadInfo(dirA)
	if err != nil {
		t.Fatal(err)
	}
	if info.PID != a.cmd.Process.Pid || info.HTTP != a.url || info.Agent != "agent://alice" {
		t.Fatalf("node.json %+v; process %d at %s", info, a.cmd.Process.Pid, a.url)
	}
	for _, f := range []string{node.TokenFile, node.InfoFile} {
		st, err := os.Stat(filepath.Join(dirA, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v mode %v, want 0600", f, err, st.Mode().Perm())
		}
	}

	// Auth: /healthz is open, /v1 is not.
	if code, body := a.api("GET", "/healthz", "", ""); code != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		if code, body := a.api("GET", "/v1/stats", tok, ""); code != 401 || !strings.Contains(string(body), `"unauthorized"`) {
			t.Fatalf("stats with token %q: %d %s", tok, code, body)
		}
	}
	r := cli(t, "", []string{"MNEMO_TOKEN=wrong-token-0123456789"}, "stats", "--data", dirA)
	if r.code != 1 || !strings.Contains(r.stderr, "bearer token") {
		t.Fatalf("CLI with a wrong token: exit %d, stderr %q", r.code, r.stderr)
	}

	// Save over HTTP and through the CLI (argument, and stdin with "-").
	code, body := a.api("POST", "/v1/memories", a.token, `{"type":"decision","title":"Badger value log","content":"badger tuning: value threshold 1 KiB"}`)
	if code != 201 {
		t.Fatalf("POST /v1/memories: %d %s", code, body)
	}
	var viaHTTP memapi.SaveResult
	json.Unmarshal(body, &viaHTTP)

	out := a.mnemo("", "save", "--type", "decision", "--title", "Use Badger", "--tags", "storage,db", "badger tuning for the storage engine").stdout
	m := savedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("save printed %q", out)
	}
	id := m[1]
	// Flags after the content work too; MNEMO_NODE names the node explicitly.
	r = cli(t, "observed from stdin: badger compaction is slow\n", []string{"MNEMO_NODE=" + a.url},
		"save", "-", "--type", "observation", "--data", dirA).ok(t)
	idStdin := savedRE.FindStringSubmatch(r.stdout)[1]

	// search: a table by default, the API's JSON with --json.
	out = a.mnemo("", "search", "badger tuning", "--type", "decision", "--limit", "5").stdout
	if !strings.Contains(out, "ID") || !strings.Contains(out, "SCORE") || !strings.Contains(out, id) || !strings.Contains(out, viaHTTP.ID) || strings.Contains(out, idStdin) {
		t.Fatalf("search table:\n%s", out)
	}
	var sr memapi.SearchResult
	if err := json.Unmarshal([]byte(a.mnemo("", "search", "badger", "--json").stdout), &sr); err != nil || sr.Total != 3 {
		t.Fatalf("search --json: %+v, %v", sr, err)
	}

	out = a.mnemo("", "get", id).stdout
	if !strings.Contains(out, "Use Badger") || !strings.Contains(out, "badger tuning for the storage engine") || !strings.Contains(out, "db, storage") {
		t.Fatalf("get:\n%s", out)
	}
	var got memapi.Memory
	if err := json.Unmarshal([]byte(a.mnemo("", "get", idStdin, "--json").stdout), &got); err != nil || got.Content != "observed from stdin: badger compaction is slow\n" {
		t.Fatalf("get --json: %+v, %v", got, err)
	}

	out = a.mnemo("", "timeline", id, "--before", "3", "--after", "3").stdout
	if !regexp.MustCompile(`(?m)^>\s+`+id).MatchString(out) || !strings.Contains(out, viaHTTP.ID) || !strings.Contains(out, idStdin) {
		t.Fatalf("timeline:\n%s", out)
	}

	r = a.mnemo("", "context", "--max-tokens", "1500")
	if !strings.Contains(r.stdout, "Use Badger") || !strings.Contains(r.stderr, "of 1500 tokens") {
		t.Fatalf("context:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}

	var cp memapi.CompactResult
	if err := json.Unmarshal([]byte(a.mnemo("", "compact", "--older-than-days", "30", "--json").stdout), &cp); err != nil || cp.Mode != "identify" || cp.Before != 3 {
		t.Fatalf("compact identify: %+v, %v", cp, err)
	}
	out = a.mnemo("", "compact", "--older-than-days", "30").stdout
	if !strings.Contains(out, "no stale memories") {
		t.Fatalf("compact identify table:\n%s", out)
	}
	out = a.mnemo("", "compact", "--ids", viaHTTP.ID+","+idStdin, "--summary-title", "Badger notes", "--summary-content", "value log and compaction").stdout
	if !strings.Contains(out, "compacted 2 memories into summary") || !strings.Contains(out, "3 → 2") {
		t.Fatalf("compact execute:\n%s", out)
	}
	r = cli(t, "", nil, "get", idStdin, "--data", dirA)
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("get a compacted memory: exit %d, stderr %q", r.code, r.stderr)
	}

	out = a.mnemo("", "stats").stdout
	if !regexp.MustCompile(`(?m)^memories\s+2$`).MatchString(out) || !regexp.MustCompile(`(?m)^deleted\s+2$`).MatchString(out) {
		t.Fatalf("stats:\n%s", out)
	}

	// export > file, then import into a second node with another owner.
	export := a.mnemo("", "export").stdout
	var ex memapi.Export
	if err := json.Unmarshal([]byte(export), &ex); err != nil || ex.Format != "mnemo-export" || len(ex.Memories) != 4 {
		t.Fatalf("export: %d memories, %v", len(ex.Memories), err)
	}
	file := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	dirB := filepath.Join(t.TempDir(), "b")
	b := startNode(t, dirB, "bob")
	out = b.mnemo("", "import", file).stdout
	if !strings.Contains(out, "imported") || !strings.Contains(out, "format mnemo-export") {
		t.Fatalf("import:\n%s", out)
	}
	if err := json.Unmarshal([]byte(b.mnemo("", "search", "badger", "--json").stdout), &sr); err != nil || sr.Total == 0 {
		t.Fatalf("search on the importing node: %+v, %v", sr, err)
	}
	for _, h := range sr.Results {
		if h.Memory.Namespace != "agent://bob" {
			t.Fatalf("imported memory in %s, want agent://bob", h.Memory.Namespace)
		}
	}

	// Errors: the API's message on stderr, exit 1; usage errors exit 2.
	r = cli(t, "", nil, "search", "x", "--since", "garbage", "--data", dirA)
	if r.code != 1 || !strings.Contains(r.stderr, `"since"`) {
		t.Fatalf("search --since garbage: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"search", "--limit", "abc"}, {"bogus"}, {"get"}, {"compact", "--data", dirA}, {}} {
		if r := cli(t, "", nil, args...); r.code != 2 || r.stderr == "" {
			t.Fatalf("mnemo %q: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
	r = cli(t, "", nil, "stats", "--data", filepath.Join(t.TempDir(), "empty"))
	if r.code != 1 || !strings.Contains(r.stderr, "token") {
		t.Fatalf("no token: exit %d, stderr %q", r.code, r.stderr)
	}

	// A second node on the same directory fails, naming the holder.
	_, err = launchNode(t, dirA, "alice")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("process %d", a.cmd.Process.Pid)) {
		t.Fatalf("second node on %s: %v; want an error naming pid %d", dirA, err, a.cmd.Process.Pid)
	}
	if info2, _ := node.ReadInfo(dirA); info2 != info {
		t.Fatalf("the failed second node changed node.json: %+v", info2)
	}

	// SIGTERM: clean exit 0, node.json removed, data kept.
	for _, p := range []*nodeProc{a, b} {
		if code := p.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("exit %d after SIGTERM; stderr:\n%s", code, p.stderr)
		}
		if _, err := os.Stat(filepath.Join(p.dir, node.InfoFile)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("node.json left after a clean shutdown: %v", err)
		}
	}
	a = startNode(t, dirA, "alice")
	if out := a.mnemo("", "get", id).stdout; !strings.Contains(out, "Use Badger") {
		t.Fatalf("after restart:\n%s", out)
	}
	if code := a.stop(os.Interrupt); code != 0 {
		t.Fatalf("exit %d after SIGINT", code)
	}
}

func TestE2ECrashDurability(t *testing.T) {
	const n = 40
	dir := t.TempDir()
	p := startNode(t, dir, "crash")
	ids := make([]string, n)
	for i := range ids {
		code, body := p.api("POST", "/v1/memories", p.token,
			fmt.Sprintf(`{"type":"observation","title":"durable %d","content":"durable memory number %d"}`, i, i))
		if code != 201 {
			t.Fatalf("save %d: %d %s", i, code, body)
		}
		var res memapi.SaveResult
		if err := json.Unmarshal(body, &res); err != nil || res.ID == "" {
			t.Fatalf("save %d: %s", i, body)
		}
		ids[i] = res.ID
	}
	if code := p.stop(syscall.SIGKILL); code != -1 {
		t.Fatalf("exit code %d after SIGKILL", code)
	}
	if _, err := node.ReadInfo(dir); err != nil {
		t.Fatalf("a killed node should leave node.json behind: %v", err)
	}

	q := startNode(t, dir, "crash")
	for i, id := range ids {
		code, body := q.api("GET", "/v1/memories/"+id, q.token, "")
		if code != 200 || !strings.Contains(string(body), fmt.Sprintf("durable memory number %d", i)) {
			t.Fatalf("memory %d (%s) after kill -9: %d %s", i, id, code, body)
		}
	}
	code, body := q.api("GET", "/v1/search?q=durable&limit=100", q.token, "")
	var sr memapi.SearchResult
	if err := json.Unmarshal(body, &sr); code != 200 || err != nil || sr.Total != n || len(sr.Results) != n {
		t.Fatalf("search after kill -9: %d, total %d, %d results: %v", code, sr.Total, len(sr.Results), err)
	}
	if info, err := node.ReadInfo(dir); err != nil || info.PID != q.cmd.Process.Pid {
		t.Fatalf("node.json after restart: %+v, %v", info, err)
	}
	if code := q.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

func TestE2EHelpAndVersion(t *testing.T) {
	r := cli(t, "", nil, "help").ok(t)
	for _, c := range []string{"node", "mcp", "save", "get", "search", "timeline", "context", "compact", "stats", "export", "import", "version"} {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(r.stdout) {
			t.Errorf("help does not list %q", c)
		}
	}
	r = cli(t, "", nil, "help", "search").ok(t)
	if !strings.Contains(r.stdout, "Usage: mnemo search") || !strings.Contains(r.stdout, "-limit") {
		t.Fatalf("help search:\n%s", r.stdout)
	}
	r = cli(t, "", nil, "save", "-h").ok(t)
	if !strings.Contains(r.stdout, "-topic-key") {
		t.Fatalf("save -h:\n%s", r.stdout)
	}
	r = cli(t, "", nil, "version").ok(t)
	if !strings.HasPrefix(r.stdout, "mnemo ") {
		t.Fatalf("version: %q", r.stdout)
	}
}
