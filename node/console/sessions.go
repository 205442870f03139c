package console

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/mnemohq/mnemo/namespace"
)

// session is one signed-in browser. The token it signed in with is not
// kept: the principal it resolved to is, and the owner flag.
type session struct {
	id        string
	principal namespace.Address
	owner     bool
	csrf      string // per-session token every state-changing form carries
	created   time.Time
	lastSeen  time.Time
	done      chan struct{} // closed when the session ends: its event streams stop
}

// sessionStore holds the signed-in sessions, bounded in number (the least
// recently used goes first) and in age (idle and absolute expiry). Time is
// an argument: the store reads no clock.
type sessionStore struct {
	max      int
	idle     time.Duration
	lifetime time.Duration

	mu   sync.Mutex
	lru  list.List // of *session; front = most recently used
	byID map[string]*list.Element
}

func newSessionStore(max int, idle, lifetime time.Duration) *sessionStore {
	return &sessionStore{max: max, idle: idle, lifetime: lifetime, byID: map[string]*list.Element{}}
}

// randomToken is 32 bytes from crypto/rand, base64url without padding.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create adds a session, evicting the least recently used one past the
// bound (its event stream, if any, is closed).
func (s *sessionStore) create(p namespace.Address, owner bool, now time.Time) *session {
	ss := &session{id: randomToken(), principal: p, owner: owner, csrf: randomToken(), created: now, lastSeen: now, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	for s.lru.Len() >= s.max {
		s.removeLocked(s.lru.Back())
	}
	s.byID[ss.id] = s.lru.PushFront(ss)
	return ss
}

// get returns a copy of the live session with id and marks it used; nil
// when there is none or it expired. A copy, so that a request reads one
// principal throughout even if the session views as another meanwhile.
func (s *sessionStore) get(id string, now time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return nil
	}
	ss := e.Value.(*session)
	if s.expired(ss, now) {
		s.removeLocked(e)
		return nil
	}
	ss.lastSeen = now
	s.lru.MoveToFront(e)
	cp := *ss
	return &cp
}

// remove ends the session with id (sign-out).
func (s *sessionStore) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		s.removeLocked(e)
	}
}

func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// each calls fn for every live session, under the lock: fn must not block.
func (s *sessionStore) each(fn func(*session)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.lru.Front(); e != nil; e = e.Next() {
		fn(e.Value.(*session))
	}
}

func (s *sessionStore) expired(ss *session, now time.Time) bool {
	return now.Sub(ss.lastSeen) > s.idle || now.Sub(ss.created) > s.lifetime
}

// expireLocked drops expired sessions from the idle end.
func (s *sessionStore) expireLocked(now time.Time) {
	for e := s.lru.Back(); e != nil; {
		prev := e.Prev()
		if s.expired(e.Value.(*session), now) {
			s.removeLocked(e)
		}
		e = prev
	}
}

func (s *sessionStore) removeLocked(e *list.Element) {
	ss := e.Value.(*session)
	s.lru.Remove(e)
	delete(s.byID, ss.id)
	close(ss.done)
}

// setPrincipal changes the principal a session acts as (an owner session's
// view-as). Requests already running keep the principal they started with.
func (s *sessionStore) setPrincipal(id string, p namespace.Address) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		e.Value.(*session).principal = p
	}
}
