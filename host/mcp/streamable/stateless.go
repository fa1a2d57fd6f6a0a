package streamable

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Stateless requests (MCP 2026-07-28) on the same endpoint as sessions. A
// POST without Mcp-Session-Id whose body is a request of the stateless
// revision (its _meta names a protocol version), or that says it speaks
// that revision in its MCP-Protocol-Version header, is served on its own:
// no session is made or looked up, so any replica can serve it. Its answer
// is the POST's response: JSON, or an SSE stream when notifications
// (progress, logs; a subscriptions/listen stream's) come before it. The
// client cancels by closing the response. At most
// Options.MaxStatelessRequests are served at once; one more gets 503.

// isStatelessPost reports whether a POST is for the stateless revision:
// its MCP-Protocol-Version header names a version no session speaks (the
// stateless one, or one this server does not know: that is answered
// -32022 as the stateless revision says), or, without the header, its
// body says so in _meta. A 2025 client's initialize has no such header,
// and its later requests name the session's version.
func isStatelessPost(r *http.Request, m jsonrpc.Message) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return !mcp.SpeaksVersion(v)
	}
	return mcp.IsStateless(m)
}

// stateless serves a stateless POST (see above): body, decoded as m (derr
// when it does not decode; a batch never does).
func (h *httpHandler) stateless(w http.ResponseWriter, r *http.Request, body []byte, m jsonrpc.Message, derr *jsonrpc.Error) {
	if jsonrpc.IsBatch(body) {
		httpError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
			"invalid request: JSON-RPC batches are not part of protocol version "+mcp.StatelessVersion)
		return
	}
	switch {
	case derr != nil:
		httpError(w, http.StatusBadRequest, derr.ID, derr.Code, derr.Message)
		return
	case m.Kind != jsonrpc.Request:
		// Notifications and responses have no use without a session
		// (a stateless client cancels by closing its response).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// The checks, in the order the revision's answers imply: routing
	// headers, _meta's presence, _meta against the header, the version.
	hv := r.Header.Get("Mcp-Protocol-Version")
	if hv == "" {
		httpError(w, http.StatusBadRequest, m.ID, mcp.CodeHeaderMismatch,
			"header mismatch: a "+mcp.StatelessVersion+" request needs the MCP-Protocol-Version header")
		return
	}
	if werr := checkRoutingHeaders(r, m, h.srv.Tool); werr != nil {
		httpError(w, http.StatusBadRequest, m.ID, werr.Code, werr.Message)
		return
	}
	v, merr := mcp.InspectStateless(m)
	if merr != nil && merr.Code != mcp.CodeUnsupportedVersion {
		httpError(w, http.StatusBadRequest, m.ID, merr.Code, merr.Message)
		return
	}
	if v != hv {
		httpError(w, http.StatusBadRequest, m.ID, mcp.CodeHeaderMismatch, "header mismatch: the MCP-Protocol-Version header says "+
			strconv.Quote(hv)+" but _meta's io.modelcontextprotocol/protocolVersion says "+strconv.Quote(v))
		return
	}
	if merr != nil {
		httpErrorData(w, http.StatusBadRequest, m.ID, merr)
		return
	}
	// Counted for shutdown under the lock it sets draining by, so that
	// no request starts unseen while it waits for the others.
	h.mu.Lock()
	if h.draining.Load() {
		h.mu.Unlock()
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, m.ID, jsonrpc.CodeInvalidRequest, "service unavailable: the server is shutting down")
		return
	}
	h.statelessWG.Add(1)
	h.mu.Unlock()
	defer h.statelessWG.Done()
	select {
	case h.statelessSlots <- struct{}{}:
		defer func() { <-h.statelessSlots }()
	default:
		h.opts.Meter.LimitHit(LimitStateless)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, m.ID, jsonrpc.CodeInvalidRequest, "service unavailable: "+
			strconv.Itoa(cap(h.statelessSlots))+" stateless requests are being served, the most this server allows; retry shortly")
		return
	}
	sess := h.srv.OpenStateless(mcp.Peer{Remote: r.RemoteAddr, Caller: callerOf(r)})
	defer sess.Close()
	out := &statelessSink{w: w, keepAlive: h.opts.KeepAlive}
	// Shutdown cancels what its grace period did not see finish.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.stop, cancel)()
	sess.Handle(ctx, body, out)
	out.finish()
}

