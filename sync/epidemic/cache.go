package epidemic

import "time"

// received remembers the payloads this node has received, so each is
// delivered once, and keeps the recent ones to answer grafts. Both are
// first in, first out over one queue in order of receipt: ids are
// forgotten past CacheMaxIDs or CacheTTL, payloads (earlier) past
// PayloadTTL or PayloadMaxBytes. A forgotten payload is answered by no
// graft; a forgotten id is delivered again if the payload comes back.
type received struct {
	maxIDs   int
	ttl      time.Duration
	pTTL     time.Duration
	maxBytes int

	m     map[MsgID]*entry
	queue []queued // order of receipt; queue[head:] are remembered
	head  int
	pHead int // queue[pHead:] may still hold their payload; head ≤ pHead
	bytes int // payload bytes held
}

// queued is an id in order of receipt, with its time (so trimming reads
// no map).
type queued struct {
	id MsgID
	at time.Time
}

type entry struct {
	at      time.Time
	payload []byte // nil once dropped
	round   int    // hops it took to arrive (0: broadcast here)
	from    PeerID // "" when broadcast here
	origin  PeerID
	// asked: peers sent a KindWant for it; their answers are not pushes.
	asked []PeerID
}

func newReceived(c *Config) *received {
	return &received{maxIDs: c.CacheMaxIDs, ttl: c.CacheTTL, pTTL: c.PayloadTTL, maxBytes: c.PayloadMaxBytes, m: map[MsgID]*entry{}}
}

func (r *received) get(id MsgID) *entry { return r.m[id] }

func (r *received) add(id MsgID, e *entry) {
	r.m[id] = e
	r.queue = append(r.queue, queued{id, e.at})
	r.bytes += len(e.payload)
	r.trim(e.at)
}

// trim forgets what is past its bounds at now.
func (r *received) trim(now time.Time) {
	for r.head < len(r.queue) {
		q := r.queue[r.head]
		if len(r.queue)-r.head <= r.maxIDs && now.Sub(q.at) < r.ttl {
			break
		}
		r.dropPayload(r.m[q.id])
		delete(r.m, q.id)
		r.head++
	}
	r.pHead = max(r.pHead, r.head)
	for r.pHead < len(r.queue) {
		q := r.queue[r.pHead]
		if r.bytes <= r.maxBytes && now.Sub(q.at) < r.pTTL {
			break
		}
		r.dropPayload(r.m[q.id])
		r.pHead++
	}
	if r.head > 1024 && r.head > len(r.queue)/2 {
		n := copy(r.queue, r.queue[r.head:])
		clear(r.queue[n:])
		r.queue = r.queue[:n]
		r.pHead -= r.head
		r.head = 0
	}
}

// restamp gives the ids received at the zero time (before the node had a
// time: Node.start) the time now; they are the first of the queue.
func (r *received) restamp(now time.Time) {
	for i := r.head; i < len(r.queue) && r.queue[i].at.IsZero(); i++ {
		r.queue[i].at = now
		r.m[r.queue[i].id].at = now
	}
}

func (r *received) dropPayload(e *entry) {
	r.bytes -= len(e.payload)
	e.payload = nil
}

func (r *received) len() int { return len(r.queue) - r.head }

// recent calls fn for the ids received since, newest first, until fn
// returns false.
func (r *received) recent(since time.Time, fn func(MsgID, *entry) bool) {
	for i := len(r.queue) - 1; i >= r.head; i-- {
		q := r.queue[i]
		if q.at.Before(since) || !fn(q.id, r.m[q.id]) {
			return
		}
	}
}
