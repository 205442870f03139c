package gossip

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/acl"
)

// wait bounds every wait of a test; a hang is a failure, not a timeout.
const wait = 20 * time.Second

// guardedWriter drops writes once the test is over: memberlist's
// goroutines may still log while they wind down after Shutdown.
type guardedWriter struct {
	mu   sync.Mutex
	done bool
	w    io.Writer
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return len(p), nil
	}
	return g.w.Write(p)
}

// recordingHandler logs to the test and lets it wait for a message.
type recordingHandler struct {
	slog.Handler
	mu       sync.Mutex
	messages []slog.Record
	notify   chan struct{}
}

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.messages = append(h.messages, r.Clone())
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
	return h.Handler.Handle(ctx, r)
}

func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrHandler{Handler: h.Handler.WithAttrs(as), rec: h}
}

// attrHandler keeps recording through Logger.With.
type attrHandler struct {
	slog.Handler
	rec *recordingHandler
}

func (h *attrHandler) Handle(ctx context.Context, r slog.Record) error {
	h.rec.mu.Lock()
	h.rec.messages = append(h.rec.messages, r.Clone())
	h.rec.mu.Unlock()
	select {
	case h.rec.notify <- struct{}{}:
	default:
	}
	return h.Handler.Handle(ctx, r)
}

func (h *attrHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrHandler{Handler: h.Handler.WithAttrs(as), rec: h.rec}
}

// waitLog waits for a record whose message contains msg and whose attrs
// mention attr.
func (h *recordingHandler) waitLog(t *testing.T, msg, attr string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		h.mu.Lock()
		for _, r := range h.messages {
			if !strings.Contains(r.Message, msg) {
				continue
			}
			found := false
			r.Attrs(func(a slog.Attr) bool {
				found = found || strings.Contains(a.Value.String(), attr)
				return !found
			})
			if found {
				h.mu.Unlock()
				return
			}
		}
		h.mu.Unlock()
		select {
		case <-h.notify:
		case <-deadline:
			t.Fatalf("no log %q about %s within %v", msg, attr, wait)
		}
	}
}

func testLogger(t *testing.T) (*slog.Logger, *recordingHandler) {
	gw := &guardedWriter{w: t.Output()}
	t.Cleanup(func() { // registered first, so it runs after every Shutdown
		gw.mu.Lock()
		gw.done = true
		gw.mu.Unlock()
	})
	h := &recordingHandler{
		Handler: slog.NewTextHandler(gw, &slog.HandlerOptions{Level: slog.LevelDebug}),
		notify:  make(chan struct{}, 1),
	}
	return slog.New(h), h
}

// watcher keeps the latest OnChange snapshot and all of them.
type watcher struct {
	mu     sync.Mutex
	latest []Member
	all    [][]Member
	notify chan struct{}
}

func newWatcher() *watcher { return &watcher{notify: make(chan struct{}, 1)} }

