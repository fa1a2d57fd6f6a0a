package mcp

import (
	"context"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// callsHandler starts the session's long calls: tools/call, which it
// serves itself, and the calls of the other features, which reach it as
// their sessionCalls (handlers.go). Starting a call is registering it in
// the session's call table and handing back what runs it; the call then
// lives on its own (call.go), answering, notifying and retiring through
// the session it belongs to (call.s). That is why the handler holds the
// session itself, where the other handlers hold a few of its parts: it is
// the one that makes calls, and a call needs the whole of its session.
// The handler is one pointer: held as a sessionCalls, it is not
// allocated.
type callsHandler struct {
	s *Session
}

func callsOf(s *Session) callsHandler { return callsHandler{s: s} }

// respond and respondError answer a request (reply.go): the other
// handlers answer through their sessionCalls.
func (h callsHandler) respond(rp reply, msg []byte) { h.s.respond(rp, msg) }

func (h callsHandler) respondError(rp reply, id []byte, e *jsonrpc.Error) {
	h.s.respondError(rp, id, e)
}

// capsOf returns the client capabilities a request is served with: its
// _meta's when stateless, the session's otherwise.
func (h callsHandler) capsOf(st *stateless) *clientCaps {
	if st != nil {
		return &st.caps
	}
	return &h.s.life.caps
}

// startCall registers a tools/call in flight and returns the function
// that runs it, or nil after answering with an error.
func (h callsHandler) startCall(in incoming, p callParams) func() {
	s := h.s
	// The message's bytes belong to the transport: copy what outlives
	// this call in one allocation.
	id, args, token := in.msg.ID, p.args, p.token
	keep := make([]byte, 0, len(id)+len(args)+len(token))
	keep = append(keep, id...)
	keep = append(keep, args...)
	keep = append(keep, token...)
	id = keep[:len(id):len(id)]
	if args != nil { // absent arguments stay nil: the catalog applies the default
		args = keep[len(id) : len(id)+len(args) : len(id)+len(args)]
	}
	if token != nil {
		token = keep[len(keep)-len(token):]
	}

	c := &call{s: s, key: jsonrpc.IDKey(id), id: id, rp: in.rp, token: token, st: in.st}
	c.tc = tool.Call{Name: p.name, Arguments: args, Log: c.log, ClientCapabilities: h.capsOf(in.st).raw,
		Caller: &s.conn.Peer.Caller, Guard: s.view.guard()}
	ctx := in.ctx
	if s.found != nil && in.st == nil && p.name == SearchToolName {
		ctx = withFound(ctx, s.found) // its hits join the session's list
	}
	c.observe(p)
	if s.srv.mayBecomeTask(in.st) {
		c.startTaskable(ctx)
	} else {
		c.ctx, c.cancel = context.WithCancel(ctx)
	}
	if in.st != nil {
		input, round, werr := retryInput(s, in, "tools/call", p.name)
		if werr != nil {
			c.abandon()
			s.respondError(in.rp, in.msg.ID, werr)
			return nil
		}
		c.tc.Input, c.round = input, round
	}
	if token != nil {
		c.tc.Progress = c.progress
	}
	if !h.admit(c) {
		c.abandon()
		return nil
	}
	t := &s.calls
	if s.inline && in.rp.batch == nil && s.srv.isReady() {
		select {
		case t.slots <- struct{}{}:
			c.slot = true
			if c.task != nil {
				c.task.arm(c)
			}
			t.inline.Add(1)
			s.srv.catalog.StartCall(c.ctx, &c.tc, c.started)
			return nil
		default: // all slots busy: a worker waits for one
		}
	}
	return c.run
}

// startOp registers a long call other than tools/call and returns the
// function that runs it, or nil after answering with an error.
func (h callsHandler) startOp(in incoming, op callOp) func() {
	return h.startOpSlot(in, op, false)
}

// startOpSlot is startOp; slotless marks an op that only waits for
// another call (see call.slotless).
func (h callsHandler) startOpSlot(in incoming, op callOp, slotless bool) func() {
	return h.startOpRound(in, op, slotless, 0)
}

// startOpRound is startOpSlot for a stateless request that retries
// round input rounds.
func (h callsHandler) startOpRound(in incoming, op callOp, slotless bool, round int) func() {
	id := append([]byte(nil), in.msg.ID...) // the transport's bytes: copy
	c := &call{s: h.s, key: jsonrpc.IDKey(id), id: id, rp: in.rp, op: op, slotless: slotless, st: in.st, round: round}
	c.ctx, c.cancel = context.WithCancel(in.ctx)
	if !h.admit(c) {
		return nil
	}
	return c.run
}

// startRetriable starts a long call that a provider may answer with an
// InputRequired (resources/read, prompts/get): for a stateless request,
// the client's answers and sealed state of an earlier round are read
// first and handed to set.
func (h callsHandler) startRetriable(in incoming, op callOp, method, target string, set func(*tool.Input)) func() {
	round := 0
	if in.st != nil {
		input, r, werr := retryInput(h.s, in, method, target)
		if werr != nil {
			h.s.respondError(in.rp, in.msg.ID, werr)
			return nil
		}
		set(input)
		round = r
	}
	return h.startOpRound(in, op, false, round)
}

// admit registers c in the call table under its id. It reports false, c
// cancelled, when the session is closing or (after answering -32600) the
// id is already in use.
func (h callsHandler) admit(c *call) bool {
	s := h.s
	t := &s.calls
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.cancel()
		return false
	}
	if _, dup := t.inflight[c.key]; dup {
		t.mu.Unlock()
		c.cancel()
		s.respondError(c.rp, c.id, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "invalid request: request id "+string(c.id)+" is already in use"))
		return false
	}
	t.inflight[c.key] = c
	s.work.Add(1)
	s.pending.Add(1)
	t.mu.Unlock()
	return true
}

// cancelParams are the params of notifications/cancelled.
type cancelParams struct {
	id []byte // requestId, a valid id
}

func (p cancelParams) decode(method string, raw []byte) (cancelParams, *jsonrpc.Error) {
	p.id = jsonrpc.Member(raw, "requestId")
	if p.id == nil || !jsonrpc.ValidID(p.id) {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, method+" without a valid requestId")
	}
	return p, nil
}

// cancelled handles notifications/cancelled: the request's context ends and
// its response is suppressed. Unknown and finished ids are ignored.
func (t *callTable) cancelled(p cancelParams) { t.cancel(jsonrpc.IDKey(p.id)) }

// callTableOf is the handler of notifications/cancelled: the session's
// call table.
func callTableOf(s *Session) *callTable { return &s.calls }
