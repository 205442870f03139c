package quicnet

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/mnemohq/mnemo/acl"
)

// Errors returned by Listen and Send; test for them with errors.Is.
var (
	// ErrClosed: the transport has been closed.
	ErrClosed = errors.New("quicnet: transport closed")
	// ErrPeerKey: the peer's certificate key is not the key pinned for it.
	ErrPeerKey = errors.New("quicnet: peer key does not match the pinned key")
	// ErrRejected: the peer refused our key during or right after the
	// handshake, or stopped recognising it.
	ErrRejected = errors.New("quicnet: peer rejected our key")
	// ErrNotAllowed: an inbound client's key is not a cluster member.
	ErrNotAllowed = errors.New("quicnet: key is not a cluster member")
	// ErrFrameTooLarge: a frame is longer than MaxFrameBytes, ours or the
	// peer's.
	ErrFrameTooLarge = errors.New("quicnet: frame too large")
	// ErrCorrupt: bytes on a stream do not follow the frame protocol.
	ErrCorrupt = errors.New("quicnet: corrupt frame")
)

// Error codes on the wire, both as QUIC application (connection) codes and
// as stream codes. The 0x4d4e ("MN") prefix keeps them recognisable in
// packet captures.
const (
	codeFrameTooLarge = 0x4d4e01
	codeCorrupt       = 0x4d4e02
	codeCancelled     = 0x4d4e03
	codeNotAllowed    = 0x4d4e04
	codeShutdown      = 0x4d4e05
)

const ackOK = 1

// Defaults of Config fields left zero.
const (
	DefaultListenAddr        = "127.0.0.1:0"
	DefaultMaxFrameBytes     = 16 << 20
	DefaultMaxStreamsPerConn = 64
	DefaultDialTimeout       = 10 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
)

