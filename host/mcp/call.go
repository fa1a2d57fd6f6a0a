package mcp

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/plughost/plughost/host/mcp/wire"
	"github.com/plughost/plughost/host/tool"
)

// callTable holds a session's calls in flight, by request id, and the
// slots that bound how many run at once.
type callTable struct {
	slots chan struct{} // running tools/call slots

	mu       sync.Mutex
	inflight map[string]*call
	closed   bool
}

func newCallTable(maxInFlight int) callTable {
	return callTable{slots: make(chan struct{}, maxInFlight), inflight: make(map[string]*call)}
}

// close cancels every call in flight (they get no response) and refuses
// new ones.
func (t *callTable) close() {
	t.mu.Lock()
	t.closed = true
	for _, c := range t.inflight {
		c.cancelled = true
		c.cancel()
	}
	t.mu.Unlock()
}

// cancel cancels the call with the request id key, if it is in flight.
func (t *callTable) cancel(key string) {
	t.mu.Lock()
	if c := t.inflight[key]; c != nil {
		c.cancelled = true
		c.cancel()
	}
	t.mu.Unlock()
}

// call is a tools/call in flight: one allocation holds its state, its
// tool.Call and what its response needs.
type call struct {
	s      *Session
	ctx    context.Context
	cancel context.CancelFunc
	key    string // in the call table
	id     []byte // raw id, owned
	rp     reply  // where the response goes
	tc     tool.Call
	slot   bool // it holds one of the table's slots
	// cancelled is set, under the table's mu, when the client cancelled
	// the request or the session closed: its response is then not sent.
	cancelled bool

	mu       sync.Mutex // serializes the call's notifications
	finished bool       // the call returned: no more notifications
	token    []byte     // the progressToken; nil when none was given
	last     float64    // the last progress sent
	sentAny  bool       // whether any progress was sent
}

// callParams are the params of tools/call, aliasing the message.
type callParams struct {
	name  string
	args  []byte // nil when absent; JSON null stands for absent too
	token []byte // _meta.progressToken; nil when absent
}

func decodeCallTool(params []byte) (callParams, *wire.Error) {
	var p callParams
	var nameRaw []byte
	for k, v := range wire.Members(params) {
		switch {
		case wire.KeyIs(k, "name"):
			nameRaw = v
		case wire.KeyIs(k, "arguments"):
			p.args = v
		case wire.KeyIs(k, "_meta"):
			if !wire.IsObject(v) {
				return p, wire.NewError(wire.CodeInvalidParams, "invalid params: _meta must be an object")
			}
			p.token = wire.Member(v, "progressToken")
		}
	}
	var ok bool
	p.name, ok = wire.Unquote(nameRaw)
	switch {
	case !ok:
		return p, wire.NewError(wire.CodeInvalidParams, "invalid params: tools/call needs name, a string")
	case p.args != nil && !wire.IsObject(p.args) && string(p.args) != "null":
		// null is "no arguments" to some clients: the catalog defaults it.
		return p, wire.NewError(wire.CodeInvalidParams, "invalid params: arguments must be an object")
	case p.token != nil && !wire.ValidID(p.token):
		return p, wire.NewError(wire.CodeInvalidParams, "invalid params: progressToken must be a string or an integer")
	}
	return p, nil
}

// startCall registers a tools/call in flight and returns the function
// that runs it, or nil after answering with an error.
func (s *Session) startCall(in incoming, p callParams) func() {
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

	c := &call{s: s, key: wire.IDKey(id), id: id, rp: in.rp, token: token}
	c.ctx, c.cancel = context.WithCancel(in.ctx)
	c.tc = tool.Call{Name: p.name, Arguments: args, Log: c.log}
	if token != nil {
		c.tc.Progress = c.progress
	}
	t := &s.calls
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.cancel()
		return nil
	}
	if _, dup := t.inflight[c.key]; dup {
		t.mu.Unlock()
		c.cancel()
		s.respondError(in.rp, id, wire.NewError(wire.CodeInvalidRequest, "invalid request: request id "+string(id)+" is already in use"))
		return nil
	}
	t.inflight[c.key] = c
	s.work.Add(1)
	s.pending.Add(1)
	t.mu.Unlock()
	if starter, ok := s.srv.catalog.(CallStarter); ok && s.inline && in.rp.batch == nil {
		select {
		case t.slots <- struct{}{}:
			c.slot = true
			starter.StartCall(c.ctx, &c.tc, c.finish)
			return nil
		default: // all slots busy: a worker waits for one
		}
	}
	return c.run
}

