package quicnet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/mnemohq/mnemo/acl"
)

// wait bounds every blocking step of a test: generous for a loaded CI
// machine, and a hang shows up as a failure rather than a test timeout.
const wait = 10 * time.Second

type received struct {
	from  ed25519.PublicKey
	frame []byte
}

// node is a transport under test with its identity and inbox.
type node struct {
	id    acl.Identity
	tr    *Transport
	inbox chan received
}

func newIdentity(t testing.TB) acl.Identity {
	t.Helper()
	id, err := acl.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// keySet is a concurrency-safe Allowed callback.
type keySet struct {
	mu   sync.Mutex
	keys map[string]bool
}

func newKeySet(ids ...acl.Identity) *keySet {
	s := &keySet{keys: map[string]bool{}}
	for _, id := range ids {
		s.set(id.Public, true)
	}
	return s
}

func (s *keySet) set(pub ed25519.PublicKey, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[string(pub)] = ok
}

func (s *keySet) allowed(pub ed25519.PublicKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[string(pub)]
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newNode starts a transport on loopback. cfg's Identity, Handler and
// Logger are filled in when empty; Allowed must be set.
func newNode(t testing.TB, cfg Config) *node {
	t.Helper()
	n := &node{id: cfg.Identity, inbox: make(chan received, 2048)}
	if n.id.Private == nil {
		n.id = newIdentity(t)
		cfg.Identity = n.id
	}
	if cfg.Handler == nil {
		cfg.Handler = func(from ed25519.PublicKey, frame []byte) { n.inbox <- received{from, frame} }
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	tr, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.tr = tr
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n
}

func (n *node) addr() string { return n.tr.Addr().String() }

func (n *node) expect(t *testing.T, from acl.Identity, frame []byte) {
	t.Helper()
	select {
	case got := <-n.inbox:
		if !got.from.Equal(from.Public) {
			t.Fatalf("frame from %s, want %s", acl.NodeIDOf(got.from), from.NodeID())
		}
		if !bytes.Equal(got.frame, frame) {
			t.Fatalf("frame %q, want %q", got.frame, frame)
		}
	case <-time.After(wait):
		t.Fatalf("no frame %q within %v", frame, wait)
	}
}

func (n *node) expectNothing(t *testing.T) {
	t.Helper()
	select {
	case got := <-n.inbox:
		t.Fatalf("unexpected frame %q from %s", got.frame, acl.NodeIDOf(got.from))
	default:
	}
}

func ctxWait(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// pair starts two transports that allow each other.
func pair(t *testing.T, cfgA, cfgB Config) (*node, *node) {
	idA, idB := newIdentity(t), newIdentity(t)
	allowed := newKeySet(idA, idB)
	cfgA.Identity, cfgA.Allowed = idA, allowed.allowed
	cfgB.Identity, cfgB.Allowed = idB, allowed.allowed
	return newNode(t, cfgA), newNode(t, cfgB)
}

func TestSendBothWays(t *testing.T) {
	a, b := pair(t, Config{}, Config{})
	ctx := ctxWait(t)
	for i := range 3 { // the later rounds reuse the connections
		ab := fmt.Appendf(nil, "a to b #%d", i)
		if err := a.tr.Send(ctx, b.addr(), b.id.Public, ab); err != nil {
			t.Fatal(err)
		}
		b.expect(t, a.id, ab)
		ba := fmt.Appendf(nil, "b to a #%d", i)
		if err := b.tr.Send(ctx, a.addr(), a.id.Public, ba); err != nil {
			t.Fatal(err)
		}
		a.expect(t, b.id, ba)
	}
	if err := a.tr.Send(ctx, b.addr(), b.id.Public, nil); err != nil {
		t.Fatalf("empty frame: %v", err)
	}
	b.expect(t, a.id, []byte{})
}

func TestSendRejectsWrongPeerKey(t *testing.T) {
	a, b := pair(t, Config{}, Config{})
	impostor := newIdentity(t) // what membership (wrongly) says lives at b's address
	err := a.tr.Send(ctxWait(t), b.addr(), impostor.Public, []byte("secret"))
	if !errors.Is(err, ErrPeerKey) {
		t.Fatalf("Send to a peer presenting another key: %v, want ErrPeerKey", err)
	}
	t.Logf("error: %v", err)
	// The right pin still works, and the refused frame never arrived.
	if err := a.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, a.id, []byte("ok"))
	b.expectNothing(t)
}

// A node restarted on a new port is its key at another address: frames
// sent there go there, not over the connection to the old address, even
// while that one is still open.
func TestSendFollowsTheKeyToANewAddress(t *testing.T) {
	a, b := pair(t, Config{}, Config{})
	ctx := ctxWait(t)
	if err := a.tr.Send(ctx, b.addr(), b.id.Public, []byte("to the first")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, a.id, []byte("to the first"))
	restarted := newNode(t, Config{Identity: b.id, Allowed: newKeySet(a.id).allowed})
	if err := a.tr.Prove(ctx, restarted.addr(), b.id.Public); err != nil {
		t.Fatalf("Prove at the new address: %v", err)
	}
	if err := a.tr.Send(ctx, restarted.addr(), b.id.Public, []byte("to the second")); err != nil {
		t.Fatal(err)
	}
	restarted.expect(t, a.id, []byte("to the second"))
	b.expectNothing(t)
}

// Prove succeeds only where the key answers the handshake.
func TestProve(t *testing.T) {
	a, b := pair(t, Config{}, Config{})
	ctx := ctxWait(t)
	if err := a.tr.Prove(ctx, b.addr(), b.id.Public); err != nil {
		t.Fatalf("Prove of b at b: %v", err)
	}
	// An impostor announcing b's key at its own address cannot prove it.
	impostor := newNode(t, Config{Allowed: newKeySet(a.id).allowed})
	if err := a.tr.Prove(ctx, impostor.addr(), b.id.Public); !errors.Is(err, ErrPeerKey) {
		t.Fatalf("Prove of b at an impostor: %v, want ErrPeerKey", err)
	}
	// The proof is the peer's certificate and handshake signature: it
	// holds even where the peer does not (yet) accept our key, which TLS
	// 1.3 tells the client only after its side of the handshake is done.
	stranger := newNode(t, Config{Allowed: newKeySet().allowed})
	if err := a.tr.Prove(ctx, stranger.addr(), stranger.id.Public); err != nil {
		t.Fatalf("Prove of a node that does not know us: %v", err)
	}
	if err := a.tr.Prove(ctx, b.addr(), b.id.Public[:5]); !errors.Is(err, acl.ErrBadKey) {
		t.Fatalf("Prove with a short key: %v, want acl.ErrBadKey", err)
	}
	if err := a.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.tr.Prove(ctx, b.addr(), b.id.Public); !errors.Is(err, ErrClosed) {
		t.Fatalf("Prove after Close: %v, want ErrClosed", err)
	}
}

func TestInboundUnknownKeyRejected(t *testing.T) {
	a, b := pair(t, Config{}, Config{})
	var strangerHandled atomic.Bool
	stranger := newNode(t, Config{
		Allowed: newKeySet(b.id).allowed, // the stranger trusts b; b does not know it
		Handler: func(ed25519.PublicKey, []byte) { strangerHandled.Store(true) },
	})
	err := stranger.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte("let me in"))
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("Send from an unknown key: %v, want ErrRejected", err)
	}
	t.Logf("error: %v", err)
	// b keeps serving members; only their frames reach its handler.
	if err := a.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte("member")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, a.id, []byte("member"))
	b.expectNothing(t)
}