// Config configures a Transport. Identity, Allowed and Handler are
// required; every other field has a default.
type Config struct {
	// ListenAddr is the UDP host:port to listen and dial from. Default
	// DefaultListenAddr (loopback, any port); a node that peers can reach
	// sets a routable address.
	ListenAddr string

	// Identity is this node's key pair; its public half is the key of the
	// TLS certificate and what peers pin.
	Identity acl.Identity

	// Allowed reports whether a key belongs to a cluster member. It is
	// consulted for every inbound handshake and again for every inbound
	// stream, so removing a member takes effect on its open connections
	// too. Called from transport goroutines, concurrently: it must be safe
	// for concurrent use and fast.
	Allowed func(pub ed25519.PublicKey) bool

	// Handler receives each inbound frame with the authenticated key of
	// its sender. It is called concurrently from transport goroutines, at
	// most MaxStreamsPerConn at a time per peer connection; the sender's
	// Send returns only after Handler returns, so Handler must not block
	// long (hand the frame to a queue). The frame is the handler's to keep.
	Handler func(from ed25519.PublicKey, frame []byte)

	// MaxFrameBytes bounds a frame, in bytes, in both directions. Send
	// refuses longer frames locally; a peer declaring a longer one has its
	// stream cancelled and its connection closed. Default
	// DefaultMaxFrameBytes (16 MiB); at most 4 GiB-1.
	MaxFrameBytes int

	// MaxStreamsPerConn bounds the concurrent inbound streams (frames in
	// flight) each peer connection may have open. A Send beyond the peer's
	// limit waits for a slot. Default DefaultMaxStreamsPerConn.
	MaxStreamsPerConn int

	// DialTimeout bounds establishing a connection, on top of the caller's
	// context. Default DefaultDialTimeout.
	DialTimeout time.Duration

	// IdleTimeout closes a connection without traffic; the next Send
	// redials. Default DefaultIdleTimeout.
	IdleTimeout time.Duration

	// Logger receives inbound protocol violations and connection events.
	// Default: discard.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	id := c.Identity
	if len(id.Private) != ed25519.PrivateKeySize || len(id.Public) != ed25519.PublicKeySize ||
		!id.Public.Equal(id.Private.Public()) {
		return fmt.Errorf("quicnet: config: Identity is not a valid ed25519 key pair: %w", acl.ErrBadKey)
	}
	if c.Allowed == nil {
		return errors.New("quicnet: config: Allowed is required")
	}
	if c.Handler == nil {
		return errors.New("quicnet: config: Handler is required")
	}
	switch {
	case c.MaxFrameBytes == 0:
		c.MaxFrameBytes = DefaultMaxFrameBytes
	case c.MaxFrameBytes < 0 || uint64(c.MaxFrameBytes) > 1<<32-1:
		return fmt.Errorf("quicnet: config: MaxFrameBytes %d outside 1..2^32-1", c.MaxFrameBytes)
	}
	switch {
	case c.MaxStreamsPerConn == 0:
		c.MaxStreamsPerConn = DefaultMaxStreamsPerConn
	case c.MaxStreamsPerConn < 0:
		return fmt.Errorf("quicnet: config: MaxStreamsPerConn %d is negative", c.MaxStreamsPerConn)
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Transport sends frames to peers and receives theirs on one UDP port. All
// methods are safe for concurrent use.
type Transport struct {
	cfg      Config
	cert     tls.Certificate
	udp      *net.UDPConn
	qt       *quic.Transport
	ln       *quic.Listener
	dialConf *quic.Config
	log      *slog.Logger

	ctx    context.Context // cancelled by Close; parent of dials and accepts
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the transport starts

	mu     sync.Mutex
	closed bool
	peers  map[peerAddr]*dialing   // outbound connection per pinned key and address
	conns  map[*quic.Conn]struct{} // every open connection, for Close
}

// peerAddr names an outbound connection: the pinned key and the address
// dialed. A node restarted on a new port is the same key at another
// address; a connection to its old address must not carry frames meant
// for the new one.
type peerAddr struct{ key, addr string }

// dialing is one outbound connection, being established until done closes.
type dialing struct {
	done chan struct{}
	conn *quic.Conn // set before done closes, if err is nil
	err  error
}

func (d *dialing) finished() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Listen opens the UDP port and starts accepting connections. Inbound
// frames go to cfg.Handler until Close.
func Listen(cfg Config) (*Transport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cert, err := selfSignedCert(cfg.Identity)
	if err != nil {
		return nil, err
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("quicnet: listen address %q: %w", cfg.ListenAddr, err)
	}
	udp, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("quicnet: listen: %w", err)
	}
	// Derived from the node key, so it survives restarts: a restarted node
	// answers packets of its old connections with a stateless reset and
	// peers redial at once instead of waiting for the idle timeout.
	resetKey := quic.StatelessResetKey(sha256.Sum256(append([]byte("mnemo quicnet stateless reset\x00"), cfg.Identity.Private.Seed()...)))
	qt := &quic.Transport{Conn: udp, StatelessResetKey: &resetKey}
	serverConf := &quic.Config{
		MaxIdleTimeout:        cfg.IdleTimeout,
		MaxIncomingStreams:    int64(cfg.MaxStreamsPerConn),
		MaxIncomingUniStreams: -1,
	}
	// Peers never open streams on connections we dialed.
	dialConf := serverConf.Clone()
	dialConf.MaxIncomingStreams = -1

	ln, err := qt.Listen(serverTLS(cert, cfg.Allowed), serverConf)
	if err != nil {
		_ = qt.Close()
		_ = udp.Close()
		return nil, fmt.Errorf("quicnet: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{
		cfg:      cfg,
		cert:     cert,
		udp:      udp,
		qt:       qt,
		ln:       ln,
		dialConf: dialConf,
		log:      cfg.Logger.With("node", string(cfg.Identity.NodeID())),
		ctx:      ctx,
		cancel:   cancel,
		peers:    make(map[peerAddr]*dialing),
		conns:    make(map[*quic.Conn]struct{}),
	}
	t.wg.Go(t.acceptLoop)
	return t, nil
}

// Addr returns the UDP address the transport listens and dials on.
func (t *Transport) Addr() net.Addr { return t.udp.LocalAddr() }

// Send delivers frame to the peer at addr whose key is peerKey, and
// returns nil once the peer's Handler has returned with it.
//
// It reuses this transport's connection to peerKey at addr or dials one (a
// dial is shared by concurrent Sends to the same key and address); a
// connection to the key at another address is not used. A connection found dead
// before anything was written is redialed once. Each frame uses its own
// stream. Send blocks while the peer has MaxStreamsPerConn of our frames in
// flight, and until ctx ends; a frame interrupted by ctx may or may not
// have been handled. Errors wrap ErrFrameTooLarge, ErrPeerKey, ErrRejected,
// ErrCorrupt (the peer broke the protocol), ErrClosed, or the context's or
// network's error. Safe for concurrent use; frame is not retained.
func (t *Transport) Send(ctx context.Context, addr string, peerKey ed25519.PublicKey, frame []byte) error {
	if len(frame) > t.cfg.MaxFrameBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(frame), t.cfg.MaxFrameBytes)
	}
	if len(peerKey) != ed25519.PublicKeySize {
		return fmt.Errorf("quicnet: send: peer key is %d bytes, want %d: %w", len(peerKey), ed25519.PublicKeySize, acl.ErrBadKey)
	}
	for attempt := 0; ; attempt++ {
		conn, fresh, err := t.connTo(ctx, addr, peerKey)
		if err != nil {
			return err
		}
		str, err := conn.OpenStreamSync(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("quicnet: send to %s: %w", addr, context.Cause(ctx))
			}
			t.forget(peerKey, addr, conn)
			if !fresh && attempt == 0 {
				continue // the cached connection had died; nothing was written
			}
			return t.sendError(addr, err)
		}
		if err := exchange(ctx, str, frame); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("quicnet: send to %s: %w", addr, context.Cause(ctx))
			}
			var appErr *quic.ApplicationError
			if !fresh && attempt == 0 && errors.As(err, &appErr) && appErr.Remote {
				// The peer had closed the cached connection (because of an
				// earlier frame) before this stream got through: redial once.
				// A frame that did get handled is delivered twice, which the
				// replication protocol tolerates.
				t.forget(peerKey, addr, conn)
				continue
			}
			return t.sendError(addr, err)
		}
		return nil
	}
}

