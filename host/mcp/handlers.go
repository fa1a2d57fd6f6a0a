package mcp

import (
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// The per-feature handlers. A feature's requests hang on a type of its
// own, which holds only the parts of the session the feature uses: the
// session's long calls (sessionCalls) and the feature's own state. The
// method table makes the handler from the session for each request
// (listsOf, tasksOf, catalogRequestsOf, subscriptionsOf: small values,
// not allocated) and hands it the typed params. The session itself keeps
// its lifecycle, dispatch, replies, tools/call and its input rounds, and
// subscriptions/listen.

// sessionCalls is what a feature's handler asks of its session: start a
// long call (call.go), answer a request, and know the
// capabilities of the client a request comes from. *Session implements
// it.
type sessionCalls interface {
	startOp(in incoming, op callOp) func()
	startOpSlot(in incoming, op callOp, slotless bool) func()
	startRetriable(in incoming, op callOp, method, target string, set func(*tool.Input)) func()
	respond(rp reply, msg []byte)
	respondError(rp reply, id []byte, e *jsonrpc.Error)
	capsOf(st *stateless) *clientCaps
}

// listsHandler serves tools/list, resources/list,
// resources/templates/list and prompts/list (tools.go).
type listsHandler struct {
	calls sessionCalls
	srv   *Server
	view  *view       // what the caller may see
	found *foundTools // the session's found tools; nil unless ToolSearch.AddFound
}

func listsOf(s *Session) listsHandler {
	return listsHandler{calls: s, srv: s.srv, view: &s.view, found: s.found}
}

// tasksHandler serves the tasks extension's tasks/get, tasks/update and
// tasks/cancel (tasks.go).
type tasksHandler struct {
	calls sessionCalls
	store *tasks.Service // Options.Tasks; nil when the server runs none
}

func tasksOf(s *Session) tasksHandler { return tasksHandler{calls: s, store: s.srv.tasks} }

// catalogRequests serves the long calls that ask the catalog on the
// client's behalf, as the caller: resources/read (resources.go),
// prompts/get (prompts.go) and completion/complete (complete.go).
type catalogRequests struct {
	calls  sessionCalls
	caller *Caller // the session's
	view   *view   // what the caller may see
}

func catalogRequestsOf(s *Session) catalogRequests {
	return catalogRequests{calls: s, caller: &s.conn.Peer.Caller, view: &s.view}
}

// subscriptionsHandler serves resources/subscribe and
// resources/unsubscribe (resources.go).
type subscriptionsHandler struct {
	calls sessionCalls
	subs  *subscriptions // the session's
}

func subscriptionsOf(s *Session) subscriptionsHandler {
	return subscriptionsHandler{calls: s, subs: &s.subs}
}

// self is the handler of the requests that stay on the session.
func self(s *Session) *Session { return s }
