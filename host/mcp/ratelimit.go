package mcp

import (
	"strconv"
	"time"

	"github.com/plughost/plughost/host/ratelimit"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Per-caller rate limits (issue 35; package ratelimit decides). Each
// request that reaches a provider (a long call: tools/call, resources/read,
// prompts/get, completion/complete, resources/subscribe and unsubscribe)
// is weighed for its caller, named by the key that names a task's owner
// (taskowner.go: the same caller on every transport and replica), before
// it takes a slot. One over a limit is answered at once with
// CodeRateLimited:
//
//	{"code":-32029,"message":"rate limit exceeded: rule \"contractors\" allows 5 requests per second (bursts of 5); retry after 200ms",
//	 "data":{"rule":"contractors","limit":"rate","retryAfterMs":200}}
//
// data.tool names the tool of a tool's limit. A transport that can say
// more (Streamable HTTP: 429 and Retry-After) learns of the refusal
// through its Sink (RateLimitedSink) before the answer is written.

// CodeRateLimited is the JSON-RPC error of a request over a rate limit
// (in the implementation-defined server error range; Streamable HTTP's
// per-session limit answers it too).
const CodeRateLimited = -32029

// A RateLimitedSink is a Sink that answers a refusal over a rate limit in
// a way of its own (an HTTP status and header): RateLimited is called,
// with the time until the request would pass, just before the refusal is
// written to it. Only for a request answered alone (not in a batch).
type RateLimitedSink interface {
	Sink
	RateLimited(retryAfter time.Duration)
}

// RateLimited is a request refused over its caller's rate limits, for
// Options.OnRateLimited.
type RateLimited struct {
	Time time.Time
	// Method is the request's; Tool the tool a tools/call called.
	Method, Tool string
	// Peer names the client and its caller.
	Peer Peer
	// Stateless is set for a request of the stateless revision.
	Stateless bool
	// Refusal says which limit of which rule, and when to retry.
	Refusal *ratelimit.Refusal
}

// rateLimited weighs in, a request of method, against its caller's rate
// limits: false when it passes; else it answers it and returns true.
func (s *Session) rateLimited(in incoming, method string) bool {
	lim := s.srv.rateLimit
	if lim == nil || !lim.Active() {
		return false
	}
	req := ratelimit.Request{Caller: &s.conn.Peer.Caller, Key: callerKey(&s.conn.Peer.Caller), Call: method == "tools/call"}
	if req.Call {
		req.Tool = calledTool(in.msg.Params, s.srv.search != nil)
	}
	ref := lim.Check(in.ctx, req)
	if ref == nil {
		return false
	}
	if s.srv.onRateLimited != nil {
		s.srv.onRateLimited(&RateLimited{Time: time.Now(), Method: method, Tool: req.Tool, Peer: s.conn.Peer, Stateless: in.st != nil, Refusal: ref})
	}
	if rl, ok := in.rp.out.(RateLimitedSink); ok && in.rp.batch == nil {
		rl.RateLimited(ref.RetryAfter)
	}
	data := []byte(`{"rule":`)
	data = jsonrpc.AppendString(data, ref.Rule)
	data = append(data, `,"limit":`...)
	data = jsonrpc.AppendString(data, ref.Limit)
	if ref.Tool != "" {
		data = append(data, `,"tool":`...)
		data = jsonrpc.AppendString(data, ref.Tool)
	}
	data = append(data, `,"retryAfterMs":`...)
	data = strconv.AppendInt(data, (ref.RetryAfter + time.Millisecond - 1).Milliseconds(), 10) // rounded up: a retry sooner is refused
	data = append(data, '}')
	s.respondError(in.rp, in.msg.ID, &jsonrpc.Error{Code: CodeRateLimited, Message: ref.Error(), Data: data})
	return true
}

// calledTool is the tool a tools/call's params name: in tool search mode
// (search), the one call_tool's arguments name, so that a tool's limit
// holds however it is called; "" when they name none.
func calledTool(params []byte, search bool) string {
	name, _ := jsonrpc.Unquote(jsonrpc.Member(params, "name"))
	if search && name == CallToolName {
		inner, _ := jsonrpc.Unquote(jsonrpc.Member(jsonrpc.Member(params, "arguments"), "name"))
		return inner
	}
	return name
}
