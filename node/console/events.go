package console

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
)

// Live updates. The memory service tells the broker which namespaces each
// write or applied peer delta changed (Service.OnChanged, on the writer's
// goroutine); the broker only marks every open stream and wakes it, never
// blocking the writer. Each stream holds a bounded set of changed
// namespaces (past maxPendingNamespaces it collapses to "something
// changed"), so a slow browser costs a fixed amount of memory however
// fast the node writes. The stream's own goroutine filters by what its
// principal may read before it sends a word, so a page learns only that a
// namespace it may read changed, and then reloads its data through the
// same authorized handlers as any page view.

const (
	maxPendingNamespaces = 64
	maxStreamsPerSession = 4
)

type stream struct {
	sessionID string
	wake      chan struct{} // capacity 1: a pending wake-up is enough

	mu       sync.Mutex
	pending  []string // sorted, no duplicates
	overflow bool     // more namespaces changed than pending holds
}

func (st *stream) mark(nss []string) {
	st.mu.Lock()
	for _, ns := range nss {
		if st.overflow {
			break
		}
		i, found := slices.BinarySearch(st.pending, ns)
		if found {
			continue
		}
		if len(st.pending) >= maxPendingNamespaces {
			st.overflow, st.pending = true, nil
			break
		}
		st.pending = slices.Insert(st.pending, i, ns)
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

func (st *stream) take() (nss []string, overflow bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	nss, overflow = st.pending, st.overflow
	st.pending, st.overflow = nil, false
	return nss, overflow
}

// broker is the set of open event streams.
type broker struct {
	mu      sync.Mutex
	streams []*stream
}

func (b *broker) changed(nss []string) {
	b.mu.Lock()
	streams := slices.Clone(b.streams)
	b.mu.Unlock()
	for _, st := range streams {
		st.mark(nss)
	}
}

// open adds a stream for a session; past maxStreamsPerSession the
// session's oldest stream is dropped (its wake channel closes, so its
// handler returns and the browser's EventSource reconnects if that tab is
// still open).
func (b *broker) open(sessionID string) *stream {
	st := &stream{sessionID: sessionID, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, o := range b.streams {
		if o.sessionID == sessionID {
			n++
		}
	}
	if n >= maxStreamsPerSession {
		i := slices.IndexFunc(b.streams, func(o *stream) bool { return o.sessionID == sessionID })
		close(b.streams[i].wake)
		b.streams = slices.Delete(b.streams, i, i+1)
	}
	b.streams = append(b.streams, st)
	return st
}

func (b *broker) close(st *stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.streams, st); i >= 0 {
		b.streams = slices.Delete(b.streams, i, i+1)
	}
}

func (b *broker) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.streams)
}

// events is GET /ui/events: a text/event-stream of "changed" events whose
// data is a namespace the session's principal may read, or "*" after more
// namespaces changed than a stream holds ("*" names nothing, so it tells
// the principal nothing it may not know).
func (c *Console) events(w http.ResponseWriter, r *http.Request, ss *session) error {
	fl, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("console: the response writer cannot stream")
	}
	st := c.broker.open(ss.id)
	defer c.broker.close(st)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": live updates\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-ss.done:
			return nil
		case <-c.closing:
			return nil
		case _, open := <-st.wake:
			if !open {
				return nil
			}
		}
		nss, overflow := st.take()
		if overflow {
			fmt.Fprint(w, "event: changed\ndata: *\n\n")
		}
		for _, ns := range nss {
			if c.svc.MayRead(ss.principal, ns) {
				fmt.Fprintf(w, "event: changed\ndata: %s\n\n", ns)
			}
		}
		fl.Flush()
	}
}
