package streamable

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// post serves a POSTed JSON-RPC message (or 2025-03-26 batch).
func (h *httpHandler) post(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "application", "json") || !accepts(r, "text", "event-stream") {
		httpError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest,
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
	defer jsonrpc.PutBuf(bp)
	body := *bp
	if perr := jsonrpc.Check(body); perr != nil {
		httpError(w, http.StatusBadRequest, nil, perr.Code, perr.Message)
		return
	}
	// A stateless request is served as one, with every check of its
	// revision: one without a session id that says so in a header or its
	// _meta, and one whose _meta says so whatever session id it carries
	// (it has no use for one).
	sid := r.Header.Get("Mcp-Session-Id")
	m, derr := jsonrpc.Decode(body) // a batch does not decode: it is a session's
	if sid == "" && isStatelessPost(r, m) || sid != "" && mcp.IsStateless(m) {
		h.stateless(w, r, body, m, derr)
		return
	}
	if sid == "" && derr == nil && m.Kind == jsonrpc.Request && string(m.Method) == "initialize" {
		h.initialize(w, r, body)
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
		if hs.pending.Add(n) > int32(4*h.srv.MaxInFlight()) { // read live: a reload may change it
			hs.pending.Add(-n)
			h.opts.Meter.LimitHit(LimitPending)
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusTooManyRequests, firstID, mcp.CodeRateLimited,
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
	h.opts.Meter.LimitHit(LimitRate)
	o := &h.opts
	msg := "rate limit exceeded: this session may send " + strconv.FormatFloat(o.RateLimit, 'g', -1, 64) +
		" requests per second (bursts of " + strconv.Itoa(o.RateBurst) + ")"
	if !res.OK() {
		msg += "; a batch of " + strconv.Itoa(n) + " requests can never pass: split it"
		delay = time.Second
	} else {
		msg += "; retry after " + delay.Round(time.Millisecond).String()
	}
	data := `{"retryAfterMs":` + strconv.FormatInt(delay.Milliseconds(), 10) + `}`
	bp := jsonrpc.GetBuf()
	*bp = jsonrpc.AppendError(*bp, id, &jsonrpc.Error{Code: mcp.CodeRateLimited, Message: msg, Data: []byte(data)})
	writeTooMany(w, delay, *bp)
	jsonrpc.PutBuf(bp)
	return false
}

// writeTooMany answers 429 with msg, a JSON-RPC error, and Retry-After:
// retryAfter in whole seconds, rounded up (a client retrying sooner would
// be refused again).
func writeTooMany(w http.ResponseWriter, retryAfter time.Duration, msg []byte) {
	w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	w.Header()["Content-Type"] = hdrJSON
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(msg)
}

// countRequests counts the messages of a checked body (a message or a
// batch) that will be answered: requests, and messages that do not decode.
// For a single request it returns its id too.
func countRequests(body []byte) (n int, id []byte) {
	if !jsonrpc.IsBatch(body) {
		m, err := jsonrpc.Decode(body)
		switch {
		case err != nil:
			return 1, nil
		case m.Kind == jsonrpc.Request:
			return 1, m.ID
		}
		return 0, nil
	}
	for _, e := range jsonrpc.Elements(body) {
		if m, err := jsonrpc.Decode(e); err != nil || m.Kind == jsonrpc.Request {
			n++
		}
	}
	return n, nil
}

// initialize starts a session with a POSTed initialize request. The
// session exists only if initialize succeeds; its id goes in the
// Mcp-Session-Id response header.
func (h *httpHandler) initialize(w http.ResponseWriter, r *http.Request, body []byte) {
	hs := h.newHTTPSession(r.RemoteAddr, callerOf(r))
	var resp bufSink
	hs.sess.Handle(context.Background(), body, &resp)
	if !hs.sess.Initialized() {
		hs.sess.Close()
		writeJSON(w, resp.msg)
		return
	}
	// Register it only if the server still takes sessions: shutdown is
	// checked under the lock that shutdown snapshots by, so none outlives
	// it; admit makes room (admit.go) or refuses.
	draining := false
	admitted := h.admit(func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		if draining = h.draining.Load(); draining {
			return false
		}
		h.sessions[hs.id] = hs
		h.opts.Meter.Sessions(TransportStreamable, +1)
		hs.timer = time.AfterFunc(h.opts.IdleTimeout, hs.checkIdle)
		return true
	})
	if !admitted {
		hs.sess.Close()
		msg := h.fullMessage()
		if draining {
			msg = "service unavailable: the server is shutting down"
		} else {
			h.opts.Meter.LimitHit(LimitSessions)
		}
		httpError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInvalidRequest, msg)
		return
	}
	w.Header().Set("Mcp-Session-Id", hs.id)
	writeJSON(w, resp.msg)
	h.log.Debug("session started", "session", hs.id[:8])
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
	// retryAfter, once set, makes the response a refusal over the
	// caller's rate limits: 429 with Retry-After.
	retryAfter time.Duration
}

// RateLimited implements mcp.RateLimitedSink.
func (p *postSink) RateLimited(retryAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retryAfter = retryAfter
}

func (p *postSink) Write(msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.st != nil:
		p.hs.emit(p.st, msg)
	case p.json:
		p.hs.h.log.Warn("dropped a message after the response", "message", string(msg))
	case jsonrpc.Classify(msg) == jsonrpc.Response:
		p.json = true
		if p.retryAfter > 0 {
			writeTooMany(p.w, p.retryAfter, msg)
			return nil
		}
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
			httpError(p.w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session ended while the request ran")
			return
		}
		p.w.WriteHeader(http.StatusNoContent) // cancelled: no response
	}
}
