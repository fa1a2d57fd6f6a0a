package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Resources: resources/read is a long call to the catalog; a session's
// subscriptions (resources/subscribe, resources/unsubscribe) are a bounded
// set of URIs, each holding the catalog's release.

// CodeResourceNotFound is the JSON-RPC error of a resources/read (or
// resources/subscribe) naming no resource the server offers (MCP
// 2025-11-25's "Resource not found"; its data is {"uri": ...}).
const CodeResourceNotFound = -32002

// resourceNotFound is the -32002 error for uri, naming err.
func resourceNotFound(uri string, err error) *jsonrpc.Error {
	data := append([]byte(`{"uri":`), jsonrpc.AppendString(nil, uri)...)
	return &jsonrpc.Error{Code: CodeResourceNotFound, Message: "resource not found: " + err.Error(), Data: append(data, '}')}
}

// subscriptionsHandler serves resources/subscribe and
// resources/unsubscribe (resources.go).
type subscriptionsHandler struct {
	calls sessionCalls
	subs  *subscriptions // the session's
}

func subscriptionsOf(s *Session) subscriptionsHandler {
	return subscriptionsHandler{calls: callsOf(s), subs: &s.subs}
}

// uriParams are the params of resources/read, resources/subscribe and
// resources/unsubscribe.
type uriParams struct {
	uri string // never empty
}

func (p uriParams) decode(method string, raw []byte) (uriParams, *jsonrpc.Error) {
	var u []byte
	if _, err := readMembers(raw, []string{"uri"}, &u); err != nil {
		return p, err
	}
	var ok bool
	p.uri, ok = jsonrpc.Unquote(u)
	switch {
	case !ok:
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs uri, a string")
	case p.uri == "":
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: uri must not be empty")
	}
	return p, nil
}

// readOp is a resources/read.
type readOp struct{ r tool.Read }

func (h catalogRequests) startRead(in incoming, p uriParams) func() {
	uri := p.uri
	op := &readOp{r: tool.Read{URI: uri, ClientCapabilities: h.calls.capsOf(in.st).raw,
		Caller: h.caller, Guard: h.view.guard()}}
	return h.calls.startRetriable(in, op, "resources/read", uri, func(i *tool.Input) { op.r.Input = i })
}

func (o *readOp) exec(c *call, in *tool.Input) (json.RawMessage, error) {
	if in != nil {
		o.r.Input = in
	}
	return c.s.srv.catalog.ReadResource(c.ctx, &o.r)
}

func (o *readOp) answer(b []byte, c *call, res json.RawMessage, err error) []byte {
	return appendAnswer(b, c, "resources/read", res, err, func(err error) *jsonrpc.Error {
		if errors.Is(err, tool.ErrUnknownResource) {
			e := resourceNotFound(o.r.URI, err)
			if c.st != nil {
				e.Code = jsonrpc.CodeInvalidParams // SEP-2164: 2026-07-28's code for it
			}
			return e
		}
		return nil
	})
}

// subscriptions are a session's resource subscriptions, by URI. Their
// changes happen in the order the client's requests arrive (on the
// dispatching goroutine); the catalog is called on the call's worker.
type subscriptions struct {
	max int
	// refused, when not nil, is told of a subscription refused at max.
	refused func()

	mu     sync.Mutex
	closed bool
	byURI  map[string]*subscription
}

// subscription is one URI's subscription: pending until the catalog
// answers, then live (holding its release) or gone.
//
// One whose first request ended without the catalog's answer (unanswered:
// cancelled) while repeated ones wait for it stays in byURI, an orphan,
// until one of them takes its place (a new subscription, asking the
// catalog), an unsubscribe drops it, or the last of them leaves: so a
// resources/unsubscribe arriving meanwhile still undoes the repeated ones.
type subscription struct {
	ready chan struct{} // closed once the catalog answered
	// err is the catalog's refusal, set before ready closes, or why the
	// catalog was not asked or did not answer (unanswered).
	err     error
	live    bool // subscribed; release not yet called
	release func()
	// dropped: unsubscribed or the session ended while pending, so the
	// release is called as soon as the catalog gives it.
	dropped bool
	// waiters counts the repeated subscriptions waiting for this one's
	// answer.
	waiters int
}

// has reports whether the session is subscribed to uri.
func (t *subscriptions) has(uri string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	sub := t.byURI[uri]
	return sub != nil && sub.live
}

