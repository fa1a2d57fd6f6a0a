package mcp

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// subscriptions/listen, the stateless revision's one stream of
// notifications unrelated to a request. The client names what it wants
// (tools, resources and prompts list_changed; resources/updated of the
// URIs it lists); the server first acknowledges what it will honour
// (notifications/subscriptions/acknowledged: every list kind asked, and
// the URIs a provider offers), then sends those notifications, each with
// the listen request's id as _meta's subscriptionId, coalesced per burst
// as a session's are. The request stays open until the client cancels it
// (notifications/cancelled, or closing its HTTP response), and gets its
// result, which ends the stream, only when the server shuts down
// gracefully over HTTP (Server.EndListeners; over stdio the connection
// simply closes). It holds no MaxInFlight slot, nor a worker of a read
// loop: over stdio it runs on a goroutine of its own. At most
// Options.MaxListeners are open in the whole server, and one names at
// most Options.MaxSubscriptions URIs (and as many task ids), of at most
// Options.MaxListenBytes bytes together, while the URIs and ids of every
// open stream stay within Options.ListenBudget; beyond any of them it is
// refused with -32602 naming the limit.
//
// What a client names is bounded by its size: the count is checked on
// the list as sent, before anything else is done with it, and the
// duplicates are then dropped with a set, so that a request naming
// 390,000 URIs costs a count, not 390,000² comparisons.

// DefaultMaxListeners is Options.MaxListeners's default.
const DefaultMaxListeners = 1000

// DefaultMaxListenBytes is Options.MaxListenBytes's default: 1000 URIs
// of some 256 bytes each.
const DefaultMaxListenBytes = 256 << 10

// DefaultListenBudget is Options.ListenBudget's default: 64 streams at
// DefaultMaxListenBytes, a few tens of MiB held at most with what the
// catalog and the acknowledgement keep of each URI.
const DefaultListenBudget = 16 << 20

// listeners are the server's open subscriptions/listen requests.
type listeners struct {
	max    int64
	open   atomic.Int64
	budget atomic.Int64  // the most bytes of URIs and task ids all open streams hold (ListenBudget)
	held   atomic.Int64  // the bytes of URIs and task ids the open streams hold
	ended  chan struct{} // closed by EndListeners
	once   sync.Once
}

func (l *listeners) init(max int, budget int64) {
	l.max = int64(max)
	l.budget.Store(budget)
	l.ended = make(chan struct{})
}

// hold counts a stream's n bytes against the budget; false (nothing
// counted) past it.
func (l *listeners) hold(n int64) bool {
	if l.held.Add(n) > l.budget.Load() {
		l.held.Add(-n)
		return false
	}
	return true
}

// EndListeners ends every subscriptions/listen stream, open or opened
// later, with its result (a clean end, as the revision wants on
// shutdown). Graceful shutdown calls it first: a listener never finishes
// by itself.
func (srv *Server) EndListeners() { srv.listeners.once.Do(func() { close(srv.listeners.ended) }) }

// listenHandler serves subscriptions/listen.
type listenHandler struct {
	calls   sessionCalls
	srv     *Server
	max     int           // the most URIs or tasks one stream may name (subscriptions.max)
	bytes   int64         // the most bytes of URIs and task ids one stream may name (MaxListenBytes)
	pending *atomic.Int64 // the session's work not yet written (Session.pending)
	loop    bool          // the session has a read loop (Session.loop)
}

func listenOf(s *Session) listenHandler {
	return listenHandler{calls: callsOf(s), srv: s.srv, max: s.subs.max, bytes: s.srv.tuned().maxListenBytes, pending: &s.pending, loop: s.loop}
}

// listenParams are the params of subscriptions/listen.
type listenParams struct {
	lists uint32   // the list kinds asked (listBit)
	uris  []string // resourceSubscriptions, as sent; each once after bound
	tasks []string // taskIds (the tasks extension), as sent; each once after bound
	bytes int64    // the bytes of uris and tasks, after bound
}

