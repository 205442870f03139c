package store

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/mnemohq/mnemo/crdt"
)

// syncGateKV is a MemKV whose Sync waits, while gate is set, for gate to
// close; it counts commits and syncs.
type syncGateKV struct {
	*MemKV
	gate    atomic.Pointer[chan struct{}]
	commits atomic.Int64
	syncs   atomic.Int64
}

func (k *syncGateKV) UpdateNoSync(fn func(w Writer) error) error {
	err := k.MemKV.UpdateNoSync(fn)
	if err == nil {
		k.commits.Add(1)
	}
	return err
}

func (k *syncGateKV) Sync() error {
	if g := k.gate.Load(); g != nil {
		<-*g
	}
	k.syncs.Add(1)
	return k.MemKV.Sync()
}

// hold makes the syncs wait until the returned release is called; the
// syncs after it run at once.
func (k *syncGateKV) hold() (release func()) {
	g := make(chan struct{})
	k.gate.Store(&g)
	return func() {
		k.gate.Store(nil)
		close(g)
	}
}

func notDone(c <-chan error) bool {
	select {
	case err := <-c:
		panic(err)
	default:
		return true
	}
}

// A group commits while the sync of the group before it runs, and the
// groups committed during one sync share the next; a write is
// acknowledged only once a sync begun after its commit ends, and what a
// reader sees (Context, Record) is never a write not yet synced: the
// record read waits for the sync.
func TestCommitWhileTheLastGroupSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns = "team://a"
		kv := &syncGateKV{MemKV: NewMemKV()}
		s := openStore(t, kv, Options{})
		defer s.Close()
		edit(t, s, ns, "m0", 1, "ti", "v0")
		before := s.Context(ns)
		commits, syncs := kv.commits.Load(), kv.syncs.Load()

		release := kv.hold()
		a := start(s, set(ns, "a", 2, "ti", "A"))
		if kv.commits.Load() != commits+1 {
			t.Fatal("a is not committed")
		}
		read := make(chan string, 1)
		go func() { read <- field(t, s, ns, "a", "ti") }()
		b := start(s, set(ns, "b", 3, "ti", "B"))
		c := start(s, set(ns, "c", 4, "ti", "C"))
		synctest.Wait()
		if n := kv.commits.Load() - commits; n < 2 {
			t.Fatalf("%d commits while a's sync runs, want b and c committed too", n)
		}
		notDone(a)
		notDone(b)
		notDone(c)
		if len(read) != 0 {
			t.Fatal("a read returned a write not yet synced")
		}
		if !s.Context(ns).Equal(before) {
			t.Fatal("Context shows a write not yet synced")
		}

		release()
		for _, w := range []<-chan error{a, b, c} {
			if err := <-w; err != nil {
				t.Fatal(err)
			}
		}
		if got := <-read; got != "A" {
			t.Fatalf("the read found %q", got)
		}
		if n := kv.syncs.Load() - syncs; n != 2 {
			t.Fatalf("%d syncs, want 2: a's, then one for b and c", n)
		}
		for _, id := range []string{"a", "b", "c"} {
			if r, _ := s.Record(ns, id); r == nil || !s.Context(ns).Contains(r.Dots()[0]) {
				t.Fatalf("%s acknowledged and not in the context readers see", id)
			}
		}
	})
}

// A crash while a group syncs: the writes committed and not yet synced
// (the syncing group's and the one committed behind it) are not
// acknowledged, are lost, a read that may have seen them fails, and the
// store refuses writes once its sync failed.
func TestCrashBeforeTheSyncLosesOnlyUnacknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns = "team://a"
		kv := &syncGateKV{MemKV: NewMemKV()}
		s := openStore(t, kv, Options{})
		edit(t, s, ns, "m0", 1, "ti", "kept")
		release := kv.hold()
		a := start(s, set(ns, "a", 2, "ti", "A"))
		b := start(s, set(ns, "b", 3, "ti", "B"))
		read := make(chan error, 1)
		go func() {
			_, err := s.Record(ns, "a")
			read <- err
		}()
		synctest.Wait()
		kv.PowerCut()
		release()
		for _, w := range []<-chan error{a, b} {
			if err := <-w; !errors.Is(err, ErrSync) {
				t.Fatalf("a write whose sync failed: %v, want ErrSync", err)
			}
		}
		if err := <-read; !errors.Is(err, ErrSync) {
			t.Fatalf("a read that saw a write whose sync failed: %v, want ErrSync", err)
		}
		if _, err := s.Update(7, set(ns, "d", 5, "ti", "D")); !errors.Is(err, ErrSync) {
			t.Fatalf("a write after a failed sync: %v, want ErrSync", err)
		}
		_ = s.Close()

		s2, err := Open(kv.Restart(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if got := field(t, s2, ns, "m0", "ti"); got != "kept" {
			t.Fatalf("an acknowledged write was lost: %q", got)
		}
		for _, id := range []string{"a", "b"} {
			if got := field(t, s2, ns, id, "ti"); got != "<absent>" {
				t.Fatalf("%s was never synced and survived: %q", id, got)
			}
		}
		// The restarted node allocates the lost writes' dots again: no
		// peer can hold them, since no read passed them on.
		if c := s2.Context(ns); c.Contains(crdt.Dot{Replica: 7, Counter: 2}) {
			t.Fatalf("the context kept a lost dot: %v", c)
		}
	})
}

// An Update whose closure fails after reading a write not yet synced
// answers its error only once that write is durable, and the sync's
// error instead if it failed: the error may rest on what a crash loses.
func TestClosureErrorWaitsForWhatItRead(t *testing.T) {
	for _, cut := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			const ns = "team://a"
			kv := &syncGateKV{MemKV: NewMemKV()}
			s := openStore(t, kv, Options{})
			defer s.Close()
			release := kv.hold()
			a := start(s, set(ns, "a", 1, "ti", "A"))
			refused := errors.New("a exists")
			answer := start(s, func(tx *Tx) error {
				if r, err := tx.Record(ns, "a"); err != nil || r == nil {
					return fmt.Errorf("a not read: %v", err)
				}
				return refused
			})
			notDone(answer)
			if cut {
				kv.PowerCut()
			}
			release()
			<-a
			got := <-answer
			switch {
			case !cut && !errors.Is(got, refused):
				t.Fatalf("the closure's answer: %v, want its error", got)
			case cut && !errors.Is(got, ErrSync):
				t.Fatalf("the closure read a write lost with its sync and answered %v, want ErrSync", got)
			}
		})
	}
}

// A closure that fails after reading a write queued and not yet committed
// answers once that write is acknowledged.
func TestClosureErrorWaitsForTheWritesQueuedBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ns = "team://a"
		kv := &groupKV{KV: NewMemKV()}
		s := openStore(t, kv, Options{})
		defer s.Close()
		release := make(chan struct{})
		held := hold(s, kv, "h", release)
		b := start(s, set(ns, "b", 2, "ti", "B"))
		refused := errors.New("b exists")
		answer := start(s, func(tx *Tx) error {
			if r, err := tx.Record(ns, "b"); err != nil || r == nil {
				return fmt.Errorf("b not read: %v", err)
			}
			return refused
		})
		notDone(answer)
		close(release)
		for _, w := range []<-chan error{held, b} {
			if err := <-w; err != nil {
				t.Fatal(err)
			}
		}
		if got := <-answer; !errors.Is(got, refused) {
			t.Fatalf("the closure's answer: %v, want its error", got)
		}
	})
}