// close ends every subscription: live ones are released, pending ones will
// be when the catalog answers.
func (t *subscriptions) close() {
	t.mu.Lock()
	t.closed = true
	var releases []func()
	for _, sub := range t.byURI {
		if sub.live {
			sub.live = false
			releases = append(releases, sub.release)
		} else {
			sub.dropped = true
		}
	}
	t.byURI = nil
	t.mu.Unlock()
	for _, r := range releases {
		r()
	}
}

// settle records the catalog's answer to sub's subscription.
func (t *subscriptions) settle(uri string, sub *subscription, release func(), err error) {
	t.mu.Lock()
	sub.err = err
	if err == nil && !sub.dropped {
		sub.live, sub.release, release = true, release, nil
	}
	if err != nil && t.byURI[uri] == sub && (sub.waiters == 0 || !unanswered(err)) {
		delete(t.byURI, uri) // an unanswered one with waiters stays, an orphan
	}
	close(sub.ready)
	t.mu.Unlock()
	if err == nil && release != nil {
		release() // dropped while the catalog answered
	}
}

// errNotSubscribed is why a first subscription that never asked the
// catalog failed (its call was refused or ended first).
var errNotSubscribed = errors.New("the subscription was not made")

// errSubsClosed refuses a subscription while the session ends (the call
// gets no response).
var errSubsClosed = errors.New("the session is ending")

// unanswered reports whether a first subscription's error is not the
// catalog's answer but its call's end (cancelled, or never run): a
// repeated subscription waiting for it then goes on as the first.
func unanswered(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, errNotSubscribed)
}

// limitError is the refusal of one subscription more than the session's
// limit (-32602, as tool.ErrRefused).
func (t *subscriptions) limitError() error {
	if t.refused != nil {
		t.refused()
	}
	return tool.Errorf(tool.ErrRefused, "this session is subscribed to %d resources, the most allowed; unsubscribe from one first", t.max)
}

// join registers interest in uri: the subscription to wait for (counted
// among its waiters), or a new one the caller makes (first). It fails when
// the session is closing or, for a new one, over its limit.
func (t *subscriptions) join(uri string) (sub *subscription, first bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.joinLocked(uri, nil)
}

// joinLocked is join; an orphan (the subscription orphan) is taken over,
// not waited for. t.mu is held.
func (t *subscriptions) joinLocked(uri string, orphan *subscription) (sub *subscription, first bool, err error) {
	cur := t.byURI[uri]
	switch {
	case t.closed:
		return nil, false, errSubsClosed
	case cur != nil && cur != orphan:
		cur.waiters++
		return cur, false, nil
	case cur == nil && len(t.byURI) >= t.max:
		return nil, false, t.limitError()
	}
	if t.byURI == nil {
		t.byURI = map[string]*subscription{}
	}
	sub = &subscription{ready: make(chan struct{})}
	t.byURI[uri] = sub
	return sub, true, nil
}

// answered is what a repeated subscription that waited for sub does once
// sub's first request ended: done (answered as sub was, or, when an
// unsubscribe dropped sub meanwhile, success: the unsubscribe came after
// it), or go on with next, to wait for or to make (first), in sub's place.
func (t *subscriptions) answered(uri string, sub *subscription) (next *subscription, first bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sub.waiters--
	switch {
	case sub.err == nil:
		return nil, false, nil
	case !unanswered(sub.err):
		return nil, false, sub.err
	case sub.dropped:
		return nil, false, nil
	}
	return t.joinLocked(uri, sub)
}

// leave forgets a repeated subscription that stopped waiting for sub (its
// call ended); the last waiter of an orphan removes it.
func (t *subscriptions) leave(uri string, sub *subscription) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sub.waiters--
	if sub.waiters == 0 && sub.err != nil && t.byURI[uri] == sub {
		delete(t.byURI, uri)
	}
}

