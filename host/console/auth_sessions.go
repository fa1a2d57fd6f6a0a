package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// sessions are the signed-in sessions, in this process's memory only (a
// restart signs everyone out), keyed by the SHA-256 of the cookie's
// random id: the map never holds what a browser presents, so neither a
// memory dump nor a lookup's timing hands out a usable cookie.
//
// The store is bounded: past max sessions, a new sign-in drops the ones
// idle past their time first, then the least recently used. Only a
// credential creates a session (the token, the login link, or a verified
// OAuth login), so a stranger cannot fill it.
type sessions struct {
	mu   sync.Mutex
	max  int
	ttl  time.Duration // idle time after which a session ends
	now  func() time.Time
	byID map[[sha256.Size]byte]*session
}

// session is one signed-in browser.
type session struct {
	u        *user
	lastSeen time.Time
}

func newSessions(max int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{max: max, ttl: ttl, now: now, byID: map[[sha256.Size]byte]*session{}}
}

// randomToken returns 256 random bits, base64url: a session id, a CSRF
// token, a login binding.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for u (giving it its CSRF token) and returns
// the cookie's id. dropped is how many sessions made room for it (idle
// ones are not counted: they had ended).
func (s *sessions) create(u *user) (id string, dropped int) {
	id = randomToken()
	u.csrf = randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= s.max {
		s.dropEnded(now)
	}
	for len(s.byID) >= s.max {
		s.dropLeastRecentlyUsed()
		dropped++
	}
	s.byID[sha256.Sum256([]byte(id))] = &session{u: u, lastSeen: now}
	return id, dropped
}

// get returns the user of the session id, nil when there is none or it
// ended (idle past the TTL, or past its own expiry); a live session's
// idle time starts again.
func (s *sessions) get(id string) *user {
	if id == "" {
		return nil
	}
	key := sha256.Sum256([]byte(id))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.byID[key]
	if !ok {
		return nil
	}
	if s.ended(se, now) {
		delete(s.byID, key)
		return nil
	}
	se.lastSeen = now
	return se.u
}

// end ends the session id (logout).
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, sha256.Sum256([]byte(id)))
}

// len is the number of sessions kept (ended ones not yet dropped
// included).
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

func (s *sessions) ended(se *session, now time.Time) bool {
	return now.Sub(se.lastSeen) >= s.ttl || !se.u.expires.IsZero() && !now.Before(se.u.expires)
}

// dropEnded drops every session that ended. Called with mu held.
func (s *sessions) dropEnded(now time.Time) {
	for k, se := range s.byID {
		if s.ended(se, now) {
			delete(s.byID, k)
		}
	}
}

// dropLeastRecentlyUsed drops the session idle the longest. Called with
// mu held; a scan, as the store is small and this runs only when full.
func (s *sessions) dropLeastRecentlyUsed() {
	var oldest [sha256.Size]byte
	var oldestSeen time.Time
	first := true
	for k, se := range s.byID {
		if first || se.lastSeen.Before(oldestSeen) {
			oldest, oldestSeen, first = k, se.lastSeen, false
		}
	}
	delete(s.byID, oldest)
}
