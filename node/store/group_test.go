package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mnemohq/mnemo/crdt"
)

// groupKV wraps a KV: it counts committed Updates, records the most record
// keys one Update wrote, and refuses a transaction that writes more than
// limit bytes (0: no limit) with ErrTxnTooBig, as Badger does.
type groupKV struct {
	KV
	gate    chan struct{} // when set, every Update waits for it to close
	limit   int
	commits atomic.Int64
	maxRecs atomic.Int64
}

func (k *groupKV) Update(fn func(w Writer) error) error {
	if k.gate != nil {
		<-k.gate
	}
	lw := &limitWriter{Writer: nil, left: k.limit, limited: k.limit > 0}
	err := k.KV.Update(func(w Writer) error {
		lw.Writer = w
		return fn(lw)
	})
	if err == nil {
		k.commits.Add(1)
		if n := int64(lw.recs); n > k.maxRecs.Load() {
			k.maxRecs.Store(n)
		}
	}
	return err
}

type limitWriter struct {
	Writer
	left    int
	limited bool
	recs    int
}

func (w *limitWriter) Set(key, value []byte) error {
	if bytes.HasPrefix(key, []byte("r/")) {
		w.recs++
	}
	if w.left -= len(key) + len(value); w.limited && w.left < 0 {
		return ErrTxnTooBig
	}
	return w.Writer.Set(key, value)
}

// hold starts a write whose commit waits (holding the lead) until
// release is closed: the writes started after it are built and queue
// behind it, and join its group once it is released.
func hold(s *Store, kv *groupKV, id string, release chan struct{}) <-chan error {
	kv.gate = release
	return start(s, set("team://held", id, 1, "ti", "held"))
}

// openStore opens a store over kv, failing t if it cannot.
func openStore(t *testing.T, kv KV, opt Options) *Store {
	t.Helper()
	s, err := Open(kv, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs fn as an Update in its own goroutine and waits until it is
// queued (or running), so that requests queue in the order started.
func start(s *Store, fn func(tx *Tx) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panicked: %v", p)
			}
		}()
		_, err := s.Update(7, fn)
		done <- err
	}()
	synctest.Wait()
	return done
}

// set is an Update closure writing field=value in record id of ns at ts(at).
func set(ns, id string, at int, field, value string) func(tx *Tx) error {
	return func(tx *Tx) error {
		e, err := tx.Edit(ns, id)
		if err != nil {
			return err
		}
		if err := e.Set(ts(at), field, []byte(value)); err != nil {
			return err
		}
		tx.Commit(ns, id, e)
		return nil
	}
}

