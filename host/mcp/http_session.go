package mcp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/mcp/wire"
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
	sess    *Session
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

// newHTTPSession makes a session, not yet registered.
func (h *httpHandler) newHTTPSession() *httpSession {
	hs := &httpSession{
		h:          h,
		id:         newSessionID(),
		limiter:    rate.NewLimiter(h.limit, h.opts.RateBurst),
		streams:    map[uint64]*stream{},
		nextStream: 1,
		ring:       ring{ev: make([]event, h.opts.ReplayEvents), maxBytes: h.opts.ReplayBytes},
		lastUsed:   time.Now(),
	}
	hs.own = &stream{id: 0}
	hs.streams[0] = hs.own
	hs.sess = h.srv.OpenSession(SessionConn{Notify: streamSink{hs, hs.own}, Reachable: hs.listening})
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
func (hs *httpSession) emit(st *stream, msg []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	hs.mu.Lock()
	seq := hs.ring.lastSeq() + 1
	frame := appendEvent(make([]byte, 0, len(msg)+48), "message", eventID(st.id, seq), msg)
	hs.ring.push(event{st.id, seq, frame})
	hs.mu.Unlock()
	if c := st.conn; c != nil {
		if err := c.write(frame); err != nil {
			hs.h.srv.log.Debug("SSE stream lost; its events wait for Last-Event-ID", "session", hs.id[:8], "stream", st.id, "error", err)
			st.conn = nil
			c.finish()
		} else {
			st.sent = seq
		}
	}
	if st.sent != seq {
		hs.h.srv.log.Debug("event kept for a detached stream", "session", hs.id[:8], "stream", st.id, "event", string(eventID(st.id, seq)))
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
		httpError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest,
			"bad request: missing Mcp-Session-Id header (send initialize first; its response carries the session id)")
		return nil
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !supportedVersion(v) {
		httpError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest,
			"bad request: unsupported MCP-Protocol-Version "+strconv.Quote(v)+"; this server speaks "+strings.Join(versions[:], ", "))
		return nil
	}
	h.mu.Lock()
	hs := h.sessions[id]
	h.mu.Unlock()
	if hs == nil || !hs.enter() {
		httpError(w, http.StatusNotFound, nil, wire.CodeInvalidRequest,
			"session not found: it is unknown, ended or expired; start a new one with initialize")
		return nil
	}
	return hs
}

func supportedVersion(v string) bool {
	for _, sv := range versions {
		if sv == v {
			return true
		}
	}
	return false
}

// closeSession ends a session: unregistered, calls cancelled, streams ended.
func (h *httpHandler) closeSession(hs *httpSession, why string) {
	h.mu.Lock()
	if h.sessions[hs.id] == hs {
		delete(h.sessions, hs.id)
	}
	h.mu.Unlock()
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return
	}
	hs.closed = true
	streams := make([]*stream, 0, len(hs.streams))
	for _, st := range hs.streams {
		streams = append(streams, st)
	}
	hs.mu.Unlock()
	if hs.timer != nil {
		hs.timer.Stop()
	}
	hs.sess.Close()
	for _, st := range streams {
		st.mu.Lock()
		c := st.conn
		st.conn, st.done = nil, true
		st.mu.Unlock()
		if c != nil {
			c.finish()
		}
	}
	h.srv.log.Debug("session ended", "session", hs.id[:8], "why", why)
}