func (w *watcher) onChange(ms []Member) {
	w.mu.Lock()
	w.latest = ms
	w.all = append(w.all, ms)
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// until waits for a snapshot satisfying ok.
func (w *watcher) until(t *testing.T, what string, ok func([]Member) bool) []Member {
	t.Helper()
	deadline := time.After(wait)
	for {
		w.mu.Lock()
		latest := w.latest
		w.mu.Unlock()
		if ok(latest) {
			return latest
		}
		select {
		case <-w.notify:
		case <-deadline:
			t.Fatalf("%s: not within %v; last snapshot: %+v", what, wait, latest)
		}
	}
}

type testNode struct {
	g     *Gossip
	meta  Meta
	watch *watcher
}

func newMeta(t *testing.T, agents ...string) Meta {
	t.Helper()
	id, err := acl.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Meta{NodeID: id.NodeID(), PublicKey: id.Public, QUICAddr: "127.0.0.1:7947", Agents: agents}
}

// fastTimings detects failures in a second or two.
func fastTimings(cfg *Config) {
	cfg.ProbeInterval = 100 * time.Millisecond
	cfg.ProbeTimeout = 50 * time.Millisecond
	cfg.GossipInterval = 50 * time.Millisecond
	cfg.SuspicionMult = 2
}

// fastFailure is set by tests of failure detection; the others keep the
// default timings, which do not mistake a loaded test machine for a crash.
var fastFailure = fastTimings

func startNode(t *testing.T, key []byte, log *slog.Logger, join []string, agents ...string) *testNode {
	t.Helper()
	return startNodeWith(t, key, log, join, nil, agents...)
}

func startNodeWith(t *testing.T, key []byte, log *slog.Logger, join []string, tune func(*Config), agents ...string) *testNode {
	t.Helper()
	n := &testNode{meta: newMeta(t, agents...), watch: newWatcher()}
	cfg := Config{SecretKey: key, Meta: n.meta, Join: join, OnChange: n.watch.onChange, Logger: log}
	if tune != nil {
		tune(&cfg)
	}
	g, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.g = g
	t.Cleanup(func() {
		if err := g.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return n
}

func find(ms []Member, id acl.NodeID) (Member, bool) {
	for _, m := range ms {
		if m.NodeID == id {
			return m, true
		}
	}
	return Member{}, false
}

func hasState(id acl.NodeID, state string) func([]Member) bool {
	return func(ms []Member) bool {
		m, ok := find(ms, id)
		return ok && m.State == state
	}
}

func allAlive(nodes ...*testNode) func([]Member) bool {
	return func(ms []Member) bool {
		if len(ms) != len(nodes) {
			return false
		}
		for _, n := range nodes {
			if !hasState(n.meta.NodeID, StateAlive)(ms) {
				return false
			}
		}
		return true
	}
}

func testKey(t *testing.T) []byte {
	t.Helper()
	key, err := ParseClusterKey([]byte(GenerateClusterKey()))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestThreeNodesSeeEachOther(t *testing.T) {
	log, _ := testLogger(t)
	key := testKey(t)
	a := startNode(t, key, log, nil, "alice", "bob")
	b := startNode(t, key, log, []string{a.g.LocalAddr()}, "carol")
	c := startNode(t, key, log, []string{a.g.LocalAddr()})
	nodes := []*testNode{a, b, c}
	for _, n := range nodes {
		ms := n.watch.until(t, fmt.Sprintf("%s sees all three", n.meta.NodeID), allAlive(nodes...))
		for _, want := range nodes {
			got, _ := find(ms, want.meta.NodeID)
			if !got.PublicKey.Equal(want.meta.PublicKey) || got.QUICAddr != want.meta.QUICAddr ||
				!slices.Equal(got.Agents, want.meta.Agents) || got.GossipAddr != want.g.LocalAddr() {
				t.Errorf("%s sees %s as %+v, want %+v at %s", n.meta.NodeID, want.meta.NodeID, got, want.meta, want.g.LocalAddr())
			}
		}
		if !slices.IsSortedFunc(ms, func(x, y Member) int { return strings.Compare(string(x.NodeID), string(y.NodeID)) }) {
			t.Error("members not sorted by node id")
		}
		if got := n.g.Members(); len(got) != 3 {
			t.Errorf("Members() has %d members, want 3", len(got))
		}
	}

	// A metadata update reaches the others.
	upd := a.meta
	upd.Agents = []string{"alice", "dave"}
	upd.QUICAddr = "127.0.0.1:9000"
	if err := a.g.UpdateMeta(upd); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*testNode{b, c} {
		n.watch.until(t, "update seen", func(ms []Member) bool {
			m, ok := find(ms, a.meta.NodeID)
			return ok && m.QUICAddr == upd.QUICAddr && slices.Equal(m.Agents, upd.Agents)
		})
	}
	// The identity cannot change.
	other := newMeta(t)
	if err := a.g.UpdateMeta(other); !errors.Is(err, ErrIdentity) {
		t.Errorf("UpdateMeta with another key: %v, want ErrIdentity", err)
	}
}

func TestWrongClusterKeyCannotJoin(t *testing.T) {
	log, _ := testLogger(t)
	a := startNode(t, testKey(t), log, nil)
	b := startNode(t, a.g.cfg.SecretKey, log, []string{a.g.LocalAddr()})
	a.watch.until(t, "b joined", allAlive(a, b))

	intruder := newMeta(t)
	g, err := Start(Config{SecretKey: testKey(t), Meta: intruder, Join: []string{a.g.LocalAddr()}, Logger: log})
	if err == nil {
		_ = g.Shutdown()
		t.Fatal("a node with another cluster key joined")
	}
	if !errors.Is(err, ErrJoin) {
		t.Fatalf("Start with another key: %v, want ErrJoin", err)
	}
	t.Logf("error: %v", err)
	// The push/pull was refused on both sides, so a never learnt of it.
	if _, ok := find(a.g.Members(), intruder.NodeID); ok {
		t.Fatal("the intruder is listed")
	}

	// Nor can it be joined by a member.
	lone := newWatcher()
	g, err = Start(Config{SecretKey: testKey(t), Meta: newMeta(t), Logger: log, OnChange: lone.onChange})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown()
	if _, err := b.g.Join([]string{g.LocalAddr()}); !errors.Is(err, ErrJoin) {
		t.Fatalf("joining a node with another key: %v, want ErrJoin", err)
	}
	if len(g.Members()) != 1 {
		t.Fatalf("the other-key node lists %d members, want itself only", len(g.Members()))
	}
}

func TestLeave(t *testing.T) {
	log, _ := testLogger(t)
	key := testKey(t)
	a := startNode(t, key, log, nil)
	b := startNode(t, key, log, []string{a.g.LocalAddr()})
	c := startNode(t, key, log, []string{a.g.LocalAddr()})
	for _, n := range []*testNode{a, b, c} {
		n.watch.until(t, "all joined", allAlive(a, b, c))
	}
	if err := b.g.Leave(wait); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*testNode{a, c} {
		n.watch.until(t, "b left", hasState(b.meta.NodeID, StateLeft))
	}
	if err := b.g.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := b.g.Leave(time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Leave after Shutdown: %v, want ErrClosed", err)
	}
}

func TestCrashedNodeIsDead(t *testing.T) {
	log, _ := testLogger(t)
	key := testKey(t)
	a := startNodeWith(t, key, log, nil, fastFailure)
	b := startNodeWith(t, key, log, []string{a.g.LocalAddr()}, fastFailure)
	c := startNodeWith(t, key, log, []string{a.g.LocalAddr()}, fastFailure)
	for _, n := range []*testNode{a, b, c} {
		n.watch.until(t, "all joined", allAlive(a, b, c))
	}
	if err := c.g.Shutdown(); err != nil { // no Leave: a crash, as far as the others know
		t.Fatal(err)
	}
	for _, n := range []*testNode{a, b} {
		n.watch.until(t, "c dead", hasState(c.meta.NodeID, StateDead))
	}
}

// A node killed and started again on a new port, as a sidecar on ephemeral
// ports does, is a member again at once under its new incarnation, while
// its old incarnation still waits for the failure detector. memberlist
// would refuse the new address under the old name until then.
func TestRestartOnNewAddressIsMemberAtOnce(t *testing.T) {
	log, _ := testLogger(t)
	key := testKey(t)
	a := startNode(t, key, log, nil)
	b := startNode(t, key, log, []string{a.g.LocalAddr()})
	meta := newMeta(t)
	start := func(inc uint64) *Gossip {
		m := meta
		m.Incarnation = inc
		g, err := Start(Config{SecretKey: key, Meta: m, Join: []string{a.g.LocalAddr()}, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Shutdown() })
		return g
	}
	old := start(1)
	incarnation := func(inc uint64, state string) func([]Member) bool {
		return func(ms []Member) bool {
			for _, m := range ms {
				if m.NodeID == meta.NodeID && m.Incarnation == inc && m.State == state {
					return true
				}
			}
			return false
		}
	}
	for _, n := range []*testNode{a, b} {
		n.watch.until(t, "the first incarnation joined", incarnation(1, StateAlive))
	}
	oldAddr := old.LocalAddr()
	if err := old.Shutdown(); err != nil { // a crash, as far as the others know
		t.Fatal(err)
	}
	restarted := start(2)
	if restarted.LocalAddr() == oldAddr {
		t.Fatalf("restarted on the old address %s", oldAddr)
	}
	for _, n := range []*testNode{a, b} {
		ms := n.watch.until(t, "the restarted incarnation alive", incarnation(2, StateAlive))
		for _, m := range ms {
			if m.NodeID == meta.NodeID && m.Incarnation == 2 && m.GossipAddr != restarted.LocalAddr() {
				t.Fatalf("incarnation 2 at %s, want %s", m.GossipAddr, restarted.LocalAddr())
			}
		}
		// Not waiting for the failure detector: with the default timings
		// the old incarnation stays alive for seconds after the crash
		// (suspicion alone lasts at least 4 s), and joining takes
		// milliseconds.
		if !incarnation(1, StateAlive)(ms) {
			t.Fatalf("the old incarnation was no longer alive when the new one appeared: %+v", ms)
		}
	}
}

// rawNode is a memberlist node outside this package's checks, gossiping
// whatever metadata a test gives it.
type rawNode struct{ meta []byte }

func (r rawNode) NodeMeta(int) []byte                  { return r.meta }
func (rawNode) NotifyMsg([]byte)                       {}
func (rawNode) GetBroadcasts(int, int) [][]byte        { return nil }
func (rawNode) LocalState(bool) []byte                 { return nil }
func (rawNode) MergeRemoteState(buf []byte, join bool) {}

func TestBadMetadataIgnored(t *testing.T) {
	log, rec := testLogger(t)
	key := testKey(t)
	a := startNode(t, key, log, nil)

	// Each case returns the memberlist name and metadata of a bad node;
	// every case uses fresh keys, so its log line is its own.
	wire := func(w wireMeta) []byte {
		b, err := msgpack.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		bad  func(m Meta) (string, []byte)
	}{
		{"garbage", func(m Meta) (string, []byte) { return string(m.NodeID), []byte("this is not msgpack") }},
		{"empty", func(m Meta) (string, []byte) { return string(m.NodeID), nil }},
		{"name is not the key's node id", func(m Meta) (string, []byte) {
			b, _, err := encodeMeta(newMeta(t), false)
			if err != nil {
				t.Fatal(err)
			}
			return string(m.NodeID), b
		}},
		{"claimed huge array", func(m Meta) (string, []byte) {
			return string(m.NodeID), []byte{0x81, 0xa1, 'a', 0xdd, 0x7f, 0xff, 0xff, 0xff}
		}},
		{"short key", func(m Meta) (string, []byte) {
			return string(m.NodeID), wire(wireMeta{V: metaVersion, ID: string(m.NodeID), K: m.PublicKey[:31], Q: m.QUICAddr})
		}},
		{"future version", func(m Meta) (string, []byte) {
			return string(m.NodeID), wire(wireMeta{V: metaVersion + 1, ID: string(m.NodeID), K: m.PublicKey, Q: m.QUICAddr})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, meta := tc.bad(newMeta(t))
			mc := memberlist.DefaultLocalConfig()
			mc.Name = name
			mc.BindAddr, mc.BindPort, mc.AdvertisePort = "127.0.0.1", 0, 0
			mc.SecretKey = key
			mc.Delegate = rawNode{meta}
			mc.Logger = newLogBridge(slog.New(slog.DiscardHandler))
			ml, err := memberlist.Create(mc)
			if err != nil {
				t.Fatal(err)
			}
			defer ml.Shutdown()
			if _, err := ml.Join([]string{a.g.LocalAddr()}); err != nil {
				t.Fatal(err)
			}
			// a logs the rejection as it processes the bad node's state;
			// nothing else could have added the node before that.
			rec.waitLog(t, "ignoring member with bad metadata", name)
			if _, ok := find(a.g.Members(), acl.NodeID(name)); ok {
				t.Fatalf("member %s with bad metadata is listed", name)
			}
			a.watch.mu.Lock()
			defer a.watch.mu.Unlock()
			for _, snap := range a.watch.all {
				if _, ok := find(snap, acl.NodeID(name)); ok {
					t.Fatalf("OnChange reported member %s with bad metadata", name)
				}
			}
		})
	}
	// a is still healthy and accepts a good member.
	b := startNode(t, key, log, []string{a.g.LocalAddr()})
	a.watch.until(t, "good member joins", hasState(b.meta.NodeID, StateAlive))
}

func TestStartValidation(t *testing.T) {
	key := testKey(t)
	m := newMeta(t)
	for name, cfg := range map[string]Config{
		"no key":           {Meta: m},
		"short key":        {Meta: m, SecretKey: key[:10]},
		"no public key":    {SecretKey: key, Meta: Meta{QUICAddr: m.QUICAddr}},
		"wrong node id":    {SecretKey: key, Meta: Meta{NodeID: "abc", PublicKey: m.PublicKey, QUICAddr: m.QUICAddr}},
		"no QUIC address":  {SecretKey: key, Meta: Meta{PublicKey: m.PublicKey}},
		"QUIC port 0":      {SecretKey: key, Meta: Meta{PublicKey: m.PublicKey, QUICAddr: "127.0.0.1:0"}},
		"bad bind address": {SecretKey: key, Meta: m, BindAddr: "nowhere"},
		"unreachable join": {SecretKey: key, Meta: m, Join: []string{"127.0.0.1:1"}, TCPTimeout: time.Second},
	} {
		if g, err := Start(cfg); err == nil {
			_ = g.Shutdown()
			t.Errorf("%s: Start succeeded", name)
		}
	}
	// NodeID may be left out.
	g, err := Start(Config{SecretKey: key, Meta: Meta{PublicKey: m.PublicKey, QUICAddr: m.QUICAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown()
	if ms := g.Members(); len(ms) != 1 || ms[0].NodeID != m.NodeID {
		t.Fatalf("Members: %+v, want itself as %s", ms, m.NodeID)
	}
}