func (p listenParams) decode(_ string, raw []byte) (listenParams, *jsonrpc.Error) {
	n := jsonrpc.Member(raw, "notifications")
	if n == nil || !jsonrpc.IsObject(n) {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: subscriptions/listen needs notifications, an object naming what to receive")
	}
	var f struct {
		Tools     *bool     `json:"toolsListChanged"`
		Resources *bool     `json:"resourcesListChanged"`
		Prompts   *bool     `json:"promptsListChanged"`
		URIs      *[]string `json:"resourceSubscriptions"`
		Tasks     []string  `json:"taskIds"`
	}
	if err := json.Unmarshal(n, &f); err != nil {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: notifications: the list_changed members must be booleans, "+
			"resourceSubscriptions and taskIds arrays of strings")
	}
	for _, id := range f.Tasks {
		if id == "" {
			return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: taskIds: a task id must not be empty")
		}
	}
	p.tasks = f.Tasks
	for _, k := range []struct {
		b   *bool
		bit uint32
	}{{f.Tools, listTools}, {f.Resources, listResources}, {f.Prompts, listPrompts}} {
		if k.b != nil && *k.b {
			p.lists |= k.bit
		}
	}
	if f.URIs != nil {
		for _, u := range *f.URIs {
			if u == "" {
				return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: resourceSubscriptions: a URI must not be empty")
			}
		}
		p.uris = *f.URIs
	}
	return p, nil
}

// bound checks what p names against one stream's limits, as sent: at
// most max URIs and max task ids, then (duplicates dropped) at most
// maxBytes bytes of them together. It keeps each URI and id once, in the
// order first named; nil when within the limits.
func (p *listenParams) bound(max int, maxBytes int64) *jsonrpc.Error {
	switch {
	case len(p.uris) > max:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: resourceSubscriptions names "+
			strconv.Itoa(len(p.uris))+" URIs; one stream may name at most "+strconv.Itoa(max))
	case len(p.tasks) > max:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: taskIds names "+
			strconv.Itoa(len(p.tasks))+" tasks; one stream may name at most "+strconv.Itoa(max))
	}
	var n int64
	p.uris, n = distinct(p.uris)
	p.bytes = n
	p.tasks, n = distinct(p.tasks)
	p.bytes += n
	if p.bytes > maxBytes {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: resourceSubscriptions and taskIds name "+
			strconv.FormatInt(p.bytes, 10)+" bytes; one stream may name at most "+strconv.FormatInt(maxBytes, 10)+" (limits { listen_bytes })")
	}
	return nil
}

// distinct returns list with each string once, in the order first seen,
// and their bytes: linear in len(list), whatever it holds.
func distinct(list []string) (_ []string, bytes int64) {
	seen := make(map[string]struct{}, len(list))
	out := list[:0]
	for _, s := range list {
		if _, dup := seen[s]; !dup {
			seen[s] = struct{}{}
			out = append(out, s)
			bytes += int64(len(s))
		}
	}
	return out, bytes
}

// listen starts a subscriptions/listen request.
func (h listenHandler) listen(in incoming, p listenParams) func() {
	if err := p.bound(h.max, h.bytes); err != nil {
		h.srv.limitHit(LimitSubscriptions)
		h.calls.respondError(in.rp, in.msg.ID, err)
		return nil
	}
	switch {
	case len(p.tasks) > 0 && (in.st == nil || !in.st.caps.tasks || h.srv.tasks == nil):
		if h.srv.tasks == nil {
			h.calls.respondError(in.rp, in.msg.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: taskIds: this server runs no tasks"))
		} else {
			h.calls.respondError(in.rp, in.msg.ID, needTasks("subscriptions/listen with taskIds"))
		}
		return nil
	}
	run := h.calls.startOpSlot(in, &listenOp{pending: h.pending, p: p, wake: make(chan struct{}, 1)}, true)
	if run == nil || !h.loop {
		return run // a POST's own session: the POST lasts as long as the stream
	}
	// A session's read loop must not give one of its workers to a stream
	// that lasts: they would all be taken by listens, and the loop would
	// stop reading (even the client's cancellations).
	return func() { go run() }
}

// errTooManyListeners refuses a listen over Options.MaxListeners.
var errTooManyListeners = errors.New("subscriptions/listen streams are open, the most this server allows; close one first")

// errListenBudget refuses a listen over Options.ListenBudget.
var errListenBudget = errors.New("bytes of URIs and task ids are held by the open subscriptions/listen streams, " +
	"the most this server allows (limits { listen_budget }); name fewer, or close a stream first")

// listenOp is one open subscriptions/listen.
type listenOp struct {
	pending *atomic.Int64 // the session's
	p       listenParams
	wake    chan struct{} // 1-buffered: something is due (counted in pending)

	lists   atomic.Uint32 // the list kinds whose list_changed is due
	sums    viewSums      // what the caller saw of the lists (access.go)
	mu      sync.Mutex
	stopped bool            // the listener ended: pokes count nothing any more
	subbed  map[string]bool // the URIs honoured
	updated dueURIs         // URIs whose resources/updated is due
	tasks   []*tasks.Task   // task states whose notifications/tasks is due, oldest first
}

// poke wakes the listener; what is due counts as the session's pending
// work until it is written (or the listener ends).
func (o *listenOp) poke() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	o.pending.Add(1)
	select {
	case o.wake <- struct{}{}:
	default: // already awake: it will see what was recorded
		o.pending.Add(-1)
	}
}