// post serves a POSTed JSON-RPC message (or 2025-03-26 batch).
func (h *httpHandler) post(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "application", "json") || !accepts(r, "text", "event-stream") {
		httpError(w, http.StatusNotAcceptable, nil, wire.CodeInvalidRequest,
			"not acceptable: the Accept header must list both application/json and text/event-stream")
		return
	}
	if !checkContentType(w, r) {
		return
	}
	bp := h.readBody(w, r)
	if bp == nil {
		return
	}
	defer wire.PutBuf(bp)
	body := *bp
	if perr := wire.Check(body); perr != nil {
		httpError(w, http.StatusBadRequest, nil, perr.Code, perr.Message)
		return
	}
	if r.Header.Get("Mcp-Session-Id") == "" && isInitialize(body) {
		h.initialize(w, body)
		return
	}
	hs := h.lookup(w, r)
	if hs == nil {
		return
	}
	defer hs.leave()
	requests, firstID := countRequests(body)
	if requests > 0 && !h.allow(w, hs.limiter, requests, firstID) {
		return
	}
	if n := int32(requests); n > 0 {
		if hs.pending.Add(n) > int32(4*h.srv.maxInFlight) {
			hs.pending.Add(-n)
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusTooManyRequests, firstID, codeRateLimited,
				"too many requests in flight in this session: wait for some to finish, then retry")
			return
		}
		defer hs.pending.Add(-n)
	}
	ps := postSink{hs: hs, w: w}
	hs.sess.Handle(context.Background(), body, &ps)
	ps.finish(requests)
}

// allow applies the session's rate limit to n requests, answering 429 with
// a JSON-RPC error when they exceed it.
func (h *httpHandler) allow(w http.ResponseWriter, lim *rate.Limiter, n int, id []byte) bool {
	if lim.Limit() == rate.Inf {
		return true
	}
	now := time.Now()
	res := lim.ReserveN(now, n)
	delay := res.DelayFrom(now)
	if res.OK() && delay == 0 {
		return true
	}
	res.CancelAt(now)
	o := &h.opts
	msg := "rate limit exceeded: this session may send " + strconv.FormatFloat(o.RateLimit, 'g', -1, 64) +
		" requests per second (bursts of " + strconv.Itoa(o.RateBurst) + ")"
	if !res.OK() {
		msg += "; a batch of " + strconv.Itoa(n) + " requests can never pass: split it"
		delay = time.Second
	} else {
		msg += "; retry after " + delay.Round(time.Millisecond).String()
	}
	w.Header().Set("Retry-After", strconv.Itoa(int((delay+time.Second-1)/time.Second)))
	data := `{"retryAfterMs":` + strconv.FormatInt(delay.Milliseconds(), 10) + `}`
	bp := wire.GetBuf()
	*bp = wire.AppendError(*bp, id, &wire.Error{Code: codeRateLimited, Message: msg, Data: []byte(data)})
	w.Header()["Content-Type"] = hdrJSON
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(*bp)
	wire.PutBuf(bp)
	return false
}

// codeRateLimited is the JSON-RPC error of a request over the rate limit
// (in the implementation-defined server error range).
const codeRateLimited = -32029

// isInitialize reports whether the checked body is an initialize request.
func isInitialize(body []byte) bool {
	m, err := wire.Decode(body)
	return err == nil && m.Kind == wire.Request && string(m.Method) == "initialize"
}

// countRequests counts the messages of a checked body (a message or a
// batch) that will be answered: requests, and messages that do not decode.
// For a single request it returns its id too.
func countRequests(body []byte) (n int, id []byte) {
	if !wire.IsBatch(body) {
		m, err := wire.Decode(body)
		switch {
		case err != nil:
			return 1, nil
		case m.Kind == wire.Request:
			return 1, m.ID
		}
		return 0, nil
	}
	for _, e := range wire.Elements(body) {
		if m, err := wire.Decode(e); err != nil || m.Kind == wire.Request {
			n++
		}
	}
	return n, nil
}