// decodeCancelled reads the requestId of notifications/cancelled.
func decodeCancelled(params []byte) ([]byte, *wire.Error) {
	id := wire.Member(params, "requestId")
	if id == nil || !wire.ValidID(id) {
		return nil, wire.NewError(wire.CodeInvalidParams, "notifications/cancelled without a valid requestId")
	}
	return id, nil
}

// cancelled handles notifications/cancelled: the request's context ends and
// its response is suppressed. Unknown and finished ids are ignored.
func (s *Session) cancelled(id []byte) { s.calls.cancel(wire.IDKey(id)) }

// run waits for a slot, runs the call and answers it.
func (c *call) run() {
	s := c.s
	select {
	case s.calls.slots <- struct{}{}:
		c.slot = true
	default: // all slots busy: wait, unless cancelled meanwhile
		select {
		case s.calls.slots <- struct{}{}:
			c.slot = true
		case <-c.ctx.Done():
			c.finish(nil, c.ctx.Err())
			return
		}
	}
	c.finish(s.srv.catalog.CallTool(c.ctx, &c.tc))
}

// finish answers the call with what the catalog returned and retires it.
func (c *call) finish(res json.RawMessage, err error) {
	s := c.s
	defer s.work.Done()
	defer s.idle()
	if c.slot {
		<-s.calls.slots
	}
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
	s.calls.mu.Lock()
	delete(s.calls.inflight, c.key)
	cancelled := c.cancelled || c.ctx.Err() != nil
	s.calls.mu.Unlock()
	c.cancel()
	if cancelled {
		s.srv.log.Debug("call cancelled", "id", string(c.id), "tool", c.tc.Name)
		return
	}

	bp := wire.GetBuf()
	defer wire.PutBuf(bp)
	b := *bp
	switch {
	case err == nil:
		b = wire.AppendResultHead(b, c.id)
		mark := len(b)
		var ok bool
		if b, ok = wire.AppendObject(b, res); !ok {
			s.srv.log.Error("a tool returned an invalid result", "tool", c.tc.Name, "result", string(res))
			b = append(b[:mark], tool.ErrorResult("tool "+strconv.Quote(c.tc.Name)+" returned an invalid result (not a JSON object)")...)
		}
		b = append(b, '}')
	default:
		if res, rpcErr := tool.Outcome(err); rpcErr != nil {
			b = wire.AppendError(b, c.id, wire.NewError(rpcErr.Code, rpcErr.Message))
		} else {
			b = wire.AppendResult(b, c.id, res)
		}
	}
	*bp = b
	s.respond(c.rp, b)
}

// progress is the call's tool.Call.Progress: it sends
// notifications/progress, dropping values that do not increase.
func (c *call) progress(p tool.Progress) {
	if !finite(p.Progress) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || (c.sentAny && p.Progress <= c.last) {
		return
	}
	c.last, c.sentAny = p.Progress, true
	bp := wire.GetBuf()
	b := wire.AppendNotificationHead(*bp, "notifications/progress")
	b = append(b, `,"params":{"progressToken":`...)
	b = append(b, c.token...)
	b = append(b, `,"progress":`...)
	b = wire.AppendNumber(b, p.Progress)
	if p.Total != 0 && finite(p.Total) {
		b = append(b, `,"total":`...)
		b = wire.AppendNumber(b, p.Total)
	}
	if p.Message != "" && c.s.life.version.Load() != vOriginal {
		b = append(b, `,"message":`...)
		b = wire.AppendString(b, p.Message)
	}
	b = append(b, "}}"...)
	*bp = b
	c.s.write(c.rp.out, b)
	wire.PutBuf(bp)
}

// log is the call's tool.Call.Log: it sends notifications/message when the
// level passes the session's threshold.
func (c *call) log(l tool.Log) {
	lv := levelIndex(l.Level)
	if lv < 0 {
		c.s.srv.log.Warn("dropped a tool log with an unknown level", "level", l.Level)
		return
	}
	if lv < int(c.s.level.Load()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	bp := wire.GetBuf()
	defer wire.PutBuf(bp)
	b := wire.AppendNotificationHead(*bp, "notifications/message")
	b = append(b, `,"params":{"level":"`...)
	b = append(b, levels[lv]...)
	b = append(b, '"')
	if l.Logger != "" {
		b = append(b, `,"logger":`...)
		b = wire.AppendString(b, l.Logger)
	}
	b = append(b, `,"data":`...)
	if len(l.Data) == 0 {
		b = append(b, "null"...)
	} else {
		var ok bool
		if b, ok = wire.AppendJSON(b, l.Data); !ok {
			c.s.srv.log.Warn("dropped a tool log whose data is not JSON", "data", string(l.Data))
			return
		}
	}
	b = append(b, "}}"...)
	*bp = b
	c.s.write(c.rp.out, b)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