// Prove returns nil once the peer at addr has proved in a TLS handshake
// that it holds key: the connection Send would use, established if it was
// not (and kept for Send). The proof is the peer's certificate and its
// handshake signature; whether the peer accepts our key is checked on its
// side after ours is done, so Prove may succeed where Send is refused. It
// blocks until then or until ctx ends. Errors: ErrPeerKey (another key
// answered), ErrClosed, or the context's or network's error. Safe for
// concurrent use.
func (t *Transport) Prove(ctx context.Context, addr string, key ed25519.PublicKey) error {
	if len(key) != ed25519.PublicKeySize {
		return fmt.Errorf("quicnet: prove: peer key is %d bytes, want %d: %w", len(key), ed25519.PublicKeySize, acl.ErrBadKey)
	}
	_, _, err := t.connTo(ctx, addr, key)
	if errors.Is(err, ErrRejected) {
		// The peer refused our certificate, which in TLS 1.3 this side
		// sends only once it has checked the peer's certificate and
		// handshake signature against key: the proof holds. Under load
		// the refusal can reach the dial before it returns (CI, -race).
		return nil
	}
	return err
}

// exchange runs the sender's half of the stream protocol and finishes both
// directions of str whatever happens, so the stream slot is released.
func exchange(ctx context.Context, str *quic.Stream, frame []byte) error {
	abort := func() {
		str.CancelWrite(codeCancelled)
		str.CancelRead(codeCancelled)
	}
	stop := context.AfterFunc(ctx, abort)
	defer stop()

	var hdr [frameHeaderSize]byte
	if _, err := str.Write(appendFrameHeader(hdr[:0], len(frame))); err != nil {
		abort()
		return err
	}
	if _, err := str.Write(frame); err != nil {
		abort()
		return err
	}
	if err := str.Close(); err != nil {
		abort()
		return err
	}
	// The ack, then the end of the stream (which finishes our read side).
	var buf [8]byte
	n, err := io.ReadAtLeast(str, buf[:], 1)
	for err == nil && n < len(buf) {
		var m int
		m, err = str.Read(buf[n:])
		n += m
	}
	if !errors.Is(err, io.EOF) {
		abort()
		if err == nil {
			err = fmt.Errorf("%w: reply longer than one byte", ErrCorrupt)
		}
		return err
	}
	if n != 1 || buf[0] != ackOK {
		return fmt.Errorf("%w: reply %x, want %x", ErrCorrupt, buf[:n], []byte{ackOK})
	}
	return nil
}

