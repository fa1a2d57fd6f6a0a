package streamable

import (
	"strconv"
	"time"
)

// Admitting sessions under a flood.
//
// MaxSessions bounds the sessions open at once, of both transports and
// every endpoint. When the table is full, a new session does not get 503
// while some other session sits idle: the least recently used idle session
// (no request being handled, no stream open) is ended to make room, and
// its next request gets 404 saying so, which tells a client to initialize
// again. So one client that opens sessions in a loop only ever pushes out
// sessions nobody is using, its own first, and cannot lock other clients
// out for the idle timeout (30 minutes), as it could when the full table
// answered 503.
//
// Why eviction and not a cap per client: on loopback, where no token is
// needed, every client has the same address, and behind a proxy or a
// Kubernetes ingress every client has the proxy's; a cap by address
// would lock out exactly the clients it means to protect. A session that
// is busy (a request in flight, or a GET or HTTP+SSE stream open) is never
// evicted: its client is using it. Those hold a connection each, so
// filling the table with them costs a client MaxSessions open connections;
// a new session then gets 503 naming the limit.

// maxEvictedIDs bounds the ids of evicted sessions remembered for a precise
// 404 (about 60 bytes each); older ones get the generic answer.
const maxEvictedIDs = 4096

// admit registers a new session through register, making room first when
// MaxSessions are open. It reports false (having registered nothing) when
// every open session is busy. Admissions are serialized at the root
// handler, so concurrent initializes at several endpoints never overshoot
// the limit; register runs under that lock and may refuse itself (false).
func (h *httpHandler) admit(register func() bool) bool {
	root := h.rootHandler()
	root.admitMu.Lock()
	defer root.admitMu.Unlock()
	for h.openSessions() >= h.opts.MaxSessions {
		victim := root.leastRecentlyIdle()
		if victim == nil {
			return false
		}
		victim.h.evict(victim) // false: it became busy meanwhile; look again
	}
	return register()
}

// rootHandler is the handler whose limits h shares: h itself, or the
// one that routes to it.
func (h *httpHandler) rootHandler() *httpHandler {
	if h.root != nil {
		return h.root
	}
	return h
}

// leastRecentlyIdle finds, among the Streamable HTTP sessions of the root h's
// endpoints, the idle one that was used longest ago; nil when none is
// idle. It scans every session: admission under a full table is rare, and
// a scan of MaxSessions entries costs microseconds.
func (h *httpHandler) leastRecentlyIdle() *httpSession {
	var best *httpSession
	var bestUsed time.Time
	for _, e := range append([]*httpHandler{h}, h.extraHandlers()...) {
		e.mu.Lock()
		sessions := make([]*httpSession, 0, len(e.sessions))
		for _, s := range e.sessions {
			sessions = append(sessions, s)
		}
		e.mu.Unlock()
		for _, s := range sessions {
			s.mu.Lock()
			if !s.closed && s.busy == 0 && (best == nil || s.lastUsed.Before(bestUsed)) {
				best, bestUsed = s, s.lastUsed
			}
			s.mu.Unlock()
		}
	}
	return best
}

// extraHandlers lists the handlers of Options.Endpoints.
func (h *httpHandler) extraHandlers() []*httpHandler {
	out := make([]*httpHandler, 0, len(h.extra))
	for _, e := range h.extra {
		out = append(out, e)
	}
	return out
}

// evict ends hs if it is still idle, remembering its id so that its next
// request learns why it is gone. It reports whether it ended it.
func (h *httpHandler) evict(hs *httpSession) bool {
	streams, ok := hs.markClosed(true)
	if !ok {
		return false
	}
	h.mu.Lock()
	if len(h.evictedOrder) == maxEvictedIDs {
		delete(h.evicted, h.evictedOrder[0])
		h.evictedOrder = h.evictedOrder[1:]
	}
	h.evicted[hs.id] = true
	h.evictedOrder = append(h.evictedOrder, hs.id)
	h.mu.Unlock()
	h.endSession(hs, streams, "evicted: the least recently used idle session, to admit a new one")
	h.opts.Meter.LimitHit(LimitSessions)
	return true
}

// wasEvicted reports whether id named a session evicted to make room.
func (h *httpHandler) wasEvicted(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evicted[id]
}

// evictedMessage is the 404 of a request to an evicted session.
func (h *httpHandler) evictedMessage() string {
	return "session not found: the server had " + strconv.Itoa(h.opts.MaxSessions) +
		" sessions open (its limit, limits { sessions }) and ended this one, idle and the least recently used, to admit a new client; start a new one with initialize"
}

// fullMessage is the 503 of a session refused because every open session
// is busy.
func (h *httpHandler) fullMessage() string {
	return "service unavailable: " + strconv.Itoa(h.opts.MaxSessions) +
		" sessions are open (the limit, limits { sessions }) and all are busy (a request in flight or a stream open); retry when one ends"
}
