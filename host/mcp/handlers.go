package mcp

import (
	"context"
	"encoding/json"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// The per-feature handlers. A feature's requests hang on a type of its
// own, which holds only the parts of the session the feature uses: the
// session's long calls (sessionCalls) and the feature's own state. The
// method table makes the handler from the session for each request and
// hands it the typed params (params.go). The handlers, each in its
// feature's file with the function that makes it (small values, not
// allocated):
//
//   - listsHandler (tools.go): tools/list, resources/list,
//     resources/templates/list, prompts/list;
//   - catalogRequests (ops.go): resources/read, prompts/get,
//     completion/complete;
//   - subscriptionsHandler (resources.go): resources/subscribe and
//     resources/unsubscribe;
//   - listenHandler (listen.go): subscriptions/listen;
//   - tasksHandler (tasks.go): tasks/get, tasks/update, tasks/cancel;
//   - callsHandler (calls.go): tools/call, and the start of every long
//     call: it is the others' sessionCalls;
//   - the call table (calltable.go): notifications/cancelled.
//
// The session itself keeps its lifecycle, dispatch and replies. Its
// requests to the client go through a clientAsker (client.go): the input
// rounds of its calls (input.go) and Server.CreateMessage's sampling.

// sessionCalls is what a feature's handler asks of its session: start a
// long call (call.go), answer a request, and know the capabilities of the
// client a request comes from. callsHandler implements it (calls.go).
type sessionCalls interface {
	startOp(in incoming, op callOp) func()
	startOpSlot(in incoming, op callOp, slotless bool) func()
	startRetriable(in incoming, op callOp, method, target string, set func(*tool.Input)) func()
	respond(rp reply, msg []byte)
	respondError(rp reply, id []byte, e *jsonrpc.Error)
	capsOf(st *stateless) *clientCaps
}

// incoming is one message being served: its context, its decoded parts
// and where its response goes.
type incoming struct {
	ctx context.Context
	msg jsonrpc.Message
	rp  reply
	// st is set for a request of the stateless revision: what its _meta
	// says, in place of the session's state.
	st *stateless
}

// A callOp is what a long call other than tools/call does and answers.
type callOp interface {
	// exec runs the request on the catalog: in is nil the first time, the
	// client's answers on the retry of a provider's InputRequired.
	exec(c *call, in *tool.Input) (json.RawMessage, error)
	// answer appends the response to the request, which ended with res or
	// err (never a cancellation).
	answer(b []byte, c *call, res json.RawMessage, err error) []byte
}

// An opEnder is a callOp with something to do when its call ends, whether
// it ran, failed or was cancelled (even before it got a slot), before the
// response.
type opEnder interface {
	end(c *call, err error)
}