// statusOf is the HTTP status of a stateless request's JSON answer: 400
// for the errors the revision says are answered so on HTTP (a header
// mismatch, a missing client capability, an unsupported version), and for
// the other faults of the request (-32600, -32602: as the Go SDK does);
// 404 for a method the server does not have (-32601: what the revision
// removed, initialize included, is answered so); 200 otherwise, errors of
// the server's own included.
func statusOf(msg []byte) int {
	e := jsonrpc.Member(msg, "error")
	if e == nil {
		return http.StatusOK
	}
	switch code, _ := strconv.Atoi(string(jsonrpc.Member(e, "code"))); code {
	case mcp.CodeHeaderMismatch, mcp.CodeMissingCapability, mcp.CodeUnsupportedVersion, jsonrpc.CodeInvalidParams, jsonrpc.CodeInvalidRequest:
		return http.StatusBadRequest
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}

// statelessSink is the Sink of a stateless POST: a response first is
// answered as JSON; a notification first opens an SSE stream (events
// without ids: there is no session to resume) that carries everything up
// to the response.
type statelessSink struct {
	w         http.ResponseWriter
	keepAlive time.Duration // between SSE comments on a quiet stream; <= 0: none
	mu        sync.Mutex
	done      bool // the JSON response was written
	conn      *sseConn
	stop      chan struct{} // ends the keep-alive, once the stream is open
	// retryAfter, once set, makes the response a refusal over the
	// caller's rate limits: 429 with Retry-After.
	retryAfter time.Duration
}

// RateLimited implements mcp.RateLimitedSink: a stateless request is
// HTTP too, and a load balancer or client that backs off on 429 should
// here as on a session's.
func (p *statelessSink) RateLimited(retryAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retryAfter = retryAfter
}

func (p *statelessSink) Write(msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.conn != nil:
		return p.conn.write(appendEvent(nil, "message", nil, msg))
	case p.done:
		return nil
	case jsonrpc.Classify(msg) == jsonrpc.Response:
		p.done = true
		if p.retryAfter > 0 {
			writeTooMany(p.w, p.retryAfter, msg)
			return nil
		}
		if st := statusOf(msg); st != http.StatusOK {
			p.w.Header()["Content-Type"] = hdrJSON
			p.w.WriteHeader(st)
			p.w.Write(msg)
			return nil
		}
		writeJSON(p.w, msg)
		return nil
	}
	p.conn = newSSEConn(p.w)
	if err := p.conn.open(); err != nil {
		return err
	}
	if p.keepAlive > 0 { // a listen stream may stay quiet for long: proxies must not cut it
		p.stop = make(chan struct{})
		go keepAlive(p.conn, p.keepAlive, p.stop)
	}
	return p.conn.write(appendEvent(nil, "message", nil, msg))
}

// keepAlive writes an SSE comment to c every interval until stop closes
// or a write fails.
func keepAlive(c *sseConn, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if c.write([]byte(": keepalive\n\n")) != nil {
				return
			}
		}
	}
}

// finish ends the POST once Handle has returned: a request cancelled (the
// client went away, or the server shut down) got no response.
func (p *statelessSink) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.conn != nil:
		if p.stop != nil {
			close(p.stop)
		}
		p.conn.close()
	case !p.done:
		p.w.WriteHeader(http.StatusNoContent)
	}
	p.done, p.conn = true, nil // the handler returns: nothing more is written
}