func field(t *testing.T, s *Store, ns, id, name string) string {
	t.Helper()
	rec, err := s.Record(ns, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil {
		return "<absent>"
	}
	f, ok := rec.Field(name)
	if !ok {
		return "<unset>"
	}
	return string(f.Value)
}

// Writers queued behind a leader share one commit, each is acknowledged
// only once it is durable (it survives a power cut), and a group cut
// before its commit acknowledges none of its writes and leaves the
// store's memory as it was.
func TestGroupCommitIsDurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns, n = "team://a", 8
		mem := NewMemKV()
		kv := &groupKV{KV: mem}
		s, err := Open(kv, Options{})
		if err != nil {
			t.Fatal(err)
		}
		opened := kv.commits.Load()
		release := make(chan struct{})
		held := hold(s, kv, "h1", release)
		var acks []<-chan error
		for i := range n {
			acks = append(acks, start(s, set(ns, fmt.Sprint("m", i), i+1, "ti", fmt.Sprint("v", i))))
		}
		if q := s.QueueLen(); q != n+1 {
			t.Fatalf("queued %d, want %d", q, n+1)
		}
		close(release)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		for i, a := range acks {
			if err := <-a; err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		if c := kv.commits.Load() - opened; c != 1 {
			t.Fatalf("%d commits, want 1 for the holder and the %d writes queued behind it", c, n)
		}

		// Every acknowledged write survives a power cut.
		mem = mem.Crash()
		kv = &groupKV{KV: mem}
		s, err = Open(kv, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got := field(t, s, ns, fmt.Sprint("m", i), "ti"); got != fmt.Sprint("v", i) {
				t.Fatalf("after the crash m%d has %q", i, got)
			}
		}
		before := s.Context(ns).Encode()

		// A group cut before its commit: nobody in it is acknowledged.
		release = make(chan struct{})
		held = hold(s, kv, "h2", release)
		synctest.Wait()
		acks = acks[:0]
		for i := range n {
			fn := set(ns, fmt.Sprint("c", i), 100+i, "ti", "lost")
			if i == n/2 {
				inner := fn
				fn = func(tx *Tx) error { mem.PowerCut(); return inner(tx) }
			}
			acks = append(acks, start(s, fn))
		}
		close(release)
		if err := <-held; !errors.Is(err, ErrClosed) {
			t.Fatalf("the holder, in the cut group: %v, want ErrClosed", err)
		}
		for i, a := range acks {
			if err := <-a; !errors.Is(err, ErrClosed) {
				t.Fatalf("write %d in the cut group: %v, want ErrClosed", i, err)
			}
		}
		if !bytes.Equal(s.Context(ns).Encode(), before) {
			t.Fatal("the cut group changed the namespace's context in memory")
		}
		s2, err := Open(mem.Restart(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got := field(t, s2, ns, fmt.Sprint("c", i), "ti"); got != "<absent>" {
				t.Fatalf("unacknowledged c%d was committed: %q", i, got)
			}
			if got := field(t, s2, ns, fmt.Sprint("m", i), "ti"); got != fmt.Sprint("v", i) {
				t.Fatalf("m%d lost: %q", i, got)
			}
		}
		s2.Close()
		s.Close()
	})
}

// Each Update sees the writes built before it, committed or not; one that
// fails or panics writes nothing and takes nobody else down; a peer's
// delta (Apply) rides along in the group.
func TestGroupIsolatesFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns = "team://a"
		kv := &groupKV{KV: NewMemKV()}
		s := openStore(t, kv, Options{})
		defer s.Close()
		opened := kv.commits.Load()
		release := make(chan struct{})
		held := hold(s, kv, "h3", release)
		boom := errors.New("boom")
		a := start(s, set(ns, "m1", 1, "ti", "a"))
		b := start(s, func(tx *Tx) error {
			if err := set(ns, "m1", 2, "ti", "b")(tx); err != nil {
				return err
			}
			return boom
		})
		var seen string
		c := start(s, func(tx *Tx) error {
			rec, err := tx.Record(ns, "m1")
			if err != nil {
				return err
			}
			if f, ok := rec.Field("ti"); ok {
				seen = string(f.Value)
			}
			return set(ns, "m1", 3, "body", "c")(tx)
		})
		d := start(s, func(tx *Tx) error {
			_ = set(ns, "m1", 4, "ti", "d")(tx)
			panic("d")
		})
		peer, _ := crdt.NewEdit(crdt.NewContext(), nil, 9, "m2", crdt.DefaultLimits())
		_ = peer.Set(ts(5), "ti", []byte("peer"))
		applied := make(chan error, 1)
		go func() {
			_, err := s.Apply(map[string]*crdt.Map{ns: peer.Delta()})
			applied <- err
		}()
		synctest.Wait()
		var seenPeer string
		e := start(s, func(tx *Tx) error { // reads what the peer's pending delta wrote
			rec, err := tx.Record(ns, "m2")
			if f, ok := rec.Field("ti"); ok {
				seenPeer = string(f.Value)
			}
			return err
		})
		close(release)
		<-held
		if err := <-a; err != nil {
			t.Fatal(err)
		}
		if err := <-b; !errors.Is(err, boom) {
			t.Fatalf("the failing Update returned %v", err)
		}
		if err := <-c; err != nil {
			t.Fatal(err)
		}
		if err := <-d; err == nil || !strings.Contains(err.Error(), "panicked: d") {
			t.Fatalf("the panicking Update: %v, want its submitter to panic", err)
		}
		if err := <-applied; err != nil {
			t.Fatal(err)
		}
		if err := <-e; err != nil || seenPeer != "peer" {
			t.Fatalf("an Update after the peer's delta saw m2 ti=%q (%v), want %q", seenPeer, err, "peer")
		}
		if c := kv.commits.Load() - opened; c != 1 {
			t.Fatalf("%d commits, want 1", c)
		}
		if seen != "a" {
			t.Fatalf("the third Update saw ti=%q, want the first's %q", seen, "a")
		}
		if ti, body, peer := field(t, s, ns, "m1", "ti"), field(t, s, ns, "m1", "body"), field(t, s, ns, "m2", "ti"); ti != "a" || body != "c" || peer != "peer" {
			t.Fatalf("stored ti=%q body=%q m2=%q, want a, c, peer", ti, body, peer)
		}
		// the next write allocates after what the group committed
		edit(t, s, ns, "m1", 6, "ti", "later")
		if got := field(t, s, ns, "m1", "ti"); got != "later" {
			t.Fatalf("ti=%q", got)
		}
	})
}

