package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Server-to-client requests: the server asks a client something
// (sampling/createMessage) and routes the client's response back by id.

// ErrNoSamplingClient is returned (wrapped) by [Server.CreateMessage] when no
// session can be asked: none is initialized (notifications/initialized
// received) with a client that declared capabilities.sampling and can be
// reached (on Streamable HTTP, one with its GET stream open).
var ErrNoSamplingClient = errors.New("no connected MCP client supports sampling")

// errSessionEnded ends a server request whose session closed first.
var errSessionEnded = errors.New("the client's session ended before it answered")

// errBadAnswer is wrapped by the error of a server request the client
// answered with something that is neither a result object nor an error
// object.
var errBadAnswer = errors.New("the client's answer is malformed")

// A ClientError is the JSON-RPC error a client answered a server request
// with (say, -1 when the user declined a sampling request).
type ClientError struct {
	// Method is the method of the request the client refused.
	Method string
	// Code and Message are the JSON-RPC error's.
	Code    int
	Message string
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("mcp: %s: the client answered error %d: %s", e.Method, e.Code, e.Message)
}

// clientRequests are the server's requests waiting for the client's
// response, by id.
type clientRequests struct {
	seq     atomic.Uint64 // numbers the server's request ids
	mu      sync.Mutex
	pending map[string]*outRequest
	closed  bool
}

// close refuses further requests; those waiting see the session's end.
func (c *clientRequests) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// outRequest is a server request waiting for the client's response.
type outRequest struct {
	method string
	done   chan outResult // 1-buffered: the response router never blocks
}

type outResult struct {
	result json.RawMessage
	err    error
}

// clientAsker sends a session's requests to its client: the input rounds
// of its calls (askClient, input.go) and Server.CreateMessage's sampling.
// A request waits in the session's clientRequests for the response the
// read loop routes to it (clientRequests.route); it is written like any
// of the session's messages, ends with the session, and is told to
// notifications/cancelled when its context ends first, so the asker
// holds the session. It is one pointer, made where it is used
// (askerOf): never allocated.
type clientAsker struct {
	s *Session
}

func askerOf(s *Session) clientAsker { return clientAsker{s: s} }

// samplingTools reports whether the session's client may be sent tools in
// sampling: it declared sampling.tools, and the negotiated version (from
// 2025-11-25) has them.
func (a clientAsker) samplingTools() bool {
	return a.s.life.caps.samplingTools && a.s.life.version.Load() == vLatest
}

// askable reports whether a server request can reach the client now.
func (a clientAsker) askable() bool {
	s := a.s
	return !s.writeFailed.Load() && (s.conn.Reachable == nil || s.conn.Reachable())
}

// request sends the request method with params (a compact JSON object) to
// the client on the session-wide sink and waits for the response. When ctx
// ends first it tells the client with notifications/cancelled.
func (a clientAsker) request(ctx context.Context, method string, params []byte) (json.RawMessage, error) {
	return a.requestOn(ctx, a.s.conn.Notify, method, params)
}

// requestOn is request on out: the sink of the client's request that this
// one serves (on Streamable HTTP, that POST's stream), or the session's.
// notifications/cancelled goes the same way.
func (a clientAsker) requestOn(ctx context.Context, out Sink, method string, params []byte) (json.RawMessage, error) {
	s := a.s
	id := []byte(`"plughost-` + strconv.FormatUint(s.client.seq.Add(1), 10) + `"`)
	key := jsonrpc.IDKey(id)
	or := &outRequest{method: method, done: make(chan outResult, 1)}
	cr := &s.client
	cr.mu.Lock()
	if cr.closed {
		cr.mu.Unlock()
		return nil, fmt.Errorf("mcp: %s: %w", method, errSessionEnded)
	}
	cr.pending[key] = or
	cr.mu.Unlock()
	forget := func() {
		cr.mu.Lock()
		delete(cr.pending, key)
		cr.mu.Unlock()
	}

	bp := jsonrpc.GetBuf()
	*bp = jsonrpc.AppendRequest(*bp, id, method, params)
	err := out.Write(*bp)
	jsonrpc.PutBuf(bp)
	if err != nil {
		forget()
		return nil, fmt.Errorf("mcp: %s: writing to the client: %w", method, err)
	}
	if s.idleHook != nil {
		s.idleHook() // the request is out (Options.OnSession)
	}
	select {
	case r := <-or.done:
		return r.result, r.err
	case <-s.done:
		forget()
		return nil, fmt.Errorf("mcp: %s: %w", method, errSessionEnded)
	case <-ctx.Done():
		forget()
		cr.mu.Lock()
		closed := cr.closed // the session is ending: nobody to tell
		cr.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("mcp: %s: %w", method, errSessionEnded)
		}
		reason := "the server no longer needs the result: " + context.Cause(ctx).Error()
		cancelled := func(b []byte) []byte {
			b = jsonrpc.AppendNotificationHead(b, "notifications/cancelled")
			b = append(b, `,"params":{"requestId":`...)
			b = append(b, id...)
			b = append(b, `,"reason":`...)
			b = jsonrpc.AppendString(b, reason)
			return append(b, "}}"...)
		}
		s.send(out, cancelled)
		// A client that cancelled the request this one serves may have
		// stopped reading that request's stream (on Streamable HTTP, the
		// POST's): tell it on the session's stream too. A second
		// notification for an id it no longer knows is ignored.
		if out != s.conn.Notify && a.askable() {
			s.send(s.conn.Notify, cancelled)
		}
		return nil, fmt.Errorf("mcp: %s: %w", method, context.Cause(ctx))
	}
}

