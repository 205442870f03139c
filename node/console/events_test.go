package console

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/namespace"
)

// However many namespaces change before a stream is read, it holds at
// most maxPendingNamespaces of them, then only "something changed".
func TestStreamPendingSetIsBounded(t *testing.T) {
	st := &stream{wake: make(chan struct{}, 1)}
	st.mark([]string{"agent://a", "agent://a", "team://x"})
	if nss, over := st.take(); over || len(nss) != 2 {
		t.Fatalf("take: %v %v", nss, over)
	}
	for i := 0; i < 10*maxPendingNamespaces; i++ {
		st.mark([]string{fmt.Sprintf("team://t%d", i)})
		if len(st.pending) > maxPendingNamespaces {
			t.Fatalf("%d pending namespaces", len(st.pending))
		}
	}
	if nss, over := st.take(); !over || nss != nil {
		t.Fatalf("after an overflow: %v %v", nss, over)
	}
	if len(st.wake) != 1 {
		t.Fatal("marks left no wake-up")
	}
}

// A session opening more streams than allowed closes its oldest, and
// only its own.
func TestStreamsPerSessionAreBounded(t *testing.T) {
	b := &broker{}
	other := b.open("other")
	var first *stream
	for i := 0; i <= maxStreamsPerSession; i++ {
		st := b.open("s")
		if first == nil {
			first = st
		}
	}
	if b.len() != maxStreamsPerSession+1 {
		t.Fatalf("%d streams, want %d", b.len(), maxStreamsPerSession+1)
	}
	if _, open := <-first.wake; open {
		t.Fatal("the oldest stream was not closed")
	}
	select {
	case <-other.wake:
		t.Fatal("another session's stream was closed")
	default:
	}
}

// Ending a session (sign-out, eviction, expiry) closes its done channel,
// which ends its event streams.
func TestEndedSessionsCloseTheirStreams(t *testing.T) {
	s := newSessionStore(1, time.Minute, time.Hour)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := namespace.MustParse("agent://alice")
	first := s.create(p, true, now)
	s.create(p, true, now) // evicts first
	select {
	case <-first.done:
	default:
		t.Fatal("an evicted session's done channel is open")
	}
	if s.get(first.id, now) != nil {
		t.Fatal("an evicted session is still found")
	}
}

// Close ends open event streams (a server's shutdown would otherwise wait
// for them), and a stream opened afterwards ends at once.
func TestCloseEndsEventStreams(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn(ownerToken)
	stream := func() *http.Response {
		req, _ := http.NewRequest("GET", f.srv.URL+"/ui/events", nil)
		resp, err := b.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	open := bufio.NewReader(stream().Body)
	if line, _ := open.ReadString('\n'); !strings.HasPrefix(line, ":") {
		t.Fatalf("first line %q", line)
	}
	f.c.Close()
	if rest, err := io.ReadAll(open); err != nil || strings.TrimSpace(string(rest)) != "" {
		t.Fatalf("after Close: %q %v", rest, err)
	}
	if rest, err := io.ReadAll(stream().Body); err != nil || !strings.HasPrefix(string(rest), ": live updates") {
		t.Fatalf("a stream opened after Close: %q %v", rest, err)
	}
}