// exec subscribes, acknowledges and forwards until the client cancels or
// the server ends its listeners.
func (o *listenOp) exec(c *call, _ *tool.Input) (json.RawMessage, error) {
	srv := c.s.srv
	l := &srv.listeners
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		return nil, tool.Errorf(tool.ErrRefused, "%d %v", l.max, errTooManyListeners)
	}
	defer l.open.Add(-1)
	if !l.hold(o.p.bytes) {
		srv.limitHit(LimitSubscriptions)
		return nil, tool.Errorf(tool.ErrRefused, "%d more bytes: %d %v", o.p.bytes, l.budget.Load(), errListenBudget)
	}
	defer l.held.Add(-o.p.bytes)
	defer func() { // last: what was due is dropped, and nothing more counts
		o.mu.Lock()
		o.stopped = true
		o.mu.Unlock()
		select {
		case <-o.wake:
			c.s.idle()
		default:
		}
	}()
	if o.p.lists != 0 {
		o.sums.reset(srv, c.s.view.guard())
		cancel := srv.catalog.Subscribe(func(ch tool.Change) {
			if bits := changeBits(ch) & o.p.lists; bits != 0 {
				o.lists.Or(bits)
				o.poke()
			}
		})
		defer cancel()
	}
	if len(o.p.uris) > 0 {
		o.subbed = map[string]bool{}
		unwatch := srv.catalog.OnResourceUpdated(func(uri string) {
			o.mu.Lock()
			added := o.subbed[uri] && o.updated.add(uri)
			o.mu.Unlock()
			if added {
				o.poke()
			}
		})
		defer unwatch()
		for _, uri := range o.p.uris {
			if c.s.view.hidden(srv, uri) {
				srv.log.Debug("subscriptions/listen: not subscribed: hidden from the caller", "uri", uri)
				continue
			}
			release, err := srv.catalog.SubscribeResource(c.ctx, uri)
			if err == nil {
				defer release() // even when the client is gone meanwhile
			}
			if c.ctx.Err() != nil {
				return nil, c.ctx.Err()
			}
			if err != nil {
				srv.log.Debug("subscriptions/listen: not subscribed", "uri", uri, "error", err)
				continue
			}
			o.mu.Lock()
			o.subbed[uri] = true
			o.mu.Unlock()
		}
	}
	if len(o.p.tasks) > 0 {
		who := c.s.taskCaller() // another's task is as unknown (taskowner.go)
		stop := srv.tasks.WatchAs(who, o.p.tasks, func(t *tasks.Task) {
			o.mu.Lock()
			o.tasks = dueTask(o.tasks, t)
			o.mu.Unlock()
			o.poke()
		})
		defer stop()
		// Each task's state now, first: one that has finished already
		// never changes again, and a client may rely on the stream alone.
		for _, id := range o.p.tasks {
			t, err := srv.tasks.GetAs(c.ctx, who, id)
			if err != nil {
				continue // unknown, expired, or the store failing: nothing to say
			}
			o.mu.Lock()
			if !slices.ContainsFunc(o.tasks, func(d *tasks.Task) bool { return d.ID == id }) { // a change came first: it is newer
				o.tasks = append(o.tasks, t)
			}
			o.mu.Unlock()
		}
		o.poke()
	}
	c.notify(o.acknowledgement(c.id))
	c.detached.Store(true) // a listener is not pending work: it never ends by itself
	c.s.idle()
	for {
		select {
		case <-c.ctx.Done():
			return nil, c.ctx.Err()
		case <-srv.listeners.ended:
			return nil, nil
		case <-o.wake:
			bits := o.sums.changed(srv, c.s.view.guard(), o.lists.Swap(0))
			o.mu.Lock()
			updated := o.updated.take()
			due := o.tasks
			o.tasks = nil
			o.mu.Unlock()
			for _, l := range listChanged {
				if bits&l.bit != 0 {
					c.notify(appendListenNotification(nil, l.method, c.id, ""))
				}
			}
			for _, uri := range updated {
				c.notify(appendListenNotification(nil, "notifications/resources/updated", c.id, uri))
			}
			for _, t := range due {
				c.notify(appendTaskNotification(nil, c.id, t))
			}
			c.s.idle()
		}
	}
}