// route routes a response from the client to the server request it
// answers. A response to no request of ours (an unknown or abandoned id) is
// ignored, and logged to log at debug level.
func (cr *clientRequests) route(m jsonrpc.Message, log hclog.Logger) {
	if m.ID == nil || !jsonrpc.ValidID(m.ID) {
		log.Debug("ignored a response from the client without a valid id")
		return
	}
	key := jsonrpc.IDKey(m.ID)
	cr.mu.Lock()
	or := cr.pending[key]
	delete(cr.pending, key)
	cr.mu.Unlock()
	if or == nil {
		log.Debug("ignored a response to no request of ours", "id", string(m.ID))
		return
	}
	var r outResult
	switch {
	case m.Error != nil:
		var e struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if json.Unmarshal(m.Error, &e) != nil || e.Code == nil || e.Message == nil {
			r.err = fmt.Errorf("mcp: %s: %w: its error has no code or no message: %.200s", or.method, errBadAnswer, m.Error)
		} else {
			r.err = &ClientError{Method: or.method, Code: *e.Code, Message: *e.Message}
		}
	case !jsonrpc.IsObject(m.Result):
		r.err = fmt.Errorf("mcp: %s: %w: its result is not a JSON object: %.200s", or.method, errBadAnswer, m.Result)
	default:
		// The message's bytes belong to the transport: copy.
		r.result = append(json.RawMessage(nil), m.Result...)
	}
	or.done <- r
}

// addSampler registers a session whose client can sample, once it is
// initialized; the newest is asked first.
func (srv *Server) addSampler(s *Session) {
	srv.clientsMu.Lock()
	defer srv.clientsMu.Unlock()
	s.client.mu.Lock()
	closed := s.client.closed
	s.client.mu.Unlock()
	if !closed {
		srv.samplers = append(srv.samplers, s)
	}
}

func (srv *Server) removeSampler(s *Session) {
	srv.clientsMu.Lock()
	srv.samplers = slices.DeleteFunc(srv.samplers, func(x *Session) bool { return x == s })
	srv.clientsMu.Unlock()
}

// sampler chooses the session to ask: the most recently initialized one
// that declared sampling and can be reached now, or nil.
func (srv *Server) sampler() *Session {
	srv.clientsMu.Lock()
	defer srv.clientsMu.Unlock()
	for i := len(srv.samplers) - 1; i >= 0; i-- {
		if s := srv.samplers[i]; askerOf(s).askable() {
			return s
		}
	}
	return nil
}

// CreateMessage asks a client's model for a message: it sends
// sampling/createMessage with params (the MCP CreateMessageRequest params,
// a JSON object) and returns the client's CreateMessageResult.
//
// The client asked is the one of the most recently initialized session
// still open whose client declared capabilities.sampling (and, on
// Streamable HTTP, has its GET stream open: that is where the request
// goes). If that client cannot take tools in sampling (see
// [Server.SamplingTools]), the members tools and toolChoice are removed
// from params, as the spec requires. With no such session it returns an
// error wrapping [ErrNoSamplingClient]; a JSON-RPC error from the client is
// a [*ClientError]. When ctx ends first, the client is sent
// notifications/cancelled and the error wraps ctx's cause.
func (srv *Server) CreateMessage(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	const method = "sampling/createMessage"
	if !json.Valid(params) || !jsonrpc.IsObject(params) {
		return nil, fmt.Errorf("mcp: %s: params must be a JSON object", method)
	}
	s := srv.sampler()
	if s == nil {
		return nil, fmt.Errorf("mcp: %s: %w", method, ErrNoSamplingClient)
	}
	bp := jsonrpc.GetBuf()
	defer jsonrpc.PutBuf(bp)
	b := *bp
	if askerOf(s).samplingTools() {
		b, _ = jsonrpc.AppendJSON(b, params)
	} else {
		b = jsonrpc.AppendObjectWithout(b, params, "tools", "toolChoice")
	}
	*bp = b
	return askerOf(s).request(ctx, method, b)
}

// SamplingTools reports whether the client [Server.CreateMessage] would ask
// now declared sampling.tools in a session that negotiated 2025-11-25 or
// later, so that params may offer tools and toolChoice.
func (srv *Server) SamplingTools() bool {
	s := srv.sampler()
	return s != nil && askerOf(s).samplingTools()
}