// initialize starts a session with a POSTed initialize request. The
// session exists only if initialize succeeds; its id goes in the
// Mcp-Session-Id response header.
func (h *httpHandler) initialize(w http.ResponseWriter, body []byte) {
	if h.openSessions() >= h.opts.MaxSessions {
		httpError(w, http.StatusServiceUnavailable, nil, wire.CodeInvalidRequest,
			"service unavailable: "+strconv.Itoa(h.opts.MaxSessions)+" sessions are open, the most this server allows")
		return
	}
	hs := h.newHTTPSession()
	var resp bufSink
	hs.sess.Handle(context.Background(), body, &resp)
	if !hs.sess.Initialized() {
		hs.sess.Close()
		writeJSON(w, resp.msg)
		return
	}
	// Register it only if the server still takes sessions: the count and
	// shutdown are checked again under the lock that shutdown snapshots by,
	// so concurrent initializes cannot overshoot and none outlives shutdown.
	h.mu.Lock()
	full := len(h.sessions)+len(h.legacy) >= h.opts.MaxSessions
	if h.draining.Load() || full {
		h.mu.Unlock()
		hs.sess.Close()
		msg := "service unavailable: the server is shutting down"
		if full {
			msg = "service unavailable: " + strconv.Itoa(h.opts.MaxSessions) + " sessions are open, the most this server allows"
		}
		httpError(w, http.StatusServiceUnavailable, nil, wire.CodeInvalidRequest, msg)
		return
	}
	h.sessions[hs.id] = hs
	hs.timer = time.AfterFunc(h.opts.IdleTimeout, hs.checkIdle)
	h.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", hs.id)
	writeJSON(w, resp.msg)
	h.srv.log.Debug("session started", "session", hs.id[:8])
}

// bufSink keeps the one message written to it.
type bufSink struct{ msg []byte }

func (b *bufSink) Write(msg []byte) error { b.msg = append(b.msg[:0], msg...); return nil }

// writeJSON answers 200 with msg. net/http computes Content-Length itself
// for a body this handler writes whole and at once.
func writeJSON(w http.ResponseWriter, msg []byte) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(jsonWriteTimeout))
	w.Header()["Content-Type"] = hdrJSON
	w.WriteHeader(http.StatusOK)
	w.Write(msg)
}

// postSink is the Sink of one POST: the first message decides the framing.
// A response (or a batch's array) first means application/json; a
// notification first (progress, a log) means text/event-stream, which
// then carries everything up to the response.
type postSink struct {
	hs   *httpSession
	w    http.ResponseWriter
	mu   sync.Mutex
	json bool // the JSON response was written
	st   *stream
	conn *sseConn
}

func (p *postSink) Write(msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.st != nil:
		p.hs.emit(p.st, msg)
	case p.json:
		p.hs.h.srv.log.Warn("dropped a message after the response", "message", string(msg))
	case wire.Classify(msg) == wire.Response:
		p.json = true
		writeJSON(p.w, msg)
	default:
		p.conn = newSSEConn(p.w)
		p.conn.open()
		var primeSeq uint64
		p.st, primeSeq = p.hs.openStream(p.conn)
		if p.hs.primes() {
			p.conn.write(appendPriming(nil, p.st.id, primeSeq))
		}
		p.hs.emit(p.st, msg)
	}
	return nil
}

// primes reports whether the session's SSE streams open with a priming
// event: only from 2025-11-25, since older clients may fail on an event
// with empty data.
func (hs *httpSession) primes() bool { return hs.sess.Version() >= "2025-11-25" }

// openStream registers a new POST stream attached to c. Every event of the
// stream will have a seq above the one returned.
func (hs *httpSession) openStream(c *sseConn) (*stream, uint64) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	st := &stream{id: hs.nextStream, conn: c}
	hs.nextStream++
	hs.streams[st.id] = st
	return st, hs.ring.lastSeq()
}

// finish ends the POST once Handle has returned.
func (p *postSink) finish(requests int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.st != nil:
		st := p.st
		st.mu.Lock()
		st.done = true
		other := st.conn
		st.conn = nil
		st.mu.Unlock()
		p.hs.mu.Lock()
		delete(p.hs.streams, st.id)
		p.hs.mu.Unlock()
		if other != nil && other != p.conn {
			other.finish() // a client resumed this stream on a GET: end it
		}
		p.conn.close()
	case p.json:
	case requests == 0:
		p.w.WriteHeader(http.StatusAccepted) // notifications and responses
	default:
		p.hs.mu.Lock()
		closed := p.hs.closed
		p.hs.mu.Unlock()
		if closed {
			httpError(p.w, http.StatusNotFound, nil, wire.CodeInvalidRequest, "session ended while the request ran")
			return
		}
		p.w.WriteHeader(http.StatusNoContent) // cancelled: no response
	}
}