func TestRevokedKeyRejectedOnOpenConnection(t *testing.T) {
	idA, idB := newIdentity(t), newIdentity(t)
	allowed := newKeySet(idA, idB)
	a := newNode(t, Config{Identity: idA, Allowed: allowed.allowed})
	b := newNode(t, Config{Identity: idB, Allowed: allowed.allowed})
	if err := a.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte("1")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, a.id, []byte("1"))
	allowed.set(idA.Public, false)
	err := a.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte("2"))
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("Send after revocation: %v, want ErrRejected", err)
	}
	b.expectNothing(t)
}

func TestOversizedFrame(t *testing.T) {
	idA, idB, idC := newIdentity(t), newIdentity(t), newIdentity(t)
	allowed := newKeySet(idA, idB, idC)
	a := newNode(t, Config{Identity: idA, Allowed: allowed.allowed})
	b := newNode(t, Config{Identity: idB, Allowed: allowed.allowed, MaxFrameBytes: 1024})
	c := newNode(t, Config{Identity: idC, Allowed: allowed.allowed})
	ctx := ctxWait(t)

	// c has a connection to b before a misbehaves; it must survive.
	if err := c.tr.Send(ctx, b.addr(), b.id.Public, []byte("c1")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, c.id, []byte("c1"))

	err := a.tr.Send(ctx, b.addr(), b.id.Public, make([]byte, 1025))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized frame: %v, want ErrFrameTooLarge", err)
	}
	t.Logf("error: %v", err)
	b.expectNothing(t)

	// b still serves c on its old connection, and a on a new one.
	if err := c.tr.Send(ctx, b.addr(), b.id.Public, []byte("c2")); err != nil {
		t.Fatal(err)
	}
	b.expect(t, c.id, []byte("c2"))
	if err := a.tr.Send(ctx, b.addr(), b.id.Public, make([]byte, 1024)); err != nil {
		t.Fatalf("frame at the limit after a redial: %v", err)
	}
	b.expect(t, a.id, make([]byte, 1024))

	// Our own limit is enforced before anything is sent.
	err = b.tr.Send(ctx, a.addr(), a.id.Public, make([]byte, 1025))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("frame over the local limit: %v, want ErrFrameTooLarge", err)
	}
}