// A group that grows too big for one KV transaction is split, without
// running any closure again. A write too big on its own fails, and so do
// the writes built over it (ErrAborted), which nothing else would undo.
func TestGroupSplitsWhenTooBig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns = "team://a"
		kv := &groupKV{KV: NewMemKV(), limit: 3000}
		s := openStore(t, kv, Options{GroupBytes: 1 << 30})
		defer s.Close()
		opened := kv.commits.Load()
		release := make(chan struct{})
		held := hold(s, kv, "h4", release)
		var runs atomic.Int64
		big := func(id string, at, size int) func(tx *Tx) error {
			return func(tx *Tx) error {
				runs.Add(1)
				return set(ns, id, at, "body", strings.Repeat("x", size))(tx)
			}
		}
		a := start(s, big("a", 1, 1600))
		b := start(s, big("b", 2, 1600))
		huge := start(s, big("h", 3, 4000))
		c := start(s, big("c", 4, 1600))
		close(release)
		<-held
		for _, w := range []<-chan error{a, b} {
			if err := <-w; err != nil {
				t.Fatal(err)
			}
		}
		if err := <-huge; !errors.Is(err, ErrTxnTooBig) || errors.Is(err, ErrAborted) {
			t.Fatalf("the write too big alone: %v, want ErrTxnTooBig", err)
		}
		if err := <-c; !errors.Is(err, ErrAborted) {
			t.Fatalf("the write built over it: %v, want ErrAborted", err)
		}
		edit(t, s, ns, "c", 5, "body", strings.Repeat("x", 1600)) // its retry
		if c := kv.commits.Load() - opened; c != 3 {
			t.Fatalf("%d commits, want 3: the holder with a, then b, then the retry", c)
		}
		if r := runs.Load(); r != 4 {
			t.Fatalf("closures ran %d times, want once each (4)", r)
		}
		for _, id := range []string{"a", "b", "c"} {
			if got := field(t, s, ns, id, "body"); len(got) != 1600 {
				t.Fatalf("%s: %d bytes stored", id, len(got))
			}
		}
		if got := field(t, s, ns, "h", "body"); got != "<absent>" {
			t.Fatal("the refused write was stored")
		}
	})
}

// The queue is bounded: a writer past MaxPending waits for a place, and a
// group takes at most GroupMax requests.
func TestGroupQueueIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns = "team://a"
		kv := &groupKV{KV: NewMemKV()}
		s := openStore(t, kv, Options{MaxPending: 3, GroupMax: 2})
		defer s.Close()
		release := make(chan struct{})
		held := hold(s, kv, "h5", release)
		var acks []<-chan error
		for i := range 6 {
			acks = append(acks, start(s, set(ns, fmt.Sprint("m", i), i+1, "ti", "x")))
		}
		if q := s.QueueLen(); q != 3 {
			t.Fatalf("%d writes queued, want 3 (MaxPending)", q)
		}
		close(release)
		<-held
		for _, a := range acks {
			if err := <-a; err != nil {
				t.Fatal(err)
			}
		}
		if m := kv.maxRecs.Load(); m > 2 {
			t.Fatalf("a group wrote %d records, want at most GroupMax 2", m)
		}
	})
}
