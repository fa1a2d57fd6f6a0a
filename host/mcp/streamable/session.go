package streamable

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// An httpSession is one Streamable HTTP session: the protocol [Session],
// its streams and the events kept for resumption.
//
// Streams: stream 0 is the session's own (opened by GET), carrying
// notifications unrelated to a request (list_changed). Each POST whose
// answer turns into an SSE stream gets the next number. Every SSE event has
// the id "<stream>_<seq>", seq counting the session's events; every event
// is kept in a bounded ring, so a client that lost its connection can GET
// with Last-Event-ID and receive what followed on that stream, then the
// rest of it live.
type httpSession struct {
	h       *httpHandler
	id      string
	caller  mcp.Caller // who opened it (OAuth); only they may use it
	sess    *mcp.Session
	limiter *rate.Limiter
	own     *stream // stream 0
	// pending counts the requests of POSTs being handled; past
	// 4×MaxInFlight more are refused (429), as stdio stops reading.
	pending atomic.Int32

	mu         sync.Mutex
	closed     bool
	streams    map[uint64]*stream // live streams
	nextStream uint64
	ring       ring
	busy       int       // requests being handled, streams attached
	lastUsed   time.Time // when busy last dropped to 0
	timer      *time.Timer
}

// A stream is one logical SSE stream. mu orders its events and guards its
// attachment: events are recorded and written under it, so a resuming
// client sees neither a gap nor a duplicate.
type stream struct {
	id   uint64
	mu   sync.Mutex
	conn *sseConn // the response it is written to; nil while detached
	done bool     // its POST's response was sent: no more events
	sent uint64   // seq of the last event written to a connection
}

// newHTTPSession makes a session, not yet registered, for the client at
// remote, acting for caller.
func (h *httpHandler) newHTTPSession(remote string, caller mcp.Caller) *httpSession {
	hs := &httpSession{
		h:          h,
		id:         newSessionID(),
		caller:     caller,
		limiter:    rate.NewLimiter(h.limit, h.opts.RateBurst),
		streams:    map[uint64]*stream{},
		nextStream: 1,
		ring: ring{ev: make([]event, h.opts.ReplayEvents), maxBytes: h.opts.ReplayBytes,
			total: &h.rootHandler().replayBytes, budget: h.opts.ReplayBudget},
		lastUsed: time.Now(),
	}
	hs.own = &stream{id: 0}
	hs.streams[0] = hs.own
	hs.sess = h.srv.OpenSession(mcp.SessionConn{Notify: streamSink{hs, hs.own}, Reachable: hs.listening,
		Peer: mcp.Peer{SessionID: hs.id, Remote: remote, Caller: caller, Transport: "streamable-http"}})
	return hs
}

// listening reports whether the client has the session's own stream (its
// GET) open: only then can the server send it a request.
func (hs *httpSession) listening() bool {
	hs.own.mu.Lock()
	defer hs.own.mu.Unlock()
	return hs.own.conn != nil && !hs.own.done
}

// streamSink writes each message as an event of one stream.
type streamSink struct {
	hs *httpSession
	st *stream
}

func (s streamSink) Write(msg []byte) error {
	s.hs.emit(s.st, msg)
	return nil // a lost connection is not the session's failure: the event waits in the ring
}

// emit records msg as the next event of st and writes it if st is attached.
// Once the session has ended it drops msg: no client can receive it, and
// its ring has given its bytes back (endSession).
func (hs *httpSession) emit(st *stream, msg []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return
	}
	seq := hs.ring.lastSeq() + 1
	frame := appendEvent(make([]byte, 0, len(msg)+48), "message", eventID(st.id, seq), msg)
	hs.ring.push(event{st.id, seq, frame})
	hs.mu.Unlock()
	if c := st.conn; c != nil {
		if err := c.write(frame); err != nil {
			hs.h.log.Debug("SSE stream lost; its events wait for Last-Event-ID", "session", hs.id[:8], "stream", st.id, "error", err)
			st.conn = nil
			c.finish()
		} else {
			st.sent = seq
		}
	}
	if st.sent != seq {
		hs.h.log.Debug("event kept for a detached stream", "session", hs.id[:8], "stream", st.id, "event", string(eventID(st.id, seq)))
	}
}