// acknowledgement is notifications/subscriptions/acknowledged: every list
// kind asked, and the URIs subscribed.
func (o *listenOp) acknowledgement(id []byte) []byte {
	b := jsonrpc.AppendNotificationHead(nil, "notifications/subscriptions/acknowledged")
	b = append(b, `,"params":{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	b = append(b, `},"notifications":{`...)
	n := 0
	member := func(name string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	for _, k := range []struct {
		bit  uint32
		name string
	}{{listTools, "toolsListChanged"}, {listResources, "resourcesListChanged"}, {listPrompts, "promptsListChanged"}} {
		if o.p.lists&k.bit != 0 {
			member(k.name)
			b = append(b, "true"...)
		}
	}
	if len(o.p.tasks) > 0 {
		member("taskIds") // every one named: an unknown id is, so another caller's is too (taskowner.go)
		b = append(b, '[')
		for i, id := range o.p.tasks {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonrpc.AppendString(b, id)
		}
		b = append(b, ']')
	}
	if len(o.p.uris) > 0 {
		member("resourceSubscriptions")
		b = append(b, '[')
		i := 0
		o.mu.Lock()
		for _, uri := range o.p.uris {
			if o.subbed[uri] {
				if i > 0 {
					b = append(b, ',')
				}
				i++
				b = jsonrpc.AppendString(b, uri)
			}
		}
		o.mu.Unlock()
		b = append(b, ']')
	}
	return append(b, "}}}"...)
}

// appendListenNotification appends a notification of method sent on the
// listen stream id (with the URI for resources/updated).
func appendListenNotification(b []byte, method string, id []byte, uri string) []byte {
	b = jsonrpc.AppendNotificationHead(b, method)
	b = append(b, `,"params":{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	b = append(b, '}')
	if uri != "" {
		b = append(b, `,"uri":`...)
		b = jsonrpc.AppendString(b, uri)
	}
	return append(b, "}}"...)
}

// answer is the result that ends the stream (EndListeners): empty but
// for the subscriptionId.
func (o *listenOp) answer(b []byte, c *call, _ json.RawMessage, err error) []byte {
	if err != nil {
		if errors.Is(err, tool.ErrRefused) {
			return jsonrpc.AppendError(b, c.id, invalidParams(err))
		}
		return jsonrpc.AppendError(b, c.id, jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: subscriptions/listen: "+err.Error()))
	}
	b = jsonrpc.AppendResultHead(b, c.id)
	b = append(b, `{"resultType":"complete","_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, c.id...)
	return append(b, "}}}"...)
}

// notify writes one of the call's notifications to its stream, unless the
// call has finished.
func (c *call) notify(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.finished {
		c.s.write(c.rp.out, msg)
	}
}

// dueTask records t's state as due on a listen stream: a task's earlier
// state still due is replaced (the latest is what a client wants), but
// its place in the order is kept.
func dueTask(due []*tasks.Task, t *tasks.Task) []*tasks.Task {
	for i, d := range due {
		if d.ID == t.ID {
			due[i] = t
			return due
		}
	}
	return append(due, t)
}

// appendTaskNotification appends notifications/tasks for t on the listen
// stream id: the task as tasks/get would show it.
func appendTaskNotification(b []byte, id []byte, t *tasks.Task) []byte {
	b = jsonrpc.AppendNotificationHead(b, "notifications/tasks")
	b = append(b, `,"params":{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	b = append(b, "},"...)
	b = t.AppendWire(b, true)
	return append(b, "}}"...)
}