// get opens a stream: the session's own, or with Last-Event-ID the one the
// client lost, replayed from after that event.
func (h *httpHandler) get(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text", "event-stream") {
		httpError(w, http.StatusNotAcceptable, nil, wire.CodeInvalidRequest, "not acceptable: the Accept header must list text/event-stream")
		return
	}
	hs := h.lookup(w, r)
	if hs == nil {
		return
	}
	defer hs.leave()
	streamID, after, resume := uint64(0), uint64(0), false
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		var ok bool
		streamID, after, ok = parseEventID(last)
		hs.mu.Lock()
		known := streamID < hs.nextStream
		hs.mu.Unlock()
		if !ok || !known {
			httpError(w, http.StatusBadRequest, nil, wire.CodeInvalidRequest, "bad request: Last-Event-ID "+strconv.Quote(last)+" names no event of this session")
			return
		}
		resume = true
	}
	c := newSSEConn(w)
	defer c.close()
	defer hs.detach(streamID, c)
	if c.open() != nil {
		return
	}
	if !hs.attach(streamID, after, resume, c) {
		return
	}
	var tick <-chan time.Time
	if ka := h.opts.KeepAlive; ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-c.end:
			return
		case <-r.Context().Done():
			h.srv.log.Debug("SSE stream closed by the client", "session", hs.id[:8], "stream", streamID)
			return
		case <-tick:
			if c.write([]byte(": keepalive\n\n")) != nil {
				return
			}
		}
	}
}

// attach replays what the client missed on a stream to c, then makes c the
// stream's connection, replacing any earlier one. Without resume it
// replays the events never written to a connection. It returns false when
// nothing more will come (the stream is complete).
func (hs *httpSession) attach(streamID, after uint64, resume bool, c *sseConn) bool {
	hs.mu.Lock()
	st := hs.streams[streamID]
	if st == nil { // a completed POST stream: replay only
		frames, lost := hs.ring.since(streamID, after)
		hs.mu.Unlock()
		if hs.primes() && c.write(appendPriming(nil, streamID, after)) != nil {
			return false
		}
		hs.replay(streamID, frames, lost, c)
		return false
	}
	hs.mu.Unlock()
	st.mu.Lock()
	if !resume {
		after = st.sent
	}
	hs.mu.Lock()
	frames, lost := hs.ring.since(streamID, after)
	hs.mu.Unlock()
	ok := !hs.primes() || c.write(appendPriming(nil, streamID, after)) == nil
	ok = ok && hs.replay(streamID, frames, lost, c)
	old := st.conn
	if ok && !st.done {
		st.conn = c
		if n := len(frames); n > 0 {
			st.sent = max(st.sent, seqOf(frames[n-1]))
		}
	} else {
		ok = false
	}
	st.mu.Unlock()
	if old != nil && old != c {
		old.finish()
	}
	return ok
}

// seqOf reads the seq back from a frame ("id: <stream>_<seq>\n...").
func seqOf(frame []byte) uint64 {
	line, _, _ := strings.Cut(string(frame), "\n")
	_, seq, _ := parseEventID(strings.TrimPrefix(line, "id: "))
	return seq
}

func (hs *httpSession) replay(streamID uint64, frames [][]byte, lost bool, c *sseConn) bool {
	if lost {
		hs.h.srv.log.Warn("a resumed stream lost events: the replay buffer had evicted them",
			"session", hs.id[:8], "stream", streamID, "hint", "raise the replay buffer")
	}
	for _, f := range frames {
		if c.write(f) != nil {
			return false
		}
	}
	return true
}

// detach forgets c as its stream's connection.
func (hs *httpSession) detach(streamID uint64, c *sseConn) {
	hs.mu.Lock()
	st := hs.streams[streamID]
	hs.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.conn == c {
		st.conn = nil
	}
	st.mu.Unlock()
}

// delete ends a session at the client's request.
func (h *httpHandler) delete(w http.ResponseWriter, r *http.Request) {
	hs := h.lookup(w, r)
	if hs == nil {
		return
	}
	hs.leave()
	h.closeSession(hs, "client sent DELETE")
	w.WriteHeader(http.StatusNoContent)
}