// enter marks the session busy (a request or an open stream); it reports
// false if the session has ended.
func (hs *httpSession) enter() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed {
		return false
	}
	hs.busy++
	return true
}

func (hs *httpSession) leave() {
	hs.mu.Lock()
	hs.busy--
	if hs.busy == 0 {
		hs.lastUsed = time.Now()
	}
	hs.mu.Unlock()
}

// checkIdle runs when the idle timer fires: it ends the session if it has
// been idle long enough, or sets the timer again.
func (hs *httpSession) checkIdle() {
	idle := hs.h.opts.IdleTimeout
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return
	}
	if hs.busy > 0 {
		hs.timer.Reset(idle)
		hs.mu.Unlock()
		return
	}
	if left := idle - time.Since(hs.lastUsed); left > 0 {
		hs.timer.Reset(left)
		hs.mu.Unlock()
		return
	}
	hs.mu.Unlock()
	hs.h.closeSession(hs, "idle for "+idle.String())
}

// lookup finds a session by the request's Mcp-Session-Id, answering 400
// (missing) or 404 (unknown or ended) when there is none. It checks the
// MCP-Protocol-Version header too (400). On success the session is marked
// busy: call leave.
func (h *httpHandler) lookup(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		httpError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
			"bad request: missing Mcp-Session-Id header (send initialize first; its response carries the session id)")
		return nil
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !mcp.SpeaksVersion(v) {
		msg := "bad request: unsupported MCP-Protocol-Version " + strconv.Quote(v) + "; a session speaks " + strings.Join(mcp.Versions(), ", ")
		if v == mcp.StatelessVersion {
			msg = "bad request: MCP-Protocol-Version " + v + " is served without a session: send the request without Mcp-Session-Id, with its _meta"
		}
		httpError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, msg)
		return nil
	}
	h.mu.Lock()
	hs := h.sessions[id]
	h.mu.Unlock()
	if hs == nil || !hs.enter() {
		msg := "session not found: it is unknown, ended or expired; start a new one with initialize"
		if h.wasEvicted(id) {
			msg = h.evictedMessage()
		}
		httpError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, msg)
		return nil
	}
	if !sameCaller(hs.caller, callerOf(r)) {
		hs.leave()
		httpError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, "forbidden: the session belongs to another caller")
		return nil
	}
	return hs
}

// closeSession ends a session: unregistered, calls cancelled, streams ended.
func (h *httpHandler) closeSession(hs *httpSession, why string) {
	if streams, ok := hs.markClosed(false); ok {
		h.endSession(hs, streams, why)
	} else {
		h.unregister(hs)
	}
}

// markClosed marks hs closed, so that no request enters it any more, and
// returns its streams; ok is false when it was closed already, or (with
// onlyIdle) when it is busy.
func (hs *httpSession) markClosed(onlyIdle bool) (streams []*stream, ok bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed || onlyIdle && hs.busy > 0 {
		return nil, false
	}
	hs.closed = true
	streams = make([]*stream, 0, len(hs.streams))
	for _, st := range hs.streams {
		streams = append(streams, st)
	}
	return streams, true
}

// unregister removes hs from the sessions ids find.
func (h *httpHandler) unregister(hs *httpSession) {
	h.mu.Lock()
	if h.sessions[hs.id] == hs {
		delete(h.sessions, hs.id)
		h.opts.Meter.Sessions(TransportStreamable, -1)
	}
	h.mu.Unlock()
}

// endSession ends hs, marked closed: unregistered, its calls cancelled,
// its streams ended.
func (h *httpHandler) endSession(hs *httpSession, streams []*stream, why string) {
	h.unregister(hs)
	if hs.timer != nil {
		hs.timer.Stop()
	}
	hs.sess.Close()
	hs.mu.Lock()
	hs.ring.release() // a resuming client gets 404 now: nothing left to replay
	hs.mu.Unlock()
	for _, st := range streams {
		st.mu.Lock()
		c := st.conn
		st.conn, st.done = nil, true
		st.mu.Unlock()
		if c != nil {
			c.finish()
		}
	}
	h.log.Debug("session ended", "session", hs.id[:8], "why", why)
}