// rawConn dials tr with id's certificate, bypassing Transport, so a test
// can write whatever it likes on a stream.
func rawConn(t *testing.T, id acl.Identity, to *node) *quic.Conn {
	t.Helper()
	cert, err := selfSignedCert(id)
	if err != nil {
		t.Fatal(err)
	}
	var presented atomic.Pointer[ed25519.PublicKey]
	conn, err := quic.DialAddr(ctxWait(t), to.addr(), clientTLS(cert, to.id.Public, &presented), &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseWithError(0, "") })
	return conn
}

func TestGarbageOnStreamClosesConnection(t *testing.T) {
	header := func(version byte, n uint32) []byte {
		return binary.BigEndian.AppendUint32([]byte{version}, n)
	}
	cases := []struct {
		name  string
		bytes []byte
		code  quic.ApplicationErrorCode
	}{
		{"empty stream", nil, codeCorrupt},
		{"short header", []byte{frameVersion, 0}, codeCorrupt},
		{"unknown version", []byte("GET / HTTP/1.1\r\n\r\n"), codeCorrupt},
		{"truncated frame", append(header(frameVersion, 100), "only this"...), codeCorrupt},
		{"trailing bytes", append(header(frameVersion, 2), "ok and more"...), codeCorrupt},
		{"huge length", header(frameVersion, 0xffffffff), codeFrameTooLarge},
	}
	a, b := pair(t, Config{}, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := rawConn(t, a.id, b)
			str, err := conn.OpenStreamSync(ctxWait(t))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := str.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			_ = str.Close()
			select {
			case <-conn.Context().Done():
			case <-time.After(wait):
				t.Fatal("b did not close the connection")
			}
			var appErr *quic.ApplicationError
			if cause := context.Cause(conn.Context()); !errors.As(cause, &appErr) || !appErr.Remote || appErr.ErrorCode != tc.code {
				t.Fatalf("connection closed with %v, want remote application error %#x", cause, tc.code)
			}
			b.expectNothing(t)
			// b keeps working, also for the same key over a transport.
			if err := a.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte(tc.name)); err != nil {
				t.Fatal(err)
			}
			b.expect(t, a.id, []byte(tc.name))
		})
	}
}