// sendError turns a quic-go error into one of ours where the peer told us
// why, and names the address otherwise.
func (t *Transport) sendError(addr string, err error) error {
	if t.ctx.Err() != nil {
		return fmt.Errorf("quicnet: send to %s: %w", addr, ErrClosed)
	}
	return fmt.Errorf("quicnet: send to %s: %w", addr, classify(err))
}

func classify(err error) error {
	var (
		strErr *quic.StreamError
		appErr *quic.ApplicationError
		trErr  *quic.TransportError
	)
	code := uint64(0)
	switch {
	case errors.As(err, &strErr) && strErr.Remote:
		code = uint64(strErr.ErrorCode)
	case errors.As(err, &appErr) && appErr.Remote:
		code = uint64(appErr.ErrorCode)
	case errors.As(err, &trErr) && trErr.Remote && trErr.ErrorCode >= 0x100 && trErr.ErrorCode < 0x200:
		// A TLS alert from the peer: it refused our certificate.
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	switch code {
	case codeFrameTooLarge:
		return fmt.Errorf("%w: the peer refused it: %w", ErrFrameTooLarge, err)
	case codeCorrupt:
		return fmt.Errorf("%w: the peer could not parse it: %w", ErrCorrupt, err)
	case codeNotAllowed:
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	return err
}

// connTo returns a live connection pinned to key, dialing addr if there is
// none. fresh reports that the connection was not already established when
// connTo was called.
func (t *Transport) connTo(ctx context.Context, addr string, key ed25519.PublicKey) (conn *quic.Conn, fresh bool, err error) {
	k := peerAddr{string(key), addr}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, false, ErrClosed
	}
	d := t.peers[k]
	if d != nil && d.finished() && (d.err != nil || d.conn.Context().Err() != nil) {
		d = nil
	}
	fresh = d == nil || !d.finished()
	if d == nil {
		d = &dialing{done: make(chan struct{})}
		t.peers[k] = d
		// Dial on the transport's context, not the caller's: other Sends
		// may be waiting for the same connection.
		t.wg.Go(func() { t.dial(d, addr, key) })
	}
	t.mu.Unlock()

	select {
	case <-d.done:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("quicnet: dial %s: %w", addr, context.Cause(ctx))
	}
	if d.err != nil {
		return nil, false, d.err
	}
	return d.conn, fresh, nil
}

func (t *Transport) dial(d *dialing, addr string, key ed25519.PublicKey) {
	defer close(d.done)
	defer func() {
		if d.err != nil { // failed dials are not kept: the next Send or Prove dials again
			t.mu.Lock()
			if k := (peerAddr{string(key), addr}); t.peers[k] == d {
				delete(t.peers, k)
			}
			t.mu.Unlock()
		}
	}()
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.DialTimeout)
	defer cancel()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		d.err = fmt.Errorf("quicnet: dial %s: %w", addr, err)
		return
	}
	var presented atomic.Pointer[ed25519.PublicKey]
	conn, err := t.qt.Dial(ctx, raddr, clientTLS(t.cert, key, &presented), t.dialConf)
	if err != nil {
		switch p := presented.Load(); {
		case p != nil:
			d.err = fmt.Errorf("%w: %s should be %s but presented %s", ErrPeerKey, addr, acl.NodeIDOf(key), acl.NodeIDOf(*p))
		case t.ctx.Err() != nil:
			d.err = ErrClosed
		default:
			d.err = fmt.Errorf("quicnet: dial %s: %w", addr, classify(err))
		}
		return
	}
	if !t.track(conn) {
		_ = conn.CloseWithError(codeShutdown, "transport closing")
		d.err = ErrClosed
		return
	}
	d.conn = conn
	t.log.Debug("quicnet: connected", "peer", string(acl.NodeIDOf(key)), "addr", addr)
	t.wg.Go(func() {
		<-conn.Context().Done()
		t.untrack(conn)
		t.forget(key, addr, conn)
	})
}