// subscribe registers the subscription at once, in arrival order, and
// leaves asking the catalog to the call. Subscribing again to a URI is
// answered as the first subscription was, and holds nothing more.
func (h subscriptionsHandler) subscribe(in incoming, p uriParams) func() {
	uri := p.uri
	t := h.subs
	sub, first, err := t.join(uri)
	switch {
	case errors.Is(err, errSubsClosed):
		return nil // the session is ending: no response
	case err != nil:
		h.calls.respondError(in.rp, in.msg.ID, invalidParams(err))
		return nil
	}
	// A repeated subscription waits for the first one's answer: it must not
	// hold a slot the first one may be waiting for.
	run := h.calls.startOpSlot(in, &subscribeOp{uri: uri, sub: sub, first: first}, !first)
	switch {
	case run != nil:
	case first:
		t.settle(uri, sub, nil, errNotSubscribed)
	default:
		t.leave(uri, sub)
	}
	return run
}

// subscribeOp is a resources/subscribe. The first one of a URI asks the
// catalog; a repeated one waits for the first's answer, and goes on as the
// first when the first ended without one (cancelled).
type subscribeOp struct {
	uri     string
	sub     *subscription
	first   bool
	settled bool
}

func (o *subscribeOp) exec(c *call, _ *tool.Input) (json.RawMessage, error) {
	t := &c.s.subs
	for !o.first {
		select {
		case <-o.sub.ready:
		case <-c.ctx.Done():
			t.leave(o.uri, o.sub)
			return nil, c.ctx.Err()
		}
		next, first, err := t.answered(o.uri, o.sub)
		switch {
		case err != nil:
			return nil, err
		case next == nil:
			return emptyObject, nil
		}
		o.sub, o.first = next, first
	}
	// A repeated subscription that became the first holds no slot yet.
	if !c.slot && !c.takeSlot() {
		return nil, c.ctx.Err()
	}
	var release func()
	var err error
	if c.s.view.hidden(c.s.srv, o.uri) {
		err = fmt.Errorf("%w: %q", tool.ErrUnknownResource, o.uri)
	} else {
		release, err = c.s.srv.catalog.SubscribeResource(c.ctx, o.uri)
	}
	switch {
	case err == nil && release == nil:
		release = func() {}
	case err != nil && needsInput(err):
		err = errors.New("the provider asked for the client's input, which a subscription cannot carry")
	}
	o.settled = true
	c.s.subs.settle(o.uri, o.sub, release, err)
	if err != nil {
		return nil, err
	}
	return emptyObject, nil
}

// end settles a first subscription that never asked the catalog (cancelled
// while it waited for a slot).
func (o *subscribeOp) end(c *call, err error) {
	if o.first && !o.settled {
		if err == nil {
			err = errNotSubscribed
		}
		o.settled = true
		c.s.subs.settle(o.uri, o.sub, nil, err)
	}
}

func (o *subscribeOp) answer(b []byte, c *call, res json.RawMessage, err error) []byte {
	return appendAnswer(b, c, "resources/subscribe", res, err, func(err error) *jsonrpc.Error {
		switch {
		case errors.Is(err, tool.ErrUnknownResource):
			return resourceNotFound(o.uri, err)
		case errors.Is(err, tool.ErrRefused):
			// A limit (the session's, or the catalog's on the URIs
			// subscribed at once), not a fault of the server.
			return invalidParams(err)
		}
		return nil
	})
}

// unsubscribe forgets the subscription at once, in arrival order; the call
// releases it. Unsubscribing from a URI not subscribed is answered success
// too: the client's wish holds.
func (h subscriptionsHandler) unsubscribe(in incoming, p uriParams) func() {
	uri := p.uri
	t := h.subs
	var release func()
	t.mu.Lock()
	if sub := t.byURI[uri]; sub != nil {
		delete(t.byURI, uri)
		if sub.live {
			sub.live, release = false, sub.release
		} else {
			sub.dropped = true
		}
	}
	t.mu.Unlock()
	op := &unsubscribeOp{release: release}
	run := h.calls.startOp(in, op)
	if run == nil && release != nil {
		release() // the call was refused (a duplicate id): release anyway
	}
	return run
}

// unsubscribeOp is a resources/unsubscribe: its end releases, so that the
// release happens even when the call is cancelled, and before the answer.
type unsubscribeOp struct{ release func() }

func (o *unsubscribeOp) exec(*call, *tool.Input) (json.RawMessage, error) { return emptyObject, nil }

func (o *unsubscribeOp) end(*call, error) {
	if r := o.release; r != nil {
		o.release = nil
		r()
	}
}

func (o *unsubscribeOp) answer(b []byte, c *call, res json.RawMessage, err error) []byte {
	return appendAnswer(b, c, "resources/unsubscribe", res, err, nil)
}