func TestConcurrentFramesArriveExactlyOnce(t *testing.T) {
	const frames = 1000
	var (
		mu   sync.Mutex
		seen = map[uint32]int{}
	)
	idA, idB := newIdentity(t), newIdentity(t)
	allowed := newKeySet(idA, idB)
	a := newNode(t, Config{Identity: idA, Allowed: allowed.allowed})
	b := newNode(t, Config{Identity: idB, Allowed: allowed.allowed, Handler: func(from ed25519.PublicKey, frame []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen[binary.BigEndian.Uint32(frame)]++
	}})
	ctx := ctxWait(t)
	var wg sync.WaitGroup
	errs := make(chan error, frames)
	for i := range uint32(frames) {
		wg.Go(func() {
			frame := binary.BigEndian.AppendUint32(nil, i)
			frame = append(frame, bytes.Repeat([]byte{byte(i)}, int(i%2000))...)
			if err := a.tr.Send(ctx, b.addr(), b.id.Public, frame); err != nil {
				errs <- fmt.Errorf("frame %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Send returned nil only after b's handler ran, so the count is final.
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != frames {
		t.Errorf("%d distinct frames arrived, want %d", len(seen), frames)
	}
	for i, n := range seen {
		if n != 1 || i >= frames {
			t.Errorf("frame %d arrived %d times", i, n)
		}
	}
}

func TestCloseUnblocksEverything(t *testing.T) {
	idA, idB := newIdentity(t), newIdentity(t)
	allowed := newKeySet(idA, idB)
	inHandler := make(chan struct{}, 1)
	release := make(chan struct{})
	a := newNode(t, Config{Identity: idA, Allowed: allowed.allowed})
	b := newNode(t, Config{Identity: idB, Allowed: allowed.allowed, MaxStreamsPerConn: 1,
		Handler: func(ed25519.PublicKey, []byte) {
			inHandler <- struct{}{}
			<-release
		}})
	defer close(release) // before b's Close, which waits for its handler

	// A UDP socket that swallows everything: dials to it never complete.
	blackhole, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer blackhole.Close()

	ctx := context.Background() // only Close may unblock these
	results := make(chan error, 3)
	go func() { results <- a.tr.Send(ctx, b.addr(), b.id.Public, []byte("waits for its ack")) }()
	select {
	case <-inHandler:
	case <-time.After(wait):
		t.Fatal("first frame never reached the handler")
	}
	// b allows one stream per connection: this one waits for a slot.
	go func() { results <- a.tr.Send(ctx, b.addr(), b.id.Public, []byte("waits for a stream")) }()
	go func() {
		results <- a.tr.Send(ctx, blackhole.LocalAddr().String(), b.id.Public, []byte("waits for a dial"))
	}()

	// Close must not depend on any of them finishing first.
	if err := a.tr.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case err := <-results:
			if err == nil {
				t.Error("Send succeeded across Close")
			}
			t.Logf("unblocked: %v", err)
		case <-time.After(wait):
			t.Fatal("a Send stayed blocked after Close")
		}
	}
	if err := a.tr.Send(ctx, b.addr(), b.id.Public, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	if err := a.tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSendHonoursContext(t *testing.T) {
	idA, idB := newIdentity(t), newIdentity(t)
	allowed := newKeySet(idA, idB)
	release := make(chan struct{})
	inHandler := make(chan struct{}, 1)
	a := newNode(t, Config{Identity: idA, Allowed: allowed.allowed})
	b := newNode(t, Config{Identity: idB, Allowed: allowed.allowed,
		Handler: func(_ ed25519.PublicKey, frame []byte) {
			if string(frame) == "slow" {
				inHandler <- struct{}{}
				<-release
			}
		}})
	defer close(release)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.tr.Send(ctx, b.addr(), b.id.Public, []byte("slow")) }()
	select {
	case <-inHandler:
	case <-time.After(wait):
		t.Fatal("frame never reached the handler")
	}
	cancel() // while the sender waits for the ack
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Send: %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("cancelled Send did not return")
	}
	// The connection is still usable.
	if err := a.tr.Send(ctxWait(t), b.addr(), b.id.Public, []byte("fast")); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidation(t *testing.T) {
	id := newIdentity(t)
	ok := func(ed25519.PublicKey) bool { return true }
	h := func(ed25519.PublicKey, []byte) {}
	for name, cfg := range map[string]Config{
		"no identity":       {Allowed: ok, Handler: h},
		"mismatched halves": {Identity: acl.Identity{Public: newIdentity(t).Public, Private: id.Private}, Allowed: ok, Handler: h},
		"no allowed":        {Identity: id, Handler: h},
		"no handler":        {Identity: id, Allowed: ok},
		"negative max":      {Identity: id, Allowed: ok, Handler: h, MaxFrameBytes: -1},
		"bad address":       {Identity: id, Allowed: ok, Handler: h, ListenAddr: "nowhere"},
	} {
		if tr, err := Listen(cfg); err == nil {
			_ = tr.Close()
			t.Errorf("%s: Listen succeeded", name)
		}
	}
}