// forget drops conn as the cached connection to key at addr, so the next
// Send redials.
func (t *Transport) forget(key ed25519.PublicKey, addr string, conn *quic.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := peerAddr{string(key), addr}
	if d := t.peers[k]; d != nil && d.finished() && d.conn == conn {
		delete(t.peers, k)
	}
}

func (t *Transport) track(c *quic.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c *quic.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.conns, c)
}

func (t *Transport) acceptLoop() {
	for {
		conn, err := t.ln.Accept(t.ctx)
		if err != nil {
			if t.ctx.Err() == nil {
				t.log.Error("quicnet: accept stopped", "err", err)
			}
			return
		}
		if !t.track(conn) {
			_ = conn.CloseWithError(codeShutdown, "transport closing")
			return
		}
		t.wg.Go(func() { t.serveConn(conn) })
	}
}

func (t *Transport) serveConn(conn *quic.Conn) {
	defer t.untrack(conn)
	certs := conn.ConnectionState().TLS.PeerCertificates
	var from ed25519.PublicKey
	if len(certs) > 0 {
		from, _ = certs[0].PublicKey.(ed25519.PublicKey)
	}
	if from == nil { // the handshake's VerifyPeerCertificate makes this unreachable
		_ = conn.CloseWithError(codeNotAllowed, "no ed25519 client certificate")
		return
	}
	log := t.log.With("peer", string(acl.NodeIDOf(from)), "addr", conn.RemoteAddr().String())
	for {
		str, err := conn.AcceptStream(t.ctx)
		if err != nil {
			return // connection closed, by either side
		}
		t.wg.Go(func() { t.serveStream(conn, str, from, log) })
	}
}

// serveStream runs the receiver's half of the stream protocol. Every path
// finishes both directions of str.
func (t *Transport) serveStream(conn *quic.Conn, str *quic.Stream, from ed25519.PublicKey, log *slog.Logger) {
	fail := func(code quic.ApplicationErrorCode, msg string, err error) {
		str.CancelRead(quic.StreamErrorCode(code))
		str.CancelWrite(quic.StreamErrorCode(code))
		if code != codeCancelled {
			log.Warn("quicnet: closing connection: "+msg, "err", err)
			_ = conn.CloseWithError(code, msg)
		}
	}
	if !t.cfg.Allowed(from) {
		fail(codeNotAllowed, "key not allowed", ErrNotAllowed)
		return
	}
	frame, err := readFrame(str, t.cfg.MaxFrameBytes)
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		fail(codeFrameTooLarge, "frame too large", err)
		return
	case errors.Is(err, ErrCorrupt):
		fail(codeCorrupt, "corrupt frame", err)
		return
	case err != nil: // the sender cancelled, or the connection is gone
		fail(codeCancelled, "", err)
		return
	}
	t.cfg.Handler(from, frame)
	if _, err := str.Write([]byte{ackOK}); err != nil {
		str.CancelWrite(codeCancelled)
		return
	}
	_ = str.Close()
}

// Close closes every connection (peers see an application close, not a
// timeout), stops accepting, waits for Handler calls in flight to return,
// and releases the UDP port. Sends in progress or later return ErrClosed
// or a connection error. Close is idempotent; do not call it from Handler.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	conns := make([]*quic.Conn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()

	t.cancel()
	for _, c := range conns {
		_ = c.CloseWithError(codeShutdown, "transport closing")
	}
	errLn := t.ln.Close()
	t.wg.Wait()
	errQT := t.qt.Close()
	errUDP := t.udp.Close()
	if err := errors.Join(errLn, errQT, errUDP); err != nil {
		return fmt.Errorf("quicnet: close: %w", err)
	}
	return nil
}
