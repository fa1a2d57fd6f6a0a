package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// The lists: tools/list, resources/list, resources/templates/list and
// prompts/list page through the catalog (the cursor is the catalog's) and
// are answered inline, spliced as the catalog holds them, once the
// catalog's first load is over (Options.Ready); before, they wait for it.

// listsHandler serves tools/list, resources/list,
// resources/templates/list and prompts/list (tools.go).
type listsHandler struct {
	calls sessionCalls
	srv   *Server
	view  *view       // what the caller may see
	found *foundTools // the session's found tools; nil unless ToolSearch.AddFound
}

func listsOf(s *Session) listsHandler {
	return listsHandler{calls: callsOf(s), srv: s.srv, view: &s.view, found: s.found}
}

// cursorParams are the params of a list request.
type cursorParams struct {
	cursor string // "" when absent
}

func (p cursorParams) decode(_ string, raw []byte) (cursorParams, *jsonrpc.Error) {
	c := jsonrpc.Member(raw, "cursor")
	if c == nil {
		return p, nil
	}
	var ok bool
	if p.cursor, ok = jsonrpc.Unquote(c); !ok {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: cursor must be a string")
	}
	return p, nil
}

// listTools answers one page of the catalog's tools; in tool search mode
// with AddFound, the session's found tools join the list (found.go),
// except for a stateless request's.
func (h listsHandler) listTools(in incoming, p cursorParams) func() {
	srv := h.srv
	page := h.view.page(srv, srv.catalog.ListTools, guardedCatalog.ListToolsFor)
	if srv.search != nil {
		withFound := h.found != nil && in.st == nil
		page = func(cursor string) ([]json.RawMessage, string, error) {
			var found []string
			if withFound {
				found = h.found.list()
			}
			return srv.search.listWith(cursor, found, h.view.guard())
		}
	}
	return h.list(in, &listOp{method: "tools/list", member: "tools", cursor: p.cursor, page: page})
}

func (h listsHandler) listResources(in incoming, p cursorParams) func() {
	return h.list(in, &listOp{method: "resources/list", member: "resources", cursor: p.cursor,
		page: h.view.page(h.srv, h.srv.catalog.ListResources, guardedCatalog.ListResourcesFor)})
}

func (h listsHandler) listResourceTemplates(in incoming, p cursorParams) func() {
	return h.list(in, &listOp{method: "resources/templates/list", member: "resourceTemplates", cursor: p.cursor,
		page: h.view.page(h.srv, h.srv.catalog.ListResourceTemplates, guardedCatalog.ListResourceTemplatesFor)})
}

func (h listsHandler) listPrompts(in incoming, p cursorParams) func() {
	return h.list(in, &listOp{method: "prompts/list", member: "prompts", cursor: p.cursor,
		page: h.view.page(h.srv, h.srv.catalog.ListPrompts, guardedCatalog.ListPromptsFor)})
}

// DefaultReadyWait is how long a list request waits at most for the
// catalog's first load (Options.ReadyWait).
const DefaultReadyWait = 10 * time.Second

// A listOp is one list request: its method, the result's member holding
// the items, the cursor and the catalog's page function.
type listOp struct {
	method, member, cursor string
	page                   func(cursor string) ([]json.RawMessage, string, error)

	// The page, once read (exec).
	items []json.RawMessage
	next  string
	err   error
}

// list answers a list request at once when the catalog is complete
// (Options.Ready); before, the request waits for it off the read loop, as
// a call of its own that holds no slot and can be cancelled.
func (h listsHandler) list(in incoming, op *listOp) func() {
	if h.srv.isReady() {
		items, next, err := op.page(op.cursor)
		h.answer(in, op.method, op.member, items, next, err)
		return nil
	}
	return h.calls.startOpSlot(in, op, true)
}

// isReady reports whether the catalog's first load is over.
func (srv *Server) isReady() bool {
	if srv.ready == nil {
		return true
	}
	select {
	case <-srv.ready:
		return true
	default:
		return false
	}
}

// exec reads the page (the call waited for the catalog's first load).
func (op *listOp) exec(c *call, _ *tool.Input) (json.RawMessage, error) {
	op.items, op.next, op.err = op.page(op.cursor)
	return nil, nil
}

// awaitReady waits for the catalog's first load, at most ReadyWait (what
// then logs a warning naming what waited), so that no request is served
// from a catalog still loading: a list would be partial, a call of a tool
// whose plugin is still loading unknown (a replica that just started, say).
// It reports false when ctx ends first.
func (srv *Server) awaitReady(ctx context.Context, what string) bool {
	if srv.isReady() {
		return true
	}
	t := time.NewTimer(srv.readyWait)
	defer t.Stop()
	select {
	case <-srv.ready:
	case <-ctx.Done():
		return false
	case <-t.C:
		srv.log.Warn("serving "+what+" before the plugins found at start have loaded: the first load took longer than the wait",
			"wait", srv.readyWait)
	}
	return true
}

func (op *listOp) answer(b []byte, c *call, _ json.RawMessage, _ error) []byte {
	return c.s.srv.appendList(b, c.id, c.st, op.method, op.member, op.items, op.next, op.err)
}

// answer answers a list request with one page (appendList).
func (h listsHandler) answer(in incoming, method, member string, items []json.RawMessage, next string, err error) {
	// The response is built in one buffer of the right size: a page of a
	// thousand tools is a few hundred KiB, too big for the pool.
	size := len(in.msg.ID) + len(next) + len(member) + 64
	for _, t := range items {
		size += len(t) + 1
	}
	var bp *[]byte
	var b []byte
	if size <= jsonrpc.MaxPooled {
		bp = jsonrpc.GetBuf()
		b = *bp
	} else {
		b = make([]byte, 0, size)
	}
	b = h.srv.appendList(b, in.msg.ID, in.st, method, member, items, next, err)
	h.calls.respond(in.rp, b)
	if bp != nil {
		*bp = b
		jsonrpc.PutBuf(bp)
	}
}

// appendList appends the response to a list request with one page: the
// items under member, and nextCursor when there is a next page; for a
// stateless request (st not nil) first its resultType and caching hints
// (cacheScope "private" when the lists differ per caller).
// An unknown cursor is -32602; any other failure -32603. An item not
// framed as a JSON object is dropped with an error log.
func (srv *Server) appendList(b, id []byte, st *stateless, method, member string, items []json.RawMessage, next string, err error) []byte {
	switch {
	case errors.Is(err, tool.ErrInvalidCursor):
		return jsonrpc.AppendError(b, id, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error()))
	case err != nil:
		srv.log.Error(method+" failed", "error", err)
		return jsonrpc.AppendError(b, id, jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: "+method+": "+err.Error()))
	}
	b = jsonrpc.AppendResultHead(b, id)
	b = append(b, '{')
	if st != nil {
		b = srv.appendCacheable(b, srv.listsPerCaller())
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, member...)
	b = append(b, `":[`...)
	n := 0
	for _, t := range items {
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = jsonrpc.AppendObject(b, t); !ok {
			b = b[:mark]
			srv.log.Error(method+": dropped an item that is not a JSON object", "item", string(t))
			continue
		}
		n++
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"nextCursor":`...)
		b = jsonrpc.AppendString(b, next)
	}
	return append(b, "}}"...)
}
